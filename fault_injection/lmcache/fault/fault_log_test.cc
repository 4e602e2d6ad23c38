#include "lmcache/fault/fault_log.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

#include "lmcache/fault/fault_rng.h"

namespace lmcache::fault {
namespace {

TEST(FaultKinds, TableIsCompleteAndNamesRoundTrip) {
  ASSERT_EQ(all_fault_kinds().size(), kFaultKindCount);
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kFaultKindCount; ++i) {
    const auto& info = all_fault_kinds()[i];
    EXPECT_EQ(static_cast<std::size_t>(info.kind), i);
    EXPECT_FALSE(info.detectability.empty());
    EXPECT_EQ(parse_fault_kind(info.name), info.kind);
    names.insert(info.name);
  }
  EXPECT_EQ(names.size(), kFaultKindCount);
  EXPECT_FALSE(parse_fault_kind("no_such_kind"));
  EXPECT_EQ(fault_kind_name(FaultKind::kCorrupt), "corrupt");
  EXPECT_EQ(fault_effect_name(FaultEffect::kPoisonsStored), "poisons_stored");
}

TEST(FaultLog, RecordsInOrderCountsAndDrains) {
  FaultLog log;
  FaultEvent e;
  e.kind = FaultKind::kStoreFail;
  log.record(e);
  e.kind = FaultKind::kCorrupt;
  log.record(e);
  log.record(e);
  EXPECT_EQ(log.count(FaultKind::kCorrupt), 2u);
  EXPECT_EQ(log.counts_json()["store_fail"], 1);
  auto events = log.drain();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_LT(events[0].seq, events[1].seq);
  EXPECT_LT(events[1].seq, events[2].seq);
  EXPECT_TRUE(log.drain().empty());
  EXPECT_EQ(log.count(FaultKind::kCorrupt), 2u);  // counts survive a drain
}

TEST(FaultLog, BoundsWhatNobodyDrains) {
  FaultLog log;
  for (std::size_t i = 0; i < FaultLog::kMaxPendingEvents + 10; ++i) log.record({});
  EXPECT_EQ(log.dropped(), 10u);
  auto events = log.drain();
  EXPECT_EQ(events.size(), FaultLog::kMaxPendingEvents);
  EXPECT_EQ(events.front().seq, 11u);  // the oldest went first
  EXPECT_EQ(log.count(FaultKind::kLoadDrop), FaultLog::kMaxPendingEvents + 10);
}

TEST(FaultLog, AttributionScopeTagsEventsOfItsThreadOnly) {
  FaultLog log;
  {
    AttributionScope outer(7);
    log.record({});
    {
      AttributionScope inner(9);
      log.record({});
      std::thread([&] { log.record({}); }).join();  // another thread: no scope
    }
    log.record({});
  }
  log.record({});
  auto events = log.drain();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].scope_tag, 7u);
  EXPECT_EQ(events[1].scope_tag, 9u);
  EXPECT_EQ(events[2].scope_tag, 0u);
  EXPECT_EQ(events[3].scope_tag, 7u);
  EXPECT_EQ(events[4].scope_tag, 0u);
  EXPECT_EQ(AttributionScope::current(), 0u);
}

TEST(FaultLog, InjectedFaultIsARuntimeError) {
  try {
    throw InjectedFault("submit_store_task");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "injected fault: submit_store_task");
  }
}

TEST(FaultRng, DecisionsArePureFunctionsOfSeedSiteAndIndex) {
  FaultRng a(5), b(5), c(6);
  EXPECT_EQ(a.draw("corrupt", 1, 2), b.draw("corrupt", 1, 2));
  EXPECT_NE(a.draw("corrupt", 1, 2), c.draw("corrupt", 1, 2));
  EXPECT_NE(a.draw("corrupt", 1, 2), a.draw("truncate", 1, 2));
  EXPECT_NE(a.draw("corrupt", 1, 2), a.draw("corrupt", 2, 1));
  EXPECT_FALSE(a.chance(0.0, "x", 1));
  EXPECT_TRUE(a.chance(1.0, "x", 1));
  int hits = 0;
  for (std::uint64_t i = 0; i < 10000; ++i) hits += a.chance(0.2, "x", i);
  EXPECT_NEAR(hits, 2000, 200);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    double u = a.uniform("u", i);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_LT(a.below(7, "b", i), 7u);
  }
  EXPECT_EQ(a.below(0, "b", 1), 0u);
}

TEST(FaultRng, OccurrenceCounterIndexesByContentAndRepetition) {
  OccurrenceCounter a, b;
  std::uint64_t a0 = a.next(1, 100), a1 = a.next(1, 100), a2 = a.next(1, 200);
  // Another counter seeing the same content in another interleaving gives the same indices.
  std::uint64_t b2 = b.next(1, 200), b0 = b.next(1, 100), b1 = b.next(1, 100);
  EXPECT_EQ(a0, b0);
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a0, a1);
  EXPECT_NE(a.next(2, 100), a0);  // streams are independent
}

TEST(FaultRng, DigestsAreStable) {
  std::vector<ObjectKey> k1 = {ObjectKey("ab", "m", 0)}, k2 = {ObjectKey("ab", "m", 1)};
  EXPECT_EQ(digest_keys(k1), digest_keys(k1));
  EXPECT_NE(digest_keys(k1), digest_keys(k2));
  EXPECT_EQ(Fnv1a64().add("abc").value(), Fnv1a64().add("abc").value());
  EXPECT_NE(Fnv1a64().add("ab").add("c").value(), Fnv1a64().add("a").add("bc").value());
}

}  // namespace
}  // namespace lmcache::fault
