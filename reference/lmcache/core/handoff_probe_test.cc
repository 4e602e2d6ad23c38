#include "lmcache/core/handoff_probe.h"

#include <gtest/gtest.h>

namespace lmcache {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(HandoffPinger, EveryPingGetsItsPongBack) {
  HandoffPinger pinger;
  for (int i = 0; i < 20; ++i) {
    // A generous bound: a loaded machine may take long to wake the partner, never 10 s.
    const std::optional<nanoseconds> took = pinger.round_trip(milliseconds(10'000));
    ASSERT_TRUE(took.has_value()) << "round trip " << i;
    EXPECT_GT(took->count(), 0);
  }
}

TEST(MeasureHandoffCost, IsPositiveAndBoundedByTheTimeout) {
  const nanoseconds cost = measure_handoff_cost(5, milliseconds(10'000));
  EXPECT_GT(cost.count(), 0);
  EXPECT_LE(cost, nanoseconds(milliseconds(10'000)));
  // Zero round trips asked still measures one.
  EXPECT_GT(measure_handoff_cost(0, milliseconds(10'000)).count(), 0);
}

TEST(MachineHandoffCost, IsMeasuredOnceAndRemembered) {
  const nanoseconds first = machine_handoff_cost();
  EXPECT_GT(first.count(), 0);
  EXPECT_LE(first, nanoseconds(milliseconds(100)));
  EXPECT_EQ(machine_handoff_cost(), first);
}

}  // namespace
}  // namespace lmcache
