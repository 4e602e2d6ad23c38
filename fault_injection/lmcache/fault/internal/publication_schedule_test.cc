// PublicationSchedule on a clock of the test's own (time points it makes up): the order delays
// and holds give, which the adapter-level tests cannot observe without assuming how fast a
// machine publishes.
#include "lmcache/fault/internal/publication_schedule.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace lmcache::fault_internal {
namespace {

using namespace std::chrono_literals;
using Clock = PublicationSchedule::Clock;

constexpr int kLookup = 1;
const Clock::time_point kT0 = Clock::time_point(1h);

auto lookup_direction = [](TaskId) { return kLookup; };

// Delays reorder completions: results come out in due order, whatever order they were
// scheduled in, and none before its time.
TEST(PublicationSchedule, DelaysPublishInDueOrderNotSchedulingOrder) {
  PublicationSchedule s;
  s.schedule(1, kT0 + 150ms);  // scheduled first, delayed most
  s.schedule(2, kT0 + 10ms);
  s.schedule(3, kT0 + 80ms);
  s.schedule(4, kT0);  // no delay
  EXPECT_EQ(s.next_deadline(), kT0);
  EXPECT_EQ(s.take_due(kT0, lookup_direction), std::vector<TaskId>{4});
  EXPECT_EQ(s.take_due(kT0 + 9ms, lookup_direction), std::vector<TaskId>{});
  EXPECT_EQ(s.next_deadline(), kT0 + 10ms);
  EXPECT_EQ(s.take_due(kT0 + 100ms, lookup_direction), (std::vector<TaskId>{2, 3}));
  EXPECT_EQ(s.take_due(kT0 + 150ms, lookup_direction), std::vector<TaskId>{1});
  EXPECT_EQ(s.next_deadline(), Clock::time_point::max());
}

// A held result waits for the next result of its direction: after it (reorder), before it
// (coalesce), or alone once its own time runs out; another direction's result does not free it.
TEST(PublicationSchedule, HeldResultsGoWithTheNextOfTheirDirection) {
  PublicationSchedule s;
  s.hold(kLookup, 10, kT0 + 1h, /*coalesce=*/false);
  s.hold(kLookup, 11, kT0 + 1h, /*coalesce=*/true);
  s.schedule(20, kT0);
  auto direction = [](TaskId id) { return id == 30 ? 0 : kLookup; };
  EXPECT_EQ(s.take_due(kT0, direction), (std::vector<TaskId>{11, 20, 10}));
  s.hold(kLookup, 12, kT0 + 1s, /*coalesce=*/false);
  s.schedule(30, kT0);  // a store: not the lookup's partner
  EXPECT_EQ(s.take_due(kT0, direction), std::vector<TaskId>{30});
  EXPECT_EQ(s.next_deadline(), kT0 + 1s);
  EXPECT_EQ(s.take_due(kT0 + 1s, direction), std::vector<TaskId>{12});  // alone, on its timer
}

}  // namespace
}  // namespace lmcache::fault_internal
