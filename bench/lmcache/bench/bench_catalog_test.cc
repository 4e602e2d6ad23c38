#include "lmcache/bench/bench_catalog.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "lmcache/bench/testing/sample_labels.h"

namespace lmcache::bench {
namespace {

TEST(BenchCatalog, NameFromLabelsSkipsWhatDoesNotApply) {
  const BenchLabels l = bench_testing::codec_encode_labels(/*threads=*/2);
  EXPECT_EQ(benchmark_name(l),
            "codec/encode/simd/fp8/bfloat16/float8_e4m3fn/cpu/size:1048576/threads:2");
  const BenchLabels m{.suite = "l1", .op = "temp_cycle", .impl = "cycle", .batch = 8};
  EXPECT_EQ(benchmark_name(m), "l1/temp_cycle/cycle/cpu/batch:8");
}

TEST(BenchCatalog, LabelMapIsBoundedAndComplete) {
  const BenchLabels l{.suite = "l1", .op = "x", .impl = "y"};
  const auto m = l.as_map();
  EXPECT_EQ(m.size(), bench_label_names().size());
  EXPECT_EQ(m.at("size_bytes"), "none");
  EXPECT_EQ(m.at("threads"), "none");
  EXPECT_EQ(m.at("dtype"), "none");
  EXPECT_EQ(m.at("device"), "cpu");
}

TEST(BenchCatalog, BaseNameStripsGoogleBenchmarkSuffixes) {
  EXPECT_EQ(base_benchmark_name("a/b/size:4/threads:1/real_time"), "a/b/size:4/threads:1");
  EXPECT_EQ(base_benchmark_name("a/b/batch:8/manual_time"), "a/b/batch:8");
  EXPECT_EQ(base_benchmark_name("a/b/repeats:9/real_time"), "a/b");
  EXPECT_EQ(base_benchmark_name("a/b/min_time:0.010/real_time"), "a/b");
  EXPECT_EQ(base_benchmark_name("a/b"), "a/b");
}

TEST(BenchCatalog, RegistersAndFindsAndRejectsDuplicates) {
  const BenchLabels l{.suite = "test", .op = "noop", .impl = "catalog_test", .size_bytes = 4};
  const std::size_t before = catalog_size();
  auto* b = register_labeled(l, [](benchmark::State& st) {
    for (auto _ : st) {
    }
  });
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(catalog_size(), before + 1);
  auto found = find_labels(benchmark_name(l) + "/real_time");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(*found, l);
  EXPECT_FALSE(find_labels("nope/x").has_value());
  EXPECT_THROW(register_labeled(l, [](benchmark::State&) {}), std::logic_error);
}

}  // namespace
}  // namespace lmcache::bench
