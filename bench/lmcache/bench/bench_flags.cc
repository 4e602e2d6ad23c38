#include "lmcache/bench/bench_flags.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <regex>
#include <stdexcept>

#include "lmcache/conformance/python/python_source.h"

namespace lmcache::bench {
namespace {

std::vector<std::string> split_list(std::string_view flag, std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::size_t end = comma == std::string_view::npos ? text.size() : comma;
    std::string item(text.substr(start, end - start));
    if (item.empty()) {
      throw std::invalid_argument(std::string(flag) + ": empty entry in '" + std::string(text) +
                                  "'");
    }
    out.push_back(std::move(item));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::uint64_t parse_count(std::string_view flag, const std::string& text, std::uint64_t max) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || *end != '\0' ||
      errno != 0 || v == 0 || v > max) {
    throw std::invalid_argument(std::string(flag) + ": expected an integer in [1, " +
                                std::to_string(max) + "], got '" + text + "'");
  }
  return v;
}

}  // namespace

std::string benchmark_filter_problem(const std::string& filter) {
  // Google Benchmark 1.7: a leading '-' negates the rest; it compiles the rest as a POSIX
  // extended regular expression with std::regex.
  const std::string spec = !filter.empty() && filter[0] == '-' ? filter.substr(1) : filter;
  try {
    std::regex re(spec, std::regex_constants::extended);
  } catch (const std::regex_error& e) {
    return std::string("not a valid regular expression (POSIX extended): ") + e.what();
  }
  return {};
}

std::uint64_t parse_size(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string suffix;
  for (char c : text.substr(digits)) suffix += static_cast<char>(std::tolower(c));
  static const std::map<std::string, std::uint64_t> kMultipliers = {
      {"", 1},           {"b", 1},
      {"k", 1ull << 10}, {"kib", 1ull << 10},
      {"m", 1ull << 20}, {"mib", 1ull << 20},
      {"g", 1ull << 30}, {"gib", 1ull << 30}};
  auto it = kMultipliers.find(suffix);
  if (digits == 0 || digits > 12 || it == kMultipliers.end()) {
    throw std::invalid_argument("bad size '" + std::string(text) +
                                "' (examples: 4096, 4KiB, 1MiB, 2GiB)");
  }
  // At most 12 digits: the number fits; compared before it is multiplied, so nothing wraps.
  const std::uint64_t n = std::stoull(std::string(text.substr(0, digits)));
  if (n == 0 || n > kMaxSizeBytes / it->second) {
    throw std::invalid_argument("size must be in [1 B, " + format_size(kMaxSizeBytes) + "], got '" +
                                std::string(text) + "'");
  }
  return n * it->second;
}

