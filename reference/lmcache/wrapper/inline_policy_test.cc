#include "lmcache/wrapper/inline_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace lmcache {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;
using Step = InlinePolicy::Step;

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(InlinePolicyFormula, WeighsTheSavedHandoffsAgainstTheStepsSerdeTime) {
  // 4 hand-offs of 50 µs at 10 GB/s are a tenth of 20 MB's serde time (2 ms).
  auto bytes = [](nanoseconds h, double rate) {
    return static_cast<double>(InlinePolicy::adaptive_max_bytes(h, rate));
  };
  EXPECT_NEAR(bytes(microseconds(50), 10e9), 20e6, 1);
  // Twice the hand-off cost or twice the rate: twice the bytes.
  EXPECT_NEAR(bytes(microseconds(100), 10e9), 40e6, 1);
  EXPECT_NEAR(bytes(microseconds(50), 20e9), 40e6, 1);
}

TEST(InlinePolicyFormula, ClampsToItsBoundsForAnyInput) {
  for (double rate : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e30}) {
    for (nanoseconds h :
         {nanoseconds(0), nanoseconds(-5), nanoseconds(1), nanoseconds(microseconds(59)),
          nanoseconds(std::numeric_limits<std::int64_t>::max())}) {
      const std::size_t bytes = InlinePolicy::adaptive_max_bytes(h, rate);
      EXPECT_GE(bytes, InlinePolicy::kMinAdaptiveBytes) << rate << " " << h.count();
      EXPECT_LE(bytes, InlinePolicy::kMaxAdaptiveBytes) << rate << " " << h.count();
    }
  }
  EXPECT_EQ(InlinePolicy::adaptive_max_bytes(microseconds(59), std::nan("")),
            InlinePolicy::kMinAdaptiveBytes);
  EXPECT_EQ(InlinePolicy::adaptive_max_bytes(microseconds(59), 1e30),
            InlinePolicy::kMaxAdaptiveBytes);
}

TEST(InlinePolicyFixed, ThresholdsAreTheCallersAndNeverLearn) {
  InlinePolicy p(std::size_t{0}, 3 * kMiB, microseconds(59));
  EXPECT_FALSE(p.adaptive(Step::kSerialize));
  EXPECT_FALSE(p.adaptive(Step::kDeserialize));
  EXPECT_FALSE(p.runs_inline(Step::kSerialize, 1));
  EXPECT_TRUE(p.runs_inline(Step::kDeserialize, 3 * kMiB));
  EXPECT_FALSE(p.runs_inline(Step::kDeserialize, 3 * kMiB + 1));
  p.observe(Step::kDeserialize, 64 * kMiB, nanoseconds(1));
  p.observe(Step::kSerialize, 64 * kMiB, nanoseconds(1));
  EXPECT_EQ(p.max_bytes(Step::kDeserialize), 3 * kMiB);
  EXPECT_EQ(p.max_bytes(Step::kSerialize), 0u);
}

TEST(InlinePolicyAdaptive, StartsFromThePriorAndFollowsTheMeasuredRate) {
  const microseconds h(59);
  InlinePolicy p(std::nullopt, std::nullopt, h);
  ASSERT_TRUE(p.adaptive(Step::kSerialize));
  EXPECT_DOUBLE_EQ(p.bytes_per_second(Step::kSerialize), InlinePolicy::kPriorBytesPerSecond);
  const std::size_t prior = InlinePolicy::adaptive_max_bytes(h, InlinePolicy::kPriorBytesPerSecond);
  EXPECT_EQ(p.max_bytes(Step::kSerialize), prior);

  // 1 MiB in 100 µs (~10.5 GB/s), again and again: the rate converges on it from below.
  double last = p.bytes_per_second(Step::kSerialize);
  for (int i = 0; i < 60; ++i) {
    p.observe(Step::kSerialize, kMiB, microseconds(100));
    const double now = p.bytes_per_second(Step::kSerialize);
    EXPECT_GT(now, last);
    last = now;
  }
  const double sample = static_cast<double>(kMiB) / 100e-6;
  EXPECT_NEAR(last, sample, sample * 1e-3);
  EXPECT_GT(p.max_bytes(Step::kSerialize), prior);
  // The other direction learnt nothing.
  EXPECT_EQ(p.max_bytes(Step::kDeserialize), prior);

  // A slower serde pulls it back down.
  p.observe(Step::kSerialize, kMiB, std::chrono::milliseconds(10));
  EXPECT_LT(p.bytes_per_second(Step::kSerialize), last);
}

