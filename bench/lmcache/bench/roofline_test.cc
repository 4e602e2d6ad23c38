#include "lmcache/bench/roofline.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace lmcache::bench {
namespace {

TEST(RateStats, QuartilesInterpolateLikeNumpy) {
  // numpy.quantile([1, 2, 3, 4, 10], [.25, .5, .75]) = [2, 3, 4]
  const RateStats s = rate_stats({10, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_EQ(s.samples, 5u);
  EXPECT_DOUBLE_EQ(s.spread(), 2.0 / 3.0);
  // Even count: numpy.quantile([1, 2, 3, 4], [.25, .5, .75]) = [1.75, 2.5, 3.25]
  const RateStats e = rate_stats({4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(e.median, 2.5);
  EXPECT_DOUBLE_EQ(e.q1, 1.75);
  EXPECT_DOUBLE_EQ(e.q3, 3.25);
}

TEST(RateStats, OneSampleAndIdenticalSamplesHaveNoSpread) {
  EXPECT_DOUBLE_EQ(rate_stats({5e9}).spread(), 0.0);
  EXPECT_DOUBLE_EQ(rate_stats({7, 7, 7, 7}).spread(), 0.0);
  EXPECT_DOUBLE_EQ(RateStats{}.spread(), 0.0);  // median 0: no division
}

TEST(RateStats, EmptyIsAnError) { EXPECT_THROW(rate_stats({}), std::invalid_argument); }

TEST(MeasureRates, TakesAtLeastTheMinimumSamplesOfPositiveRates) {
  int passes = 0;
  const std::vector<double> rates = measure_rates([&] { ++passes; }, 1024, 0.0, 7);
  EXPECT_GE(rates.size(), 7u);
  EXPECT_GT(passes, 7);  // the warm-up pass plus at least one per sample
  for (double r : rates) EXPECT_GT(r, 0);
}

TEST(MeasureRoofline, CopiesTheSourceAndReportsAPositiveRate) {
  std::vector<std::byte> src(3 << 16);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7);
  for (std::size_t threads : {1, 2}) {
    std::vector<std::byte> dst(src.size() + 8, std::byte{0});
    const RateStats s = measure_roofline(dst, src, 1 << 17,
                                         {.threads = threads, .min_seconds = 0, .min_samples = 3});
    EXPECT_EQ(std::vector<std::byte>(dst.begin(), dst.begin() + src.size()), src);
    EXPECT_GE(s.samples, 3u);
    EXPECT_GT(s.median, 0);
    EXPECT_LE(s.q1, s.median);
    EXPECT_LE(s.median, s.q3);
  }
}

TEST(MeasureRoofline, RejectsBadBuffersBeforeTiming) {
  std::vector<std::byte> src(64);
  std::vector<std::byte> dst(32);
  EXPECT_THROW(measure_roofline(dst, src, 8, {}), std::invalid_argument);
  std::vector<std::byte> big(64);
  EXPECT_THROW(measure_roofline(big, src, 8, {.threads = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache::bench
