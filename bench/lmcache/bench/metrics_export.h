// File: lmcache/bench/metrics_export.h
//
// Exports lmcache-bench results through prometheus-cpp (1.0.1). A MetricsReporter sits between
// Google Benchmark and its usual display reporter: it forwards every call (so the console, or
// --benchmark_format=json, looks as usual; the --benchmark_out file reporter is untouched) and
// turns each finished benchmark into gauges of a BenchMetrics registry. The registry then
// leaves the process in up to three ways, all optional and combinable:
//
//   - a textfile, written atomically (lmcache/core/regular_file.h write_output_file(): a
//     temporary file beside it, fsync, rename; only where a regular file or nothing is), as the
//     node_exporter textfile collector expects: a scrape never sees half a file;
//   - a push to a Pushgateway (push_to_gateway(): HTTP PUT of the whole group). The gateway
//     keeps the series until someone deletes them: delete_from_gateway(), or
//     `curl -X DELETE http://HOST:PORT/metrics/job/JOB/instance/INSTANCE`;
//   - a scrape endpoint (MetricsListener, prometheus::Exposer) that serves the registry while
//     the run goes on and for a linger time after it.
//
// Metric families (all gauges; base units; labels of BenchLabels::as_map(): suite, op, impl,
// serde, dtype, format, device, size_bytes, threads, batch, all bounded):
//   lmcache_bench_throughput_bytes_per_second{...}  Google Benchmark's bytes_per_second
//   lmcache_bench_items_per_second{...}              items_per_second (what an item is depends
//                                                    on the suite: elements, tasks, chunks, keys)
//   lmcache_bench_time_seconds{...,stat}             time per iteration, stat = real | cpu
//   lmcache_bench_roofline_ratio{...}                throughput / in-run memcpy (or device
//                                                    copy) throughput of the same traffic
//   lmcache_bench_roofline_bytes_per_second{...}     that copy's median rate (codec rows)
//   lmcache_bench_roofline_spread_ratio{...}         its relative interquartile range
//   lmcache_bench_codec_ratio{...}                   throughput / the bare serde's, same input
//   lmcache_bench_stored_ratio{...}                  bytes the storage holds per wide byte
//                                                    stored (l2 rows)
//   lmcache_bench_task_latency_seconds{...,stat}     per-task latency, stat = p50 | p99
//   lmcache_bench_build_info{version,git_sha,compiler,build_type}      1
//   lmcache_bench_machine_info{cpu_model,logical_cores,simd_target,cuda_device}  1
//   lmcache_bench_benchmarks{status}                 benchmarks finished, status = ok | error
//   lmcache_bench_last_run_timestamp_seconds         Unix time the run finished
// With --benchmark_repetitions every value is the median over the repetitions.
//
// Thread safety: BenchMetrics may be recorded into while a MetricsListener scrapes it
// (prometheus-cpp families lock internally).
#pragma once

#include <prometheus/registry.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/bench/bench_catalog.h"

namespace prometheus {
class Exposer;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace lmcache::bench {

// BuildInfo: what lmcache_bench_build_info carries.
struct BuildInfo {
  std::string version;
  std::string git_sha;
  std::string compiler;
  std::string build_type;