TEST(InlinePolicyAdaptive, IgnoresTinyStepsAndZeroTimes) {
  InlinePolicy p(std::nullopt, std::nullopt, microseconds(17));
  const std::size_t before = p.max_bytes(Step::kDeserialize);
  p.observe(Step::kDeserialize, InlinePolicy::kMinObservedBytes - 1, nanoseconds(1));
  p.observe(Step::kDeserialize, 8 * kMiB, nanoseconds(0));
  p.observe(Step::kDeserialize, 8 * kMiB, nanoseconds(-3));
  EXPECT_EQ(p.max_bytes(Step::kDeserialize), before);
  p.observe(Step::kDeserialize, InlinePolicy::kMinObservedBytes, nanoseconds(1));
  EXPECT_GT(p.max_bytes(Step::kDeserialize), before);
}

TEST(InlinePolicyAdaptive, SubmittedStepsTeachTheRateLessTheirHandoffs) {
  const microseconds h(50);
  InlinePolicy p(std::nullopt, std::nullopt, h);
  const std::size_t before = p.max_bytes(Step::kSerialize);
  // No longer than its two hand-offs: the step's own time is unknown, nothing is learnt.
  p.observe_submitted(Step::kSerialize, kMiB, 2 * h);
  EXPECT_EQ(p.max_bytes(Step::kSerialize), before);
  // 1 MiB that took 100 µs of serde time plus two hand-offs, again and again.
  for (int i = 0; i < 60; ++i) p.observe_submitted(Step::kSerialize, kMiB, microseconds(200));
  const double sample = static_cast<double>(kMiB) / 100e-6;
  EXPECT_NEAR(p.bytes_per_second(Step::kSerialize), sample, sample * 1e-3);
  EXPECT_EQ(p.max_bytes(Step::kSerialize),
            InlinePolicy::adaptive_max_bytes(h, p.bytes_per_second(Step::kSerialize)));
  // A fixed direction learns nothing from either path.
  InlinePolicy fixed(std::size_t{0}, std::size_t{0}, h);
  fixed.observe_submitted(Step::kDeserialize, kMiB, microseconds(200));
  EXPECT_EQ(fixed.max_bytes(Step::kDeserialize), 0u);
}

TEST(InlinePolicyAdaptive, AMachineWithSlowerHandoffsInlinesLargerSteps) {
  InlinePolicy fast(std::nullopt, std::nullopt, microseconds(17));
  InlinePolicy slow(std::nullopt, std::nullopt, microseconds(59));
  EXPECT_LT(fast.max_bytes(Step::kSerialize), slow.max_bytes(Step::kSerialize));
  EXPECT_LT(fast.max_bytes(Step::kDeserialize), slow.max_bytes(Step::kDeserialize));
  EXPECT_EQ(InlinePolicy(std::nullopt, std::nullopt, nanoseconds(-1)).handoff_cost(),
            nanoseconds(0));
}

TEST(InlinePolicySummary, NamesEachDirectionsThreshold) {
  InlinePolicy p(std::size_t{4096}, std::nullopt, microseconds(20));
  const Json s = p.summary();
  EXPECT_DOUBLE_EQ(s.at("handoff_cost_us").get<double>(), 20.0);
  EXPECT_FALSE(s.at("serialize").at("adaptive").get<bool>());
  EXPECT_EQ(s.at("serialize").at("max_bytes").get<std::size_t>(), 4096u);
  EXPECT_FALSE(s.at("serialize").contains("bytes_per_second"));
  EXPECT_TRUE(s.at("deserialize").at("adaptive").get<bool>());
  EXPECT_EQ(s.at("deserialize").at("max_bytes").get<std::size_t>(),
            p.max_bytes(Step::kDeserialize));
  EXPECT_DOUBLE_EQ(s.at("deserialize").at("bytes_per_second").get<double>(),
                   InlinePolicy::kPriorBytesPerSecond);
}

TEST(InlinePolicyConcurrency, RatesStayWithinWhatWasObserved) {
  InlinePolicy p(std::nullopt, std::nullopt, microseconds(30));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 2000; ++i) {
        // Every sample between 4 and 16 GB/s (1 MiB in 65.5-262 µs).
        p.observe(Step::kSerialize, kMiB, microseconds(66 + (i + t) % 196));
        (void)p.max_bytes(Step::kSerialize);
      }
    });
  }
  for (auto& th : threads) th.join();
  const double rate = p.bytes_per_second(Step::kSerialize);
  EXPECT_GE(rate, static_cast<double>(kMiB) / 262e-6 * 0.99);
  EXPECT_LE(rate, static_cast<double>(kMiB) / 66e-6 * 1.01);
}

}  // namespace
}  // namespace lmcache
