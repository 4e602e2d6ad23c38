// File: lmcache/bench/bench_flags.h
//
// lmcache-bench's own command line. Its flags are parsed first; everything else (the
// --benchmark_* flags, --v) is passed on to benchmark::Initialize untouched. Flags take their
// value either as the next argument or after '=' (--sizes 4KiB,1MiB or --sizes=4KiB,1MiB).
// bench_flags_help() documents every flag; `lmcache-bench --help` prints it followed by Google
// Benchmark's own flag list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lmcache::bench {

struct BenchFlags {
  bool help = false;
  // Small sizes and a short minimum time: the main job's smoke run (< 3 minutes on 2 cores).
  bool quick = false;
  // Where the Google Benchmark JSON (lmcache-bench.json), system.json and, by default, the
  // metrics textfile go. Relative to the working directory.
  std::string out_dir = "build/bench-results";
  // The Prometheus textfile; empty means <out_dir>/metrics.prom; "none" disables it.
  std::string metrics_textfile;
  // host:port of a Pushgateway to push to after the run (empty: no push), and the job name.
  std::string push_gateway;
  std::string push_job = "lmcache_bench";
  // addr:port to serve /metrics on during the run, and seconds to keep serving after it.
  std::string metrics_listen;
  double metrics_linger_seconds = 0;
  // Conformance plugins (.so) whose serdes and processors are benchmarked too.
  std::vector<std::string> plugins;
  // A native connector plugin (LMCACHE_CONFORMANCE_CONNECTOR) whose connector gets l2/ rows
  // beside resp and fs; empty: none.
  std::string connector_plugin;
  // cpu, cuda or all (cpu, plus cuda when a GPU is usable).
  std::string device = "all";
  // Thread counts (codec kernels) / worker counts (processor); empty: the suites' defaults.
  std::vector<std::size_t> threads;
  // Object sizes in bytes for every size-parameterised suite; empty: the suites' defaults.
  std::vector<std::uint64_t> sizes;
  // Batch sizes for the wrapper and L1 suites; empty: the suites' defaults.
  std::vector<std::size_t> batches;
  // The most the wrapper and L2 rows' caller re-checks a completion fd before it sleeps, in µs
  // (workloads.h set_caller_spin(); 0, the default: it sleeps at once).
  std::uint32_t caller_spin_us = 0;
  // A regular expression over benchmark names (--benchmark_filter).
  std::string filter;
  // argv[0] followed by every argument lmcache-bench does not own, in order.
  std::vector<std::string> passthrough;

  // True when the argument list already sets --<name> (as --name=... or --name ...).
  bool passthrough_has(std::string_view name) const;
};

// The largest entries of --threads, --batches and --sizes.
inline constexpr std::uint64_t kMaxThreads = 1024;
inline constexpr std::uint64_t kMaxBatch = 4096;
inline constexpr std::uint64_t kMaxSizeBytes = std::uint64_t{64} << 30;

// parse_bench_flags()
//
// Parses argv. Throws std::invalid_argument naming the flag for a missing or malformed value,
// an unknown --device, a list with an empty entry or one out of its range (--threads in
// [1, kMaxThreads], --batches in [1, kMaxBatch], --sizes in [1, kMaxSizeBytes]), or a --filter
// that is no regular expression (benchmark_filter_problem()).
BenchFlags parse_bench_flags(int argc, const char* const* argv);

// benchmark_filter_problem()
//
// Empty when Google Benchmark can use `filter` as --benchmark_filter (a POSIX extended regular
// expression, after an optional leading '-' that negates it); otherwise why not.
std::string benchmark_filter_problem(const std::string& filter);
// bench_flags_help()
//
// The usage text of lmcache-bench's own flags.
std::string bench_flags_help();

// parse_size()
//
// "4096", "4K", "4KiB", "1M", "1MiB", "2G", "2GiB" (binary multiples; case-insensitive) in
// bytes. Throws std::invalid_argument naming the text for anything else, 0 or more than
// kMaxSizeBytes.
std::uint64_t parse_size(std::string_view text);

// format_size()
//
// The shortest exact binary form: 4096 -> "4KiB", 1048576 -> "1MiB", 1000 -> "1000B".
std::string format_size(std::uint64_t bytes);

}  // namespace lmcache::bench