  // This binary's values (the git sha is the one at CMake configure time).
  static BuildInfo current();
};

// MachineInfo: what lmcache_bench_machine_info carries.
struct MachineInfo {
  std::string cpu_model = "unknown";
  std::uint64_t logical_cores = 0;
  std::string simd_target = "unknown";  // the fp8 kernels' best target on this CPU
  std::string cuda_device = "none";     // the first GPU's name, or "none"
};

// BenchResult
//
// One benchmark's figures: the median over its repetitions (error runs excluded). Optional
// figures are absent when the benchmark did not report them.
struct BenchResult {
  BenchLabels labels;
  std::size_t repetitions = 0;
  double real_time_seconds = 0;  // per iteration
  double cpu_time_seconds = 0;   // per iteration, this thread
  std::optional<double> bytes_per_second;
  std::optional<double> items_per_second;
  std::optional<double> roofline_ratio;
  std::optional<double> roofline_bytes_per_second;
  std::optional<double> roofline_spread;
  std::optional<double> codec_ratio;
  std::optional<double> stored_ratio;
  std::optional<double> latency_p50_seconds;
  std::optional<double> latency_p99_seconds;
};

// Names of the counters the suites set and the exporter reads.
inline constexpr const char* kRooflineRatioCounter = "roofline_ratio";
inline constexpr const char* kRooflineRateCounter = "roofline_bytes_per_second";
inline constexpr const char* kRooflineSpreadCounter = "roofline_spread";
inline constexpr const char* kCodecRatioCounter = "codec_ratio";
inline constexpr const char* kStoredRatioCounter = "stored_ratio";
inline constexpr const char* kLatencyP50Counter = "p50_s";
inline constexpr const char* kLatencyP99Counter = "p99_s";

// summarize_runs()
//
// The BenchResult of the iteration runs of one benchmark (aggregates and error runs are
// skipped; values are medians across repetitions). nullopt when no usable run is left.
std::optional<BenchResult> summarize_runs(
    const BenchLabels& labels, const std::vector<benchmark::BenchmarkReporter::Run>& runs);

class BenchMetrics {
 public:
  // BenchMetrics()
  //
  // A registry holding the families of the file comment; build and machine info are set now.
  BenchMetrics(const BuildInfo& build, const MachineInfo& machine);
  ~BenchMetrics();
  BenchMetrics(const BenchMetrics&) = delete;
  BenchMetrics& operator=(const BenchMetrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // record()
  //
  // Sets the gauges of `result` (a second record() of the same labels overwrites).
  void record(const BenchResult& result);

  // record_error()
  //
  // Counts one benchmark that ended in an error.
  void record_error();

  // finish()
  //
  // Stamps lmcache_bench_last_run_timestamp_seconds with `now`.
  void finish(std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

  // text()
  //
  // The registry in the Prometheus text exposition format (prometheus::TextSerializer).
  std::string text() const;

  std::size_t ok_count() const;
  std::size_t error_count() const;

 private:
  using GaugeFamily = prometheus::Family<prometheus::Gauge>;

  std::shared_ptr<prometheus::Registry> registry_;
  GaugeFamily* throughput_ = nullptr;
  GaugeFamily* items_ = nullptr;
  GaugeFamily* time_ = nullptr;
  GaugeFamily* roofline_ = nullptr;
  GaugeFamily* roofline_rate_ = nullptr;
  GaugeFamily* roofline_spread_ = nullptr;
  GaugeFamily* codec_ratio_ = nullptr;
  GaugeFamily* stored_ratio_ = nullptr;
  GaugeFamily* latency_ = nullptr;
  prometheus::Gauge* ok_ = nullptr;
  prometheus::Gauge* errors_ = nullptr;
  prometheus::Gauge* timestamp_ = nullptr;
};

// MetricsReporter
//
// A Google Benchmark display reporter that forwards to `display` (CreateDefaultDisplayReporter()
// when null) and records every finished benchmark registered through register_labeled() into
// `metrics`. Benchmarks registered some other way are forwarded but not exported.
class MetricsReporter : public benchmark::BenchmarkReporter {
 public:
  MetricsReporter(std::unique_ptr<benchmark::BenchmarkReporter> display, BenchMetrics* metrics);
  ~MetricsReporter() override;

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // Results recorded so far, in report order.
  const std::vector<BenchResult>& results() const { return results_; }
  // Names of the benchmarks that ended in an error, with the message.
  const std::vector<std::pair<std::string, std::string>>& errors() const { return errors_; }

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  BenchMetrics* metrics_;
  std::vector<BenchResult> results_;
  std::vector<std::pair<std::string, std::string>> errors_;
};

// HostPort: "host:port" split at its last ':' (IPv6 literals may be bracketed: "[::1]:9091").
struct HostPort {
  std::string host;
  std::string port;
};

// parse_host_port()
//
// Splits `text`; throws std::invalid_argument naming `text` when there is no ':', an empty
// host, or a port that is not a number in 1..65535 (0..65535 with `allow_port_zero`: "any free
// port", for listening).
HostPort parse_host_port(const std::string& text, bool allow_port_zero = false);

// push_to_gateway()
//
// Pushes (HTTP PUT: replaces the group) the registry to the Pushgateway at `host_port` under
// job `job` and the grouping labels (default: instance = this host's name). Returns the HTTP
// status (200 or 202 on success; < 0 when the connection failed). Throws
// std::invalid_argument for a bad host:port or job.
int push_to_gateway(const std::string& host_port, const std::string& job,
                    const std::shared_ptr<prometheus::Registry>& registry,
                    std::map<std::string, std::string> grouping = {});

// delete_from_gateway()
//
// Deletes the group push_to_gateway() pushed (same job and grouping labels). Returns the HTTP
// status (202 on success).
int delete_from_gateway(const std::string& host_port, const std::string& job,
                        std::map<std::string, std::string> grouping = {});

// default_grouping()
//
// {"instance": gethostname()}: the grouping push_to_gateway() uses when given none.
std::map<std::string, std::string> default_grouping();

// MetricsListener
//
// Serves `registry` at http://<addr:port>/metrics (prometheus::Exposer) from construction until
// destruction; port 0 picks a free port (see ports()). Throws std::invalid_argument for a
// malformed address, std::runtime_error naming the address when it cannot listen.
class MetricsListener {
 public:
  MetricsListener(const std::string& addr_port, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // The ports it listens on (useful when the address asked for port 0).
  std::vector<int> ports() const;

  // linger()
  //
  // Keeps serving for `seconds` (the caller's thread sleeps), so a scraper can collect the
  // final values of a run that has ended.
  void linger(double seconds) const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace lmcache::bench
