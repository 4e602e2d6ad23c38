#include "lmcache/bench/metrics_export.h"

#include <fcntl.h>
#include <prometheus/exposer.h>
#include <prometheus/family.h>
#include <prometheus/gateway.h>
#include <prometheus/gauge.h>
#include <prometheus/text_serializer.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "lmcache/bench/build_info.h"

namespace lmcache::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::optional<double> median_counter(
    const std::vector<const benchmark::BenchmarkReporter::Run*>& runs, const char* name) {
  std::vector<double> values;
  for (const auto* r : runs) {
    auto it = r->counters.find(name);
    if (it != r->counters.end()) values.push_back(it->second.value);
  }
  if (values.empty()) return std::nullopt;
  return median(std::move(values));
}

prometheus::Labels to_labels(const BenchLabels& l) {
  const auto m = l.as_map();
  return prometheus::Labels(m.begin(), m.end());
}

prometheus::Labels with(prometheus::Labels labels, const std::string& key,
                        const std::string& value) {
  labels[key] = value;
  return labels;
}

}  // namespace

BuildInfo BuildInfo::current() {
  return {LMCACHE_BENCH_VERSION, LMCACHE_BENCH_GIT_SHA, LMCACHE_BENCH_COMPILER,
          LMCACHE_BENCH_BUILD_TYPE};
}

std::optional<BenchResult> summarize_runs(
    const BenchLabels& labels, const std::vector<benchmark::BenchmarkReporter::Run>& runs) {
  std::vector<const benchmark::BenchmarkReporter::Run*> usable;
  for (const auto& r : runs) {
    if (r.run_type != benchmark::BenchmarkReporter::Run::RT_Iteration || r.error_occurred ||
        r.iterations <= 0) {
      continue;
    }
    usable.push_back(&r);
  }
  if (usable.empty()) return std::nullopt;
  BenchResult out;
  out.labels = labels;
  out.repetitions = usable.size();
  std::vector<double> real;
  std::vector<double> cpu;
  for (const auto* r : usable) {
    // Accumulated times are in seconds whatever the display unit.
    real.push_back(r->real_accumulated_time / static_cast<double>(r->iterations));
    cpu.push_back(r->cpu_accumulated_time / static_cast<double>(r->iterations));
  }
  out.real_time_seconds = median(std::move(real));
  out.cpu_time_seconds = median(std::move(cpu));
  out.bytes_per_second = median_counter(usable, "bytes_per_second");
  out.items_per_second = median_counter(usable, "items_per_second");
  out.roofline_ratio = median_counter(usable, kRooflineRatioCounter);
  out.roofline_bytes_per_second = median_counter(usable, kRooflineRateCounter);
  out.roofline_spread = median_counter(usable, kRooflineSpreadCounter);
  out.codec_ratio = median_counter(usable, kCodecRatioCounter);
  out.stored_ratio = median_counter(usable, kStoredRatioCounter);
  out.latency_p50_seconds = median_counter(usable, kLatencyP50Counter);
  out.latency_p99_seconds = median_counter(usable, kLatencyP99Counter);
  return out;
}

// ---------------------------------------------------------------------------------------------
// BenchMetrics

