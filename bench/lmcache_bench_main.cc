// lmcache-bench: the benchmark binary (see bench/README.md and lmcache/bench/suites.h).
//
// Order of work: own flags -> conformance registry (reference implementations + --plugin) ->
// programmatic registration of the suites -> benchmark::Initialize on the remaining arguments
// -> run with a MetricsReporter in front of the usual display reporter -> export (textfile,
// Pushgateway, linger for scrapers).
//
// Exit status: 0 when every benchmark ran; 1 when one ended in an error or an output or export
// failed; 2 for a command-line or plugin error: a value out of its range, a filter that does not
// compile or matches no benchmark, an output path that is not a regular file or nothing
// (lmcache/core/regular_file.h; checked before anything runs). No exception's raw text reaches
// the user (cli_support.h guarded_main()).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/bench_flags.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/plugin_loader.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/core/regular_file.h"
#include "lmcache/devices/device_info.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"
#include "tools/plugin_loader.h"

namespace {

namespace lb = lmcache::bench;

// The value of a pass-through "--<name>=VALUE" argument (Google Benchmark takes only that form),
// the last one given.
std::optional<std::string> passthrough_value(const lb::BenchFlags& f, const std::string& name) {
  std::optional<std::string> out;
  const std::string prefix = "--" + name + "=";
  for (std::size_t i = 1; i < f.passthrough.size(); ++i) {
    if (f.passthrough[i].rfind(prefix, 0) == 0) out = f.passthrough[i].substr(prefix.size());
  }
  return out;
}

// The Google Benchmark JSON: --benchmark_out=PATH if given, else DIR/lmcache-bench.json.
std::string benchmark_json_path(const lb::BenchFlags& f) {
  return passthrough_value(f, "benchmark_out")
      .value_or((std::filesystem::path(f.out_dir) / "lmcache-bench.json").string());
}

// Google Benchmark's arguments: the pass-through ones plus the defaults lmcache-bench sets
// (each only when the user did not set it). Google Benchmark writes its JSON into
// `json_temp`, the temporary file of the output file (lmcache/core/regular_file.h OutputFile)
// that replaces benchmark_json_path() once the run is over.
std::vector<std::string> benchmark_args(const lb::BenchFlags& f, const std::string& json_temp) {
  std::vector<std::string> args;
  for (const std::string& a : f.passthrough) {
    if (a.rfind("--benchmark_out=", 0) != 0) args.push_back(a);
  }
  if (!f.filter.empty() && !f.passthrough_has("benchmark_filter")) {
    args.push_back("--benchmark_filter=" + f.filter);
  }
  if (!f.passthrough_has("benchmark_min_time")) {
    // 1.7.1 takes a bare number of seconds.
    args.push_back(f.quick ? "--benchmark_min_time=0.01" : "--benchmark_min_time=0.2");
  }
  args.push_back("--benchmark_out=" + json_temp);
  if (!f.passthrough_has("benchmark_out_format")) args.push_back("--benchmark_out_format=json");
  return args;
}

lb::MachineInfo machine_info(const lmcache::devices::DeviceInfo& info) {
  lb::MachineInfo m;
  m.cpu_model = info.cpu.model;
  m.logical_cores = info.cpu.logical_cores;
  m.simd_target = info.cpu.simd_best.empty() ? "unknown" : info.cpu.simd_best;
  m.cuda_device =
      info.cuda.available && !info.cuda.gpus.empty() ? info.cuda.gpus.front().name : "none";
  return m;
}

void write_system_json(const std::string& out_dir, const lb::BuildInfo& build,
                       const lb::BenchFlags& f) {
  nlohmann::json j = lmcache::devices::device_info_json();
  j["build"] = {{"version", build.version},
                {"git_sha", build.git_sha},
                {"compiler", build.compiler},
                {"build_type", build.build_type}};
  j["quick"] = f.quick;
  j["device_flag"] = f.device;
  j["caller_spin_us"] = f.caller_spin_us;
  j["plugins"] = f.plugins;
  j["connector_plugin"] = f.connector_plugin;
  lmcache::write_output_file((std::filesystem::path(out_dir) / "system.json").string(),
                             j.dump(2) + "\n");
}

int run(int argc, char** argv) {
  lb::BenchFlags flags;
  try {
    flags = lb::parse_bench_flags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lmcache-bench: %s (see --help)\n", e.what());
    return 2;
  }
  if (flags.help) {
    std::fputs(lb::bench_flags_help().c_str(), stdout);
    std::fflush(stdout);
    benchmark::PrintDefaultHelp();
    return 0;
  }

  const bool cuda_usable = lmcache::fp8::fp8_cuda_available();
  if (flags.device == "cuda" && !cuda_usable) {
    std::fprintf(stderr, "lmcache-bench: --device cuda: %s\n",
                 lmcache::fp8::fp8_cuda_unavailable_reason().c_str());
    return 2;
  }

  // The reference serdes and processors, then the plugins', through the conformance ABI.
  lmcache::conformance::Registry registry;
  lb::add_reference_descriptors(registry);  // fp8, checksum, aesgcm, fp8 -> checksum, encrypt, lmcr
  lb::add_fp8_simd_descriptors(registry);   // the fp8 serde pinned to the SIMD kernels
  for (const std::string& path : flags.plugins) {
    try {
      const std::size_t n = lb::load_conformance_plugin(path, registry);
      std::fprintf(stderr, "lmcache-bench: plugin %s registered %zu implementation(s)\n",
                   path.c_str(), n);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lmcache-bench: %s\n", e.what());
      return 2;
    }
  }

  lb::SuiteConfig suite;
  if (!flags.connector_plugin.empty()) {
    // The connector's l2/ rows: the bridge over it, an L2 adapter type of this process.
    suite.l2_plugin_type = "connector-plugin";
    // The server the resp and redis-benchmark rows use, for a factory that connects to Redis:
    // its rows are then measured on the same server (bench/README.md).
    try {
      const auto [host, port] = lb::bench_redis_endpoint();
      ::setenv("LMCACHE_BENCH_REDIS_HOST", host.c_str(), 1);
      ::setenv("LMCACHE_BENCH_REDIS_PORT", std::to_string(port).c_str(), 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lmcache-bench: no redis-server for the connector plugin: %s\n",
                   e.what());
    }
    const std::string error = lmcache::conformance::tools::register_connector_plugin_adapter_type(
        flags.connector_plugin, suite.l2_plugin_type, &suite.l2_plugin_impl);
    if (!error.empty()) {
      std::fprintf(stderr, "lmcache-bench: --connector-plugin: %s\n", error.c_str());
      return 2;
    }
    std::fprintf(stderr, "lmcache-bench: connector plugin %s: l2/ rows with impl %s\n",
                 flags.connector_plugin.c_str(), suite.l2_plugin_impl.c_str());
  }
  suite.quick = flags.quick;
  suite.cpu = flags.device != "cuda";
  suite.cuda = flags.device != "cpu" && cuda_usable;
  suite.threads = flags.threads;
  suite.sizes = flags.sizes;
  suite.batches = flags.batches;
  lb::set_caller_spin(std::chrono::microseconds(flags.caller_spin_us));
  try {
    if (suite.cpu || suite.cuda) lb::register_codec_suite(suite);
    if (suite.cpu) {
      lb::register_processor_suite(suite);
      lb::register_wrapper_suite(suite);
      lb::register_l2_suite(suite);
      lb::register_l1_suite(suite);
      lb::register_serde_suite(suite, registry);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lmcache-bench: %s\n", e.what());
    return 2;
  }

  std::error_code ec;
  std::filesystem::create_directories(flags.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "lmcache-bench: cannot create --out %s: %s\n", flags.out_dir.c_str(),
                 ec.message().c_str());
    return 2;
  }
  // Every output is checked before anything runs: a regular file or nothing, in a directory.
  const std::string textfile =
      flags.metrics_textfile.empty()
          ? (std::filesystem::path(flags.out_dir) / "metrics.prom").string()
          : flags.metrics_textfile;
  const std::string json_path = benchmark_json_path(flags);
  const std::string system_json = (std::filesystem::path(flags.out_dir) / "system.json").string();
  std::optional<lmcache::OutputFile> json_out;
  try {
    if (textfile != "none") {
      try {
        lmcache::check_output_path(textfile);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--metrics-textfile: ") + e.what());
      }
    }
    try {
      lmcache::check_output_path(system_json);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--out: ") + e.what());
    }
    try {
      json_out.emplace(json_path);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(
          std::string(passthrough_value(flags, "benchmark_out") ? "--benchmark_out: " : "--out: ") +
          e.what());
    }
    if (std::optional<std::string> filter = passthrough_value(flags, "benchmark_filter")) {
      if (std::string why = lb::benchmark_filter_problem(*filter); !why.empty()) {
        throw std::invalid_argument("--benchmark_filter '" + *filter + "': " + why);
      }
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "lmcache-bench: %s\n", e.what());
    return 2;
  }

  std::vector<std::string> args = benchmark_args(flags, json_out->temp_path());
  std::vector<char*> bargv;
  for (std::string& a : args) bargv.push_back(a.data());
  bargv.push_back(nullptr);
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, bargv.data());
  if (benchmark::ReportUnrecognizedArguments(bargc, bargv.data())) return 2;

