#include "lmcache/bridge/internal/bridge_keys.h"

#include <gtest/gtest.h>

namespace lmcache::bridge_internal {
namespace {

ObjectKey key(int i) { return ObjectKey(int_hash_to_bytes(static_cast<std::uint32_t>(i)), "m", 0); }

TEST(BridgeKeys, PublishReportsNewAndResizedKeys) {
  BridgeKeys k;
  BridgeKeys::Sized stored, replaced;
  k.publish_store({key(1), key(2)}, {10, 20}, &stored, &replaced);
  EXPECT_EQ(stored.keys.size(), 2u);
  EXPECT_TRUE(replaced.empty());
  EXPECT_EQ(k.epoch(), 1u);
  BridgeKeys::Sized stored2, replaced2;
  k.publish_store({key(1), key(2)}, {10, 25}, &stored2, &replaced2);
  ASSERT_EQ(stored2.keys.size(), 1u) << "an unchanged key is not new to the usage";
  EXPECT_EQ(stored2.sizes[0], 25u);
  ASSERT_EQ(replaced2.keys.size(), 1u);
  EXPECT_EQ(replaced2.sizes[0], 20u);
  EXPECT_EQ(k.known_size(key(2)), 25u);
}

TEST(BridgeKeys, OnlyAProbeAfterThePublishForgetsAKey) {
  BridgeKeys k;
  BridgeKeys::Sized s, r;
  const std::uint64_t before = k.epoch();  // a probe submitted before the store completed
  k.publish_store({key(1)}, {10}, &s, &r);
  EXPECT_TRUE(k.forget_if_stale(key(1), before).empty()) << "the probe may have raced the store";
  EXPECT_TRUE(k.is_known(key(1)));
  const BridgeKeys::Sized gone = k.forget_if_stale(key(1), k.epoch());
  ASSERT_EQ(gone.keys.size(), 1u);
  EXPECT_EQ(gone.sizes[0], 10u);
  EXPECT_FALSE(k.is_known(key(1)));
}

TEST(BridgeKeys, TombstonesAndLocksCount) {
  BridgeKeys k;
  k.tombstone(key(1));
  k.tombstone(key(1));
  k.untombstone(key(1));
  EXPECT_TRUE(k.tombstoned(key(1)));
  k.untombstone(key(1));
  EXPECT_FALSE(k.tombstoned(key(1)));
  k.untombstone(key(1));  // ignored
  k.tombstone(key(2));
  BridgeKeys::Sized s, r;
  k.publish_store({key(2)}, {1}, &s, &r);
  EXPECT_FALSE(k.tombstoned(key(2))) << "a successful store lifts every tombstone";
  k.lock(key(3));
  k.lock(key(3));
  k.unlock(key(3));
  EXPECT_EQ(k.lock_count(key(3)), 1u);
  k.unlock(key(3));
  k.unlock(key(3));  // ignored
  EXPECT_EQ(k.locked_count(), 0u);
}

}  // namespace
}  // namespace lmcache::bridge_internal