BenchMetrics::BenchMetrics(const BuildInfo& build, const MachineInfo& machine)
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  throughput_ = &prometheus::BuildGauge()
                     .Name("lmcache_bench_throughput_bytes_per_second")
                     .Help(
                         "Benchmark throughput in bytes per second (codec: bytes read + "
                         "written; KV paths: bytes of the wide objects), median over "
                         "repetitions.")
                     .Register(r);
  items_ = &prometheus::BuildGauge()
                .Name("lmcache_bench_items_per_second")
                .Help(
                    "Benchmark items per second (codec: elements; processor: tasks; wrapper: "
                    "chunks; l1: keys), median over repetitions.")
                .Register(r);
  time_ = &prometheus::BuildGauge()
               .Name("lmcache_bench_time_seconds")
               .Help(
                   "Time per benchmark iteration in seconds, stat=real (wall) or cpu (the "
                   "benchmark thread), median over repetitions.")
               .Register(r);
  roofline_ = &prometheus::BuildGauge()
                   .Name("lmcache_bench_roofline_ratio")
                   .Help(
                       "Throughput divided by the in-run memcpy (CPU) or device-to-device copy "
                       "(GPU) throughput of the same bytes read + written and threads.")
                   .Register(r);
  roofline_rate_ = &prometheus::BuildGauge()
                        .Name("lmcache_bench_roofline_bytes_per_second")
                        .Help(
                            "The roofline of a codec row: median bytes read + written per "
                            "second of the in-run copy of the same traffic, on the row's "
                            "buffers and threads.")
                        .Register(r);
  roofline_spread_ = &prometheus::BuildGauge()
                          .Name("lmcache_bench_roofline_spread_ratio")
                          .Help(
                              "Relative interquartile range of the roofline copy's samples, "
                              "(q3 - q1) / median: how far lmcache_bench_roofline_ratio can "
                              "be trusted.")
                          .Register(r);
  codec_ratio_ = &prometheus::BuildGauge()
                      .Name("lmcache_bench_codec_ratio")
                      .Help(
                          "Throughput divided by the bare serde's (direct serialize / "
                          "deserialize calls on the same objects), measured in the same run.")
                      .Register(r);
  stored_ratio_ = &prometheus::BuildGauge()
                       .Name("lmcache_bench_stored_ratio")
                       .Help(
                           "Bytes the L2 storage holds per wide (unquantised) byte stored: 1 "
                           "raw, about 0.5 for bfloat16 through fp8.")
                       .Register(r);
  latency_ = &prometheus::BuildGauge()
                  .Name("lmcache_bench_task_latency_seconds")
                  .Help("Per-task latency from submit to result in seconds, stat=p50 or p99.")
                  .Register(r);
  prometheus::BuildGauge()
      .Name("lmcache_bench_build_info")
      .Help("Build of the lmcache-bench binary that produced these metrics; always 1.")
      .Register(r)
      .Add({{"version", build.version},
            {"git_sha", build.git_sha},
            {"compiler", build.compiler},
            {"build_type", build.build_type}})
      .Set(1);
  prometheus::BuildGauge()
      .Name("lmcache_bench_machine_info")
      .Help("The machine the benchmarks ran on; always 1.")
      .Register(r)
      .Add({{"cpu_model", machine.cpu_model},
            {"logical_cores", std::to_string(machine.logical_cores)},
            {"simd_target", machine.simd_target},
            {"cuda_device", machine.cuda_device}})
      .Set(1);
  auto& count = prometheus::BuildGauge()
                    .Name("lmcache_bench_benchmarks")
                    .Help("Benchmarks finished in this run, by status (ok or error).")
                    .Register(r);
  ok_ = &count.Add({{"status", "ok"}});
  errors_ = &count.Add({{"status", "error"}});
  timestamp_ = &prometheus::BuildGauge()
                    .Name("lmcache_bench_last_run_timestamp_seconds")
                    .Help("Unix time at which this benchmark run finished (0 while running).")
                    .Register(r)
                    .Add({});
}

BenchMetrics::~BenchMetrics() = default;

void BenchMetrics::record(const BenchResult& result) {
  const prometheus::Labels labels = to_labels(result.labels);
  time_->Add(with(labels, "stat", "real")).Set(result.real_time_seconds);
  time_->Add(with(labels, "stat", "cpu")).Set(result.cpu_time_seconds);
  if (result.bytes_per_second) throughput_->Add(labels).Set(*result.bytes_per_second);
  if (result.items_per_second) items_->Add(labels).Set(*result.items_per_second);
  if (result.roofline_ratio) roofline_->Add(labels).Set(*result.roofline_ratio);
  if (result.roofline_bytes_per_second) {
    roofline_rate_->Add(labels).Set(*result.roofline_bytes_per_second);
  }
  if (result.roofline_spread) roofline_spread_->Add(labels).Set(*result.roofline_spread);
  if (result.codec_ratio) codec_ratio_->Add(labels).Set(*result.codec_ratio);
  if (result.stored_ratio) stored_ratio_->Add(labels).Set(*result.stored_ratio);
  if (result.latency_p50_seconds) {
    latency_->Add(with(labels, "stat", "p50")).Set(*result.latency_p50_seconds);
  }
  if (result.latency_p99_seconds) {
    latency_->Add(with(labels, "stat", "p99")).Set(*result.latency_p99_seconds);
  }
  ok_->Increment();
}

void BenchMetrics::record_error() { errors_->Increment(); }

void BenchMetrics::finish(std::chrono::system_clock::time_point now) {
  timestamp_->Set(std::chrono::duration<double>(now.time_since_epoch()).count());
}

std::string BenchMetrics::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