std::string format_size(std::uint64_t bytes) {
  if (bytes != 0 && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
  if (bytes != 0 && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
  if (bytes != 0 && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "KiB";
  return std::to_string(bytes) + "B";
}

bool BenchFlags::passthrough_has(std::string_view name) const {
  const std::string flag = "--" + std::string(name);
  for (std::size_t i = 1; i < passthrough.size(); ++i) {
    const std::string& a = passthrough[i];
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  }
  return false;
}

BenchFlags parse_bench_flags(int argc, const char* const* argv) {
  BenchFlags f;
  f.passthrough.emplace_back(argc > 0 ? argv[0] : "lmcache-bench");

  using Setter = std::function<void(const std::string& flag, const std::string& value)>;
  const std::map<std::string, Setter> valued = {
      {"--out", [&](auto&, auto& v) { f.out_dir = v; }},
      {"--metrics-textfile", [&](auto&, auto& v) { f.metrics_textfile = v; }},
      {"--push-gateway", [&](auto&, auto& v) { f.push_gateway = v; }},
      {"--push-job", [&](auto&, auto& v) { f.push_job = v; }},
      {"--metrics-listen", [&](auto&, auto& v) { f.metrics_listen = v; }},
      {"--metrics-linger",
       [&](auto& flag, auto& v) {
         char* end = nullptr;
         const double d = std::strtod(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !(d >= 0) || d > 86400) {
           throw std::invalid_argument(flag + ": expected seconds in [0, 86400], got '" + v + "'");
         }
         f.metrics_linger_seconds = d;
       }},
      {"--plugin", [&](auto&, auto& v) { f.plugins.push_back(v); }},
      // A Python serde or processor (docs/python.md), loaded like a plugin.
      {"--python",
       [&](auto&, auto& v) {
         f.plugins.push_back(std::string(conformance::python::kPythonSourcePrefix) + v);
       }},
      {"--connector-plugin", [&](auto&, auto& v) { f.connector_plugin = v; }},
      {"--device",
       [&](auto& flag, auto& v) {
         if (v != "cpu" && v != "cuda" && v != "all") {
           throw std::invalid_argument(flag + ": expected cpu, cuda or all, got '" + v + "'");
         }
         f.device = v;
       }},
      {"--threads",
       [&](auto& flag, auto& v) {
         f.threads.clear();
         for (const auto& s : split_list(flag, v)) {
           f.threads.push_back(parse_count(flag, s, kMaxThreads));
         }
       }},
      {"--sizes",
       [&](auto& flag, auto& v) {
         f.sizes.clear();
         for (const auto& s : split_list(flag, v)) {
           try {
             f.sizes.push_back(parse_size(s));
           } catch (const std::invalid_argument& e) {
             throw std::invalid_argument(flag + ": " + e.what());
           }
         }
       }},
      {"--batches",
       [&](auto& flag, auto& v) {
         f.batches.clear();
         for (const auto& s : split_list(flag, v)) {
           f.batches.push_back(parse_count(flag, s, kMaxBatch));
         }
       }},
      {"--caller-spin-us",
       [&](auto& flag, auto& v) {
         char* end = nullptr;
         const unsigned long us = std::strtoul(v.c_str(), &end, 10);
         if (v.empty() || *end != '\0' || v[0] == '-' || us > 10000) {
           throw std::invalid_argument(flag + ": expected microseconds in [0, 10000], got '" + v +
                                       "'");
         }
         f.caller_spin_us = static_cast<std::uint32_t>(us);
       }},
      {"--filter",
       [&](auto& flag, auto& v) {
         if (std::string why = benchmark_filter_problem(v); !why.empty()) {
           throw std::invalid_argument(flag + " '" + v + "': " + why);
         }
         f.filter = v;
       }},
  };

  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      f.help = true;
      continue;
    }
    if (arg == "--quick") {
      f.quick = true;
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    auto it = valued.find(name);
    if (it == valued.end()) {
      f.passthrough.push_back(arg);  // a Google Benchmark flag, checked by benchmark::Initialize
      continue;
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw std::invalid_argument(name + " needs a value");
    }
    it->second(name, value);
  }
  return f;
}

std::string bench_flags_help() {
  return R"(lmcache-bench: benchmarks of the LMCache serde stack, exported as Prometheus metrics.

Usage: lmcache-bench [flags] [--benchmark_* flags]

Flags (value as the next argument or after '='):
  --help, -h               This text, then Google Benchmark's flags.
  --quick                  Small sizes and --benchmark_min_time=0.01 (unless given): the
                           smoke run of the main job, well under 3 minutes on 2 cores.
  --out DIR                Output directory (default build/bench-results, relative to the
                           working directory): lmcache-bench.json (Google Benchmark JSON,
                           unless --benchmark_out is given), system.json, metrics.prom.
  --metrics-textfile PATH  Prometheus textfile (default DIR/metrics.prom; "none" to skip).
                           Written atomically (a temporary file beside it, fsync, rename),
                           as the node_exporter textfile collector expects. Like every
                           output file, only where a regular file or nothing is: a
                           directory, device, FIFO or symbolic link there is refused
                           (exit 2, before any benchmark runs).
  --push-gateway HOST:PORT Push the metrics to a Pushgateway after the run (HTTP PUT of the
                           group job=JOB, instance=<hostname>). Series stay there until
                           deleted (see bench/README.md).
  --push-job NAME          The Pushgateway job (default lmcache_bench).
  --metrics-listen ADDR:PORT
                           Serve /metrics on ADDR:PORT during the run (values appear as
                           benchmarks finish) ...
  --metrics-linger SECONDS ... and for SECONDS after it (default 0), for a last scrape.
  --plugin FILE.so         Load a conformance plugin (lmcache_conformance_plugin_v2) and
                           benchmark its serdes and processors beside the reference ones.
                           Repeatable.
  --python MODULE:FACTORY  A Python serde or processor written to LMCache's Python interfaces
                           (as lmcache-conform --python, docs/python.md): its rows beside the
                           C++ reference's give the cost of Python. Repeatable.
  --connector-plugin FILE.so
                           Load a native connector plugin (LMCACHE_CONFORMANCE_CONNECTOR) and
                           add l2/ rows for its connector (the bridge, raw and through fp8)
                           beside resp and fs; impl is the connector's name.
  --device cpu|cuda|all    Codec devices (default all: cpu, plus cuda when a GPU is usable).
  --threads LIST           Threads per codec call / processor workers, each in [1, 1024],
                           e.g. 1,2 (default: 1 and the number of CPUs; --quick: 1).
  --sizes LIST             Object sizes for the codec, serde, wrapper and l1 suites, each in
                           [1 B, 64GiB], e.g. 4KiB,1MiB,256MiB (default: per suite, see
                           bench/README.md).
  --batches LIST           Objects per task for the wrapper and l1 suites, each in
                           [1, 4096] (default 1,8,64; --quick: 1,8).
  --caller-spin-us N       The most the wrapper and l2 rows' caller, one task at a time,
                           re-checks the completion fd before it sleeps in poll(), while
                           spinning pays (default 0: it sleeps at once). Each row reports
                           the time spent so (caller_spin_s per task): the CPU it costs.
  --filter REGEX           Only benchmarks whose name matches (--benchmark_filter: a POSIX
                           extended regular expression, '-' first to negate). Names start
                           with the suite: codec/, roofline/, processor/, wrapper/, l1/,
                           serde/. A filter that does not compile, or that matches no
                           benchmark, is a usage error (exit 2).

Every other argument goes to Google Benchmark; its flags follow.
)";
}

}  // namespace lmcache::bench