  const lb::BuildInfo build = lb::BuildInfo::current();
  const lmcache::devices::DeviceInfo info = lmcache::devices::device_info();
  const lb::MachineInfo machine = machine_info(info);
  benchmark::AddCustomContext("lmcache_version", build.version);
  benchmark::AddCustomContext("lmcache_git_sha", build.git_sha);
  benchmark::AddCustomContext("lmcache_build_type", build.build_type);
  benchmark::AddCustomContext("compiler", build.compiler);
  benchmark::AddCustomContext("cpu_model", machine.cpu_model);
  benchmark::AddCustomContext("simd_target", machine.simd_target);
  benchmark::AddCustomContext("cuda_device", machine.cuda_device);
  benchmark::AddCustomContext("lmcache_bench_quick", flags.quick ? "true" : "false");
  benchmark::AddCustomContext("lmcache_bench_caller_spin_us", std::to_string(flags.caller_spin_us));

  lb::BenchMetrics metrics(build, machine);
  std::unique_ptr<lb::MetricsListener> listener;
  if (!flags.metrics_listen.empty()) {
    try {
      listener = std::make_unique<lb::MetricsListener>(flags.metrics_listen, metrics.registry());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lmcache-bench: --metrics-listen: %s\n", e.what());
      return 2;
    }
    std::fprintf(stderr, "lmcache-bench: serving http://%s/metrics\n",
                 flags.metrics_listen.c_str());
  }