std::size_t BenchMetrics::ok_count() const { return static_cast<std::size_t>(ok_->Value()); }
std::size_t BenchMetrics::error_count() const { return static_cast<std::size_t>(errors_->Value()); }

// ---------------------------------------------------------------------------------------------
// MetricsReporter

MetricsReporter::MetricsReporter(std::unique_ptr<benchmark::BenchmarkReporter> display,
                                 BenchMetrics* metrics)
    : display_(display ? std::move(display)
                       : std::unique_ptr<benchmark::BenchmarkReporter>(
                             benchmark::CreateDefaultDisplayReporter())),
      metrics_(metrics) {}

MetricsReporter::~MetricsReporter() = default;

bool MetricsReporter::ReportContext(const Context& context) {
  display_->SetOutputStream(&GetOutputStream());
  display_->SetErrorStream(&GetErrorStream());
  return display_->ReportContext(context);
}

void MetricsReporter::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  // One call normally carries one benchmark (its repetitions and aggregates); group by name
  // anyway so that nothing depends on it.
  std::map<std::string, std::vector<Run>> by_name;
  for (const Run& r : runs) {
    const std::string name = base_benchmark_name(r.run_name.function_name);
    if (r.error_occurred) {
      errors_.emplace_back(name, r.error_message);
      if (metrics_ != nullptr) metrics_->record_error();
      continue;
    }
    by_name[name].push_back(r);
  }
  for (const auto& [name, group] : by_name) {
    const std::optional<BenchLabels> labels = find_labels(name);
    if (!labels) continue;
    std::optional<BenchResult> result = summarize_runs(*labels, group);
    if (!result) continue;
    if (metrics_ != nullptr) metrics_->record(*result);
    results_.push_back(std::move(*result));
  }
}

void MetricsReporter::Finalize() { display_->Finalize(); }

// ---------------------------------------------------------------------------------------------
// Pushgateway

HostPort parse_host_port(const std::string& text, bool allow_port_zero) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("expected host:port, got '" + text + "'");
  }
  HostPort hp{text.substr(0, colon), text.substr(colon + 1)};
  if (hp.host.empty()) throw std::invalid_argument("empty host in '" + text + "'");
  int port = -1;
  const bool digits = !hp.port.empty() && hp.port.size() <= 5 &&
                      hp.port.find_first_not_of("0123456789") == std::string::npos;
  if (digits) port = std::stoi(hp.port);
  const int lowest = allow_port_zero ? 0 : 1;
  if (port < lowest || port > 65535) {
    throw std::invalid_argument("bad port '" + hp.port + "' in '" + text + "' (" +
                                std::to_string(lowest) + "..65535)");
  }
  return hp;
}

std::map<std::string, std::string> default_grouping() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    return {{"instance", "unknown"}};
  }
  return {{"instance", host}};
}

namespace {

std::unique_ptr<prometheus::Gateway> make_gateway(const std::string& host_port,
                                                  const std::string& job,
                                                  std::map<std::string, std::string>& grouping) {
  if (job.empty()) throw std::invalid_argument("empty Pushgateway job name");
  const HostPort hp = parse_host_port(host_port);
  if (grouping.empty()) grouping = default_grouping();
  const prometheus::Labels labels(grouping.begin(), grouping.end());
  return std::make_unique<prometheus::Gateway>(hp.host, hp.port, job, labels);
}

}  // namespace

int push_to_gateway(const std::string& host_port, const std::string& job,
                    const std::shared_ptr<prometheus::Registry>& registry,
                    std::map<std::string, std::string> grouping) {
  auto gateway = make_gateway(host_port, job, grouping);
  gateway->RegisterCollectable(registry);
  return gateway->Push();
}

int delete_from_gateway(const std::string& host_port, const std::string& job,
                        std::map<std::string, std::string> grouping) {
  auto gateway = make_gateway(host_port, job, grouping);
  return gateway->Delete();
}

// ---------------------------------------------------------------------------------------------
// MetricsListener

MetricsListener::MetricsListener(const std::string& addr_port,
                                 std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  parse_host_port(addr_port, /*allow_port_zero=*/true);  // a clear message when malformed
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(addr_port, 1);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + addr_port + ": " + e.what());
  }
  exposer_->RegisterCollectable(registry_);
}

MetricsListener::~MetricsListener() = default;

std::vector<int> MetricsListener::ports() const { return exposer_->GetListeningPorts(); }

void MetricsListener::linger(double seconds) const {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace lmcache::bench
