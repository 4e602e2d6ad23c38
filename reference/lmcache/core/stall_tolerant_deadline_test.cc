#include "lmcache/core/stall_tolerant_deadline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using Clock = StallTolerantDeadline::Clock;

// A fake clock: every case below walks `now` by hand, so no verdict depends on the host.
const Clock::time_point kStart{};

TEST(StallTolerantDeadline, ExpiresAfterItsBudgetWhenCheckedOften) {
  StallTolerantDeadline d(kStart, 100ms, 50ms);
  Clock::time_point now = kStart;
  for (int step = 0; step < 9; ++step) {
    now += 10ms;
    EXPECT_FALSE(d.expired(now)) << "at " << (step + 1) * 10 << " ms";
  }
  now += 10ms;
  EXPECT_TRUE(d.expired(now));
  EXPECT_TRUE(d.expired(now + 1ms));  // stays expired
  EXPECT_TRUE(d.expired(now + 5s));   // even after a gap that would have been a stall
}

TEST(StallTolerantDeadline, AGapAboveMaxGapDoesNotCount) {
  StallTolerantDeadline d(kStart, 100ms, 50ms);
  Clock::time_point now = kStart;
  for (int step = 0; step < 9; ++step) EXPECT_FALSE(d.expired(now += 10ms));
  now += 5s;  // the machine stood still
  EXPECT_FALSE(d.expired(now)) << "a stall spent the budget";
  now += 9ms;  // 99 ms of checked time
  EXPECT_FALSE(d.expired(now));
  now += 1ms;
  EXPECT_TRUE(d.expired(now));
}

TEST(StallTolerantDeadline, AGapOfExactlyMaxGapCounts) {
  StallTolerantDeadline d(kStart, 100ms, 50ms);
  EXPECT_FALSE(d.expired(kStart + 50ms));
  EXPECT_TRUE(d.expired(kStart + 100ms));
}

TEST(StallTolerantDeadline, EveryStallIsExcluded) {
  StallTolerantDeadline d(kStart, 30ms, 20ms);
  Clock::time_point now = kStart;
  for (int stall = 0; stall < 5; ++stall) {
    now += 1s;
    EXPECT_FALSE(d.expired(now)) << "stall " << stall;
  }
  now += 20ms;
  EXPECT_FALSE(d.expired(now));
  now += 10ms;
  EXPECT_TRUE(d.expired(now));
}

TEST(StallTolerantDeadline, StallsAddAtMostMaxExtension) {
  // Slow calls between checks look like stalls; the cap still ends the wait.
  StallTolerantDeadline d(kStart, 100ms, 50ms, 1s);
  Clock::time_point now = kStart;
  int checks = 0;
  while (checks < 100 && !d.expired(now += 300ms)) ++checks;
  // Three 300 ms gaps are excluded whole; the fourth only by the 100 ms left of the cap, so the
  // deadline (100 ms + 1 s) has passed at the fourth check.
  EXPECT_EQ(checks, 3);
  EXPECT_EQ(now, kStart + 1200ms);
}

TEST(StallTolerantDeadline, ZeroBudgetIsExpiredAtOnce) {
  StallTolerantDeadline d(kStart, 0ms, 50ms);
  EXPECT_TRUE(d.expired(kStart));
}

TEST(StallTolerantDeadline, RealClockExpires) {
  // The default clock: a loop of short sleeps ends (bounded, whatever the machine's speed).
  StallTolerantDeadline d(20ms);
  int checks = 0;
  while (!d.expired() && checks < 100000) {
    ++checks;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_LT(checks, 100000);
}

}  // namespace
}  // namespace lmcache
