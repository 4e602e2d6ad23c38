#include "lmcache/testing/memory_connector.h"

#include <gtest/gtest.h>

#include "lmcache/testing/connector_faults.h"

namespace lmcache::storage_testing {
namespace {

TEST(MemoryConnector, LegacyGetIsAllOrNothing) {
  auto store = std::make_shared<MemoryStore>();
  store->put("a", std::vector<std::byte>(4, std::byte{1}));
  LegacyMemoryConnector legacy(store);
  MemoryConnector current(store);
  std::vector<std::byte> x(4), y(4);
  legacy.submit_batch_get({"a", "b"}, {x.data(), y.data()}, {4, 4}, 4);
  current.submit_batch_get({"a", "b"}, {x.data(), y.data()}, {4, 4}, 4);
  auto l = legacy.drain_completions();
  auto c = current.drain_completions();
  ASSERT_EQ(l.size(), 1u);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(l[0].ok);
  EXPECT_TRUE(l[0].result_bytes.empty());
  EXPECT_TRUE(c[0].ok);
  EXPECT_EQ(c[0].result_bytes, (std::vector<std::uint8_t>{1, 0}));
}

TEST(MemoryConnector, HeldCompletionsComeOutWhenReleased) {
  auto faults = std::make_shared<MemoryConnectorFaults>();
  faults->hold_completions = true;
  MemoryConnector c(std::make_shared<MemoryStore>(), faults);
  const std::uint64_t id = c.submit_batch_exists({"a"});
  EXPECT_TRUE(c.drain_completions().empty());
  EXPECT_EQ(c.held(), 1u);
  EXPECT_EQ(c.release_held(), 1u);
  auto done = c.drain_completions();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].future_id, id);
}

TEST(MemoryConnector, FailedSetsWriteOrNotAsAsked) {
  auto store = std::make_shared<MemoryStore>();
  auto faults = std::make_shared<MemoryConnectorFaults>();
  MemoryConnector c(store, faults);
  std::vector<std::byte> v(4);
  faults->fail_sets_before_write = true;
  c.submit_batch_set({"a"}, {v.data()}, {4}, 4);
  EXPECT_FALSE(store->contains("a"));
  faults->fail_sets_before_write = false;
  faults->fail_sets_after_write = true;
  c.submit_batch_set({"a"}, {v.data()}, {4}, 4);
  EXPECT_TRUE(store->contains("a"));
  for (const auto& done : c.drain_completions()) EXPECT_FALSE(done.ok);
}

TEST(FaultyConnector, FailsSetsAfterWritingAndHoldsCompletions) {
  auto store = std::make_shared<MemoryStore>();
  auto faults = std::make_shared<ConnectorFaults>();
  FaultyConnector c(bridge::erase_connector(std::make_unique<MemoryConnector>(store)), faults);
  std::vector<std::byte> v(4);
  faults->fail_sets_after_write = true;
  const std::uint64_t set = c.submit_batch_set({"a"}, {v.data()}, {4}, 4);
  faults->fail_sets_after_write = false;
  auto done = c.drain_completions();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].future_id, set);
  EXPECT_FALSE(done[0].ok);
  EXPECT_TRUE(store->contains("a"));

  faults->hold_completions = true;
  c.submit_batch_exists({"a"});
  EXPECT_TRUE(c.drain_completions().empty());
  EXPECT_EQ(c.held(), 1u);
  c.release_held();
  faults->hold_completions = false;
  EXPECT_EQ(c.drain_completions().size(), 1u);
  faults->throw_on_submit = true;
  EXPECT_THROW(c.submit_batch_exists({"a"}), std::runtime_error);
}

}  // namespace
}  // namespace lmcache::storage_testing