  lb::MetricsReporter reporter(nullptr, &metrics);
  const std::size_t matched = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  metrics.finish();
  if (matched == 0) {
    // Nothing is written: json_out's temporary file goes with it.
    const std::optional<std::string> filter = passthrough_value(flags, "benchmark_filter");
    if (filter || !flags.filter.empty()) {
      std::fprintf(stderr, "lmcache-bench: no benchmark matches %s '%s'\n",
                   filter ? "--benchmark_filter" : "--filter",
                   filter ? filter->c_str() : flags.filter.c_str());
    } else {
      std::fprintf(stderr, "lmcache-bench: no benchmark to run (see --device)\n");
    }
    return 2;
  }

  int status = 0;
  for (const auto& [name, message] : reporter.errors()) {
    std::fprintf(stderr, "lmcache-bench: ERROR %s: %s\n", name.c_str(), message.c_str());
    status = 1;
  }

  try {
    json_out->commit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lmcache-bench: cannot write the benchmark JSON: %s\n", e.what());
    status = 1;
  }
  try {
    write_system_json(flags.out_dir, build, flags);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lmcache-bench: cannot write system.json: %s\n", e.what());
    status = 1;
  }
  if (textfile != "none") {
    try {
      lmcache::write_output_file(textfile, metrics.text());
      std::fprintf(stderr, "lmcache-bench: metrics written to %s\n", textfile.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lmcache-bench: --metrics-textfile: %s\n", e.what());
      status = 1;
    }
  }
  if (!flags.push_gateway.empty()) {
    try {
      const int code = lb::push_to_gateway(flags.push_gateway, flags.push_job, metrics.registry());
      if (code < 200 || code >= 300) {
        std::fprintf(stderr, "lmcache-bench: push to %s failed (HTTP status %d)\n",
                     flags.push_gateway.c_str(), code);
        status = 1;
      } else {
        std::fprintf(stderr, "lmcache-bench: pushed to %s job=%s (HTTP %d)\n",
                     flags.push_gateway.c_str(), flags.push_job.c_str(), code);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lmcache-bench: --push-gateway: %s\n", e.what());
      status = 1;
    }
  }
  std::fprintf(stderr, "lmcache-bench: %zu benchmark(s) ok, %zu error(s)\n", metrics.ok_count(),
               metrics.error_count());
  if (listener) {
    std::fprintf(stderr, "lmcache-bench: lingering %.1f s for scrapers\n",
                 flags.metrics_linger_seconds);
    listener->linger(flags.metrics_linger_seconds);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  return lmcache::cli::guarded_main("lmcache-bench", [&] { return run(argc, argv); });
}
