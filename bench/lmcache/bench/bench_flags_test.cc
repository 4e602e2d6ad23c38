#include "lmcache/bench/bench_flags.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace lmcache::bench {
namespace {

BenchFlags parse(std::vector<std::string> args) {
  args.insert(args.begin(), "lmcache-bench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_bench_flags(static_cast<int>(argv.size()), argv.data());
}

TEST(BenchFlags, Defaults) {
  const BenchFlags f = parse({});
  EXPECT_FALSE(f.quick);
  EXPECT_FALSE(f.help);
  EXPECT_EQ(f.out_dir, "build/bench-results");
  EXPECT_EQ(f.device, "all");
  EXPECT_EQ(f.push_job, "lmcache_bench");
  EXPECT_TRUE(f.sizes.empty());
  EXPECT_EQ(f.caller_spin_us, 0u);
  ASSERT_EQ(f.passthrough.size(), 1u);
  EXPECT_EQ(f.passthrough[0], "lmcache-bench");
}

TEST(BenchFlags, OwnFlagsBothForms) {
  const BenchFlags f = parse({"--quick",
                              "--out",
                              "/tmp/x",
                              "--metrics-textfile=/tmp/m.prom",
                              "--push-gateway",
                              "127.0.0.1:9091",
                              "--push-job=j",
                              "--metrics-listen",
                              "127.0.0.1:0",
                              "--metrics-linger=2.5",
                              "--plugin",
                              "a.so",
                              "--plugin=b.so",
                              "--device=cpu",
                              "--threads",
                              "1,4",
                              "--sizes=4KiB,1M,3",
                              "--batches",
                              "2",
                              "--filter",
                              "^codec/",
                              "--caller-spin-us=150"});
  EXPECT_TRUE(f.quick);
  EXPECT_EQ(f.out_dir, "/tmp/x");
  EXPECT_EQ(f.metrics_textfile, "/tmp/m.prom");
  EXPECT_EQ(f.push_gateway, "127.0.0.1:9091");
  EXPECT_EQ(f.push_job, "j");
  EXPECT_EQ(f.metrics_listen, "127.0.0.1:0");
  EXPECT_DOUBLE_EQ(f.metrics_linger_seconds, 2.5);
  EXPECT_EQ(f.plugins, (std::vector<std::string>{"a.so", "b.so"}));
  EXPECT_EQ(f.device, "cpu");
  EXPECT_EQ(f.threads, (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(f.sizes, (std::vector<std::uint64_t>{4096, 1 << 20, 3}));
  EXPECT_EQ(f.batches, (std::vector<std::size_t>{2}));
  EXPECT_EQ(f.filter, "^codec/");
  EXPECT_EQ(f.caller_spin_us, 150u);
  EXPECT_EQ(f.passthrough.size(), 1u);
}

TEST(BenchFlags, BenchmarkFlagsPassThroughInOrder) {
  const BenchFlags f = parse({"--benchmark_repetitions=9", "--quick",
                              "--benchmark_enable_random_interleaving=true", "--v=2"});
  EXPECT_EQ(f.passthrough,
            (std::vector<std::string>{"lmcache-bench", "--benchmark_repetitions=9",
                                      "--benchmark_enable_random_interleaving=true", "--v=2"}));
  EXPECT_TRUE(f.passthrough_has("benchmark_repetitions"));
  EXPECT_FALSE(f.passthrough_has("benchmark_out"));
  EXPECT_FALSE(f.passthrough_has("benchmark_repetitions_x"));
}

TEST(BenchFlags, HelpListsEveryOwnFlag) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-h"}).help);
  const std::string help = bench_flags_help();
  for (const char* flag :
       {"--help", "--quick", "--out", "--metrics-textfile", "--push-gateway", "--push-job",
        "--metrics-listen", "--metrics-linger", "--plugin", "--device", "--threads", "--sizes",
        "--batches", "--filter", "--caller-spin-us"}) {
    EXPECT_NE(help.find(flag), std::string::npos) << flag;
  }
}

TEST(BenchFlags, RejectsBadValues) {
  EXPECT_THROW(parse({"--device", "tpu"}), std::invalid_argument);
  EXPECT_THROW(parse({"--threads", "0"}), std::invalid_argument);
  EXPECT_THROW(parse({"--threads", "1,,2"}), std::invalid_argument);
  EXPECT_THROW(parse({"--threads", "-1"}), std::invalid_argument);
  EXPECT_THROW(parse({"--sizes", "4XB"}), std::invalid_argument);
  EXPECT_THROW(parse({"--metrics-linger", "-1"}), std::invalid_argument);
  EXPECT_THROW(parse({"--caller-spin-us", "-5"}), std::invalid_argument);
  EXPECT_THROW(parse({"--caller-spin-us", "20000"}), std::invalid_argument);
  EXPECT_THROW(parse({"--caller-spin-us", "1.5"}), std::invalid_argument);
  EXPECT_THROW(parse({"--metrics-linger", "abc"}), std::invalid_argument);
  EXPECT_THROW(parse({"--out"}), std::invalid_argument);
  try {
    parse({"--batches", "x"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--batches"), std::string::npos);
  }
}

// Every list entry has a range, said in the message; nothing wraps or overflows.
TEST(BenchFlags, RejectsValuesOutOfRangeNamingTheRange) {
  auto message = [](std::vector<std::string> args) -> std::string {
    try {
      parse(args);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  EXPECT_NE(message({"--threads", "1025"}).find("--threads: expected an integer in [1, 1024]"),
            std::string::npos);
  EXPECT_NE(message({"--batches", "4097"}).find("--batches: expected an integer in [1, 4096]"),
            std::string::npos);
  EXPECT_NE(message({"--threads", "18446744073709551616"}).find("[1, 1024]"), std::string::npos);
  EXPECT_NE(message({"--sizes", "65GiB"}).find("--sizes: size must be in [1 B, 64GiB]"),
            std::string::npos);
  // 999999999999 GiB would overflow 64 bits.
  EXPECT_NE(message({"--sizes", "999999999999G"}).find("64GiB"), std::string::npos);
  EXPECT_EQ(parse({"--sizes", "64GiB"}).sizes, std::vector<std::uint64_t>{64ull << 30});
}

// A filter that is no regular expression is refused up front, naming --filter (Google Benchmark
// would print an error, run nothing and exit 0).
TEST(BenchFlags, RejectsAFilterThatDoesNotCompile) {
  try {
    parse({"--filter", "("});
    FAIL() << "accepted --filter '('";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--filter '(': not a valid regular expression"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse({"--filter", "codec/.*"}).filter, "codec/.*");
  EXPECT_EQ(benchmark_filter_problem("-codec/"), "");
  EXPECT_NE(benchmark_filter_problem("-["), "");
}

TEST(BenchFlags, Sizes) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4k"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("256MiB"), 256ull << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_THROW(parse_size("0"), std::invalid_argument);
  EXPECT_THROW(parse_size("KiB"), std::invalid_argument);
  EXPECT_THROW(parse_size("1.5M"), std::invalid_argument);
  EXPECT_EQ(format_size(4096), "4KiB");
  EXPECT_EQ(format_size(256ull << 20), "256MiB");
  EXPECT_EQ(format_size(1000), "1000B");
}

}  // namespace
}  // namespace lmcache::bench
