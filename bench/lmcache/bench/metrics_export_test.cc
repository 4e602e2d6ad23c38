#include "lmcache/bench/metrics_export.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "lmcache/bench/testing/sample_labels.h"
#include "lmcache/core/regular_file.h"

namespace lmcache::bench {
namespace {

namespace fs = std::filesystem;

BenchLabels sample_labels() { return bench_testing::codec_encode_labels(); }

BenchResult sample_result() {
  BenchResult r;
  r.labels = sample_labels();
  r.repetitions = 1;
  r.real_time_seconds = 0.001;
  r.cpu_time_seconds = 0.0009;
  r.bytes_per_second = 1.5e9;
  r.items_per_second = 5.0e8;
  r.roofline_ratio = 0.25;
  r.roofline_bytes_per_second = 6e9;
  r.roofline_spread = 0.04;
  return r;
}

fs::path temp_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("lmcache_bench_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool has_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// A minimal HTTP GET over a TCP socket (no client library in the dependency set).
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    throw std::system_error(errno, std::generic_category(), "connect");
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    throw std::runtime_error("short write");
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST(BenchMetrics, ExportsBaseUnitsBoundedLabelsAndBuildInfo) {
  BenchMetrics m({"0.1.0", "abc123", "GNU 12.2.0", "Release"}, {"Some CPU", 2, "AVX2", "none"});
  m.record(sample_result());
  m.finish();
  const std::string text = m.text();
  EXPECT_NE(text.find("# TYPE lmcache_bench_throughput_bytes_per_second gauge"), std::string::npos);
  EXPECT_NE(text.find("lmcache_bench_throughput_bytes_per_second{batch=\"none\",device=\"cpu\","
                      "dtype=\"bfloat16\",format=\"float8_e4m3fn\",impl=\"simd\",op=\"encode\","
                      "serde=\"fp8\",size_bytes=\"1048576\",suite=\"codec\",threads=\"1\"} "
                      "1500000000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lmcache_bench_roofline_ratio{"), std::string::npos);
  EXPECT_NE(text.find("lmcache_bench_roofline_bytes_per_second{batch=\"none\",device=\"cpu\","
                      "dtype=\"bfloat16\",format=\"float8_e4m3fn\",impl=\"simd\",op=\"encode\","
                      "serde=\"fp8\",size_bytes=\"1048576\",suite=\"codec\",threads=\"1\"} "
                      "6000000000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lmcache_bench_roofline_spread_ratio{"), std::string::npos);
  EXPECT_NE(text.find("stat=\"real\""), std::string::npos);
  EXPECT_NE(text.find("stat=\"cpu\""), std::string::npos);
  EXPECT_NE(text.find("lmcache_bench_build_info{build_type=\"Release\",compiler=\"GNU 12.2.0\","
                      "git_sha=\"abc123\",version=\"0.1.0\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lmcache_bench_machine_info{"), std::string::npos);
  EXPECT_NE(text.find("lmcache_bench_benchmarks{status=\"ok\"} 1"), std::string::npos);
  // Absent figures are not exported as zeros.
  EXPECT_EQ(text.find("lmcache_bench_codec_ratio{"), std::string::npos);
  EXPECT_EQ(text.find("lmcache_bench_stored_ratio{"), std::string::npos);
  EXPECT_EQ(text.find("lmcache_bench_task_latency_seconds{"), std::string::npos);
  EXPECT_EQ(m.ok_count(), 1u);
  m.record_error();
  EXPECT_EQ(m.error_count(), 1u);
}

TEST(BenchMetrics, TextfilePassesPromtoolLint) {
  if (!has_program("promtool")) {
    GTEST_SKIP() << "promtool not installed (Debian package 'prometheus'; see bench/README.md)";
  }
  BenchMetrics m(BuildInfo::current(), {});
  BenchResult r = sample_result();
  r.codec_ratio = 0.9;
  r.stored_ratio = 0.5;
  r.latency_p50_seconds = 1e-5;
  r.latency_p99_seconds = 3e-5;
  m.record(r);
  m.finish();
  const fs::path dir = temp_dir("promtool");
  const fs::path file = dir / "metrics.prom";
  lmcache::write_output_file(file.string(), m.text());
  const std::string cmd = "promtool check metrics < " + file.string() + " > " +
                          (dir / "promtool.out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir / "promtool.out");
  fs::remove_all(dir);
}

TEST(SummarizeRuns, MedianOfIterationRunsAggregatesAndErrorsSkipped) {
  using Run = benchmark::BenchmarkReporter::Run;
  std::vector<Run> runs;
  for (double t : {3.0, 1.0, 2.0}) {
    Run r;
    r.iterations = 10;
    r.real_accumulated_time = t;  // seconds for 10 iterations
    r.cpu_accumulated_time = t / 2;
    r.counters["bytes_per_second"] = benchmark::Counter(t * 100);
    r.counters[kRooflineRatioCounter] = benchmark::Counter(t / 10);
    r.counters[kRooflineSpreadCounter] = benchmark::Counter(t / 100);
    r.counters[kStoredRatioCounter] = benchmark::Counter(t / 4);
    runs.push_back(r);
  }
  Run agg;
  agg.run_type = Run::RT_Aggregate;
  agg.iterations = 3;
  agg.real_accumulated_time = 1000;
  runs.push_back(agg);
  Run err;
  err.error_occurred = true;
  err.real_accumulated_time = 1000;
  runs.push_back(err);
  auto r = summarize_runs(sample_labels(), runs);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->repetitions, 3u);
  EXPECT_DOUBLE_EQ(r->real_time_seconds, 0.2);
  EXPECT_DOUBLE_EQ(r->cpu_time_seconds, 0.1);
  EXPECT_DOUBLE_EQ(*r->bytes_per_second, 200);
  EXPECT_DOUBLE_EQ(*r->roofline_ratio, 0.2);
  EXPECT_DOUBLE_EQ(*r->roofline_spread, 0.02);
  EXPECT_DOUBLE_EQ(*r->stored_ratio, 0.5);
  EXPECT_FALSE(r->roofline_bytes_per_second.has_value());
  EXPECT_FALSE(r->items_per_second.has_value());
  EXPECT_FALSE(summarize_runs(sample_labels(), {agg, err}).has_value());
}

TEST(MetricsReporter, RecordsLabeledBenchmarksAndForwards) {
  const BenchLabels l{.suite = "test", .op = "reporter", .impl = "counters", .size_bytes = 64};
  register_labeled(l, [](benchmark::State& st) {
    for (auto _ : st) benchmark::DoNotOptimize(st.iterations());
    st.SetBytesProcessed(st.iterations() * 64);
    st.SetItemsProcessed(st.iterations());
    st.counters[kRooflineRatioCounter] = 0.5;
  })->Iterations(1000);
  BenchMetrics m(BuildInfo::current(), {});
  std::ostringstream display_out;
  auto display = std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  MetricsReporter reporter(std::move(display), &m);
  reporter.SetOutputStream(&display_out);
  reporter.SetErrorStream(&display_out);
  ASSERT_EQ(benchmark::RunSpecifiedBenchmarks(&reporter, "^test/reporter/"), 1u);
  EXPECT_NE(display_out.str().find("test/reporter/counters"), std::string::npos);
  ASSERT_EQ(reporter.results().size(), 1u);
  EXPECT_EQ(reporter.results()[0].labels, l);
  EXPECT_DOUBLE_EQ(*reporter.results()[0].roofline_ratio, 0.5);
  EXPECT_GT(*reporter.results()[0].bytes_per_second, 0);
  EXPECT_NE(m.text().find("impl=\"counters\""), std::string::npos);
}

TEST(HostPort, ParsesAndRejects) {
  const HostPort hp = parse_host_port("127.0.0.1:9091");
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, "9091");
  EXPECT_EQ(parse_host_port("[::1]:80").host, "[::1]");
  EXPECT_THROW(parse_host_port("localhost"), std::invalid_argument);
  EXPECT_THROW(parse_host_port(":9091"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("h:0"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("h:70000"), std::invalid_argument);
  EXPECT_THROW(parse_host_port("h:9x"), std::invalid_argument);
  EXPECT_EQ(default_grouping().count("instance"), 1u);
}

TEST(Pushgateway, UnreachableGatewayReportsFailureWithoutThrowing) {
  BenchMetrics m(BuildInfo::current(), {});
  // Port 1 on loopback: connection refused at once.
  const int code = push_to_gateway("127.0.0.1:1", "lmcache_bench_test", m.registry());
  EXPECT_TRUE(code < 200 || code >= 300) << code;
  EXPECT_THROW(push_to_gateway("nohostport", "j", m.registry()), std::invalid_argument);
  EXPECT_THROW(push_to_gateway("127.0.0.1:9091", "", m.registry()), std::invalid_argument);
}

TEST(MetricsListener, ServesTheRegistryOnLoopback) {
  BenchMetrics m({"9.9.9", "sha", "cc", "Release"}, {});
  MetricsListener listener("127.0.0.1:0", m.registry());
  ASSERT_FALSE(listener.ports().empty());
  const int port = listener.ports().front();
  std::string body = http_get(port, "/metrics");
  EXPECT_NE(body.find("200 OK"), std::string::npos) << body;
  EXPECT_NE(body.find("lmcache_bench_build_info{"), std::string::npos) << body;
  EXPECT_EQ(body.find("impl=\"simd\""), std::string::npos);
  // Values recorded while serving appear in the next scrape.
  m.record(sample_result());
  body = http_get(port, "/metrics");
  EXPECT_NE(body.find("impl=\"simd\""), std::string::npos) << body;
  EXPECT_THROW(MetricsListener("not-an-address", m.registry()), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache::bench
