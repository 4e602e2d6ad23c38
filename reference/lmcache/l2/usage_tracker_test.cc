#include "lmcache/l2/usage_tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lmcache {
namespace {

ObjectKey key(std::uint32_t i, std::string salt = {}) {
  return ObjectKey(int_hash_to_bytes(i), "model", 0, 0, std::move(salt));
}

// `t` counts `total` bytes, split by cache salt exactly as `by_salt` (no other salt).
::testing::AssertionResult UsageIs(const UsageTracker& t, std::uint64_t total,
                                   const std::map<std::string, std::uint64_t>& by_salt) {
  const AdapterUsage u = t.get_usage();
  if (u.total_bytes_used == total && u.bytes_by_cache_salt == by_salt) {
    return ::testing::AssertionSuccess();
  }
  auto salts = [](const std::map<std::string, std::uint64_t>& m) {
    std::string out;
    for (const auto& [salt, bytes] : m) out += " '" + salt + "': " + std::to_string(bytes);
    return "{" + out + " }";
  };
  return ::testing::AssertionFailure()
         << u.total_bytes_used << " bytes, by salt " << salts(u.bytes_by_cache_salt) << "; want "
         << total << ", " << salts(by_salt);
}

// Records every call; optionally checks that the tracker's lock is not held while it runs.
class RecordingListener : public L2AdapterListener {
 public:
  explicit RecordingListener(UsageTracker* tracker = nullptr) : tracker_(tracker) {}

  void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                         const std::vector<std::uint64_t>& sizes) override {
    probe();
    std::lock_guard lock(mu_);
    stored.push_back({keys, sizes});
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    probe();
    std::lock_guard lock(mu_);
    accessed.push_back(keys);
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>& sizes) override {
    probe();
    std::lock_guard lock(mu_);
    deleted.push_back({keys, sizes});
  }

  struct Call {
    std::vector<ObjectKey> keys;
    std::vector<std::uint64_t> sizes;
  };
  std::vector<Call> stored;
  std::vector<std::vector<ObjectKey>> accessed;
  std::vector<Call> deleted;
  std::atomic<std::uint64_t> seen_total{0};

 private:
  // Calling back into the tracker would deadlock if it held its lock during the call.
  void probe() {
    if (tracker_ != nullptr) seen_total = tracker_->get_usage().total_bytes_used;
  }
  UsageTracker* tracker_;
  std::mutex mu_;
};

class ThrowingListener : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>&,
                         const std::vector<std::uint64_t>&) override {
    throw std::runtime_error("boom");
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {
    throw std::runtime_error("boom");
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                          const std::vector<std::uint64_t>&) override {
    throw std::runtime_error("boom");
  }
};

TEST(UsageTracker, StartsEmptyWithCapacity) {
  UsageTracker t(1000);
  AdapterUsage u = t.get_usage();
  EXPECT_EQ(u.total_bytes_used, 0u);
  EXPECT_EQ(u.total_capacity_bytes, 1000u);
  EXPECT_TRUE(u.bytes_by_cache_salt.empty());
  EXPECT_DOUBLE_EQ(u.usage_fraction(), 0.0);
  EXPECT_EQ(t.capacity_bytes(), 1000u);
}

TEST(UsageTracker, ZeroCapacityMeansUnboundedFraction) {
  UsageTracker t;
  EXPECT_DOUBLE_EQ(t.get_usage().usage_fraction(), -1.0);
}

TEST(UsageTracker, CountsTotalAndPerSalt) {
  UsageTracker t(1000);
  t.notify_stored({key(1, "a"), key(2, "b"), key(3, "a"), key(4)}, {10, 20, 30, 5});
  // The empty salt is counted too.
  EXPECT_TRUE(UsageIs(t, 65, {{"a", 40}, {"b", 20}, {"", 5}}));
  EXPECT_DOUBLE_EQ(t.get_usage().usage_fraction(), 0.065);

  t.notify_deleted({key(1, "a"), key(2, "b")}, {10, 20});
  EXPECT_TRUE(UsageIs(t, 35, {{"a", 30}, {"", 5}})) << "a salt at 0 is removed";

  t.notify_deleted({key(3, "a"), key(4)}, {30, 5});
  EXPECT_TRUE(UsageIs(t, 0, {}));
  EXPECT_EQ(t.clamp_events(), 0u);
}

TEST(UsageTracker, ZeroByteStoreLeavesNoSaltEntry) {
  UsageTracker t;
  t.notify_stored({key(1, "s")}, {0});
  EXPECT_TRUE(t.get_usage().bytes_by_cache_salt.empty());
}

TEST(UsageTracker, OverDeleteClampsAtZero) {
  UsageTracker t;
  t.notify_stored({key(1, "a"), key(2, "b")}, {10, 20});
  t.notify_deleted({key(1, "a")}, {15});  // more than salt "a" holds
  EXPECT_TRUE(UsageIs(t, 15, {{"b", 20}}));
  EXPECT_EQ(t.clamp_events(), 1u);

  t.notify_deleted({key(2, "b"), key(3, "zz")}, {20, 100});
  EXPECT_TRUE(UsageIs(t, 0, {}));
  EXPECT_GE(t.clamp_events(), 2u);
}

TEST(UsageTracker, LengthMismatchThrowsAndChangesNothing) {
  UsageTracker t;
  auto listener = std::make_shared<RecordingListener>();
  t.register_listener(listener);
  EXPECT_THROW(t.notify_stored({key(1)}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(t.notify_deleted({key(1), key(2)}, {1}), std::invalid_argument);
  EXPECT_EQ(t.get_usage().total_bytes_used, 0u);
  EXPECT_TRUE(listener->stored.empty());
  EXPECT_TRUE(listener->deleted.empty());
}

TEST(UsageTracker, ListenersGetKeysAndSizesOutsideTheLock) {
  UsageTracker t(100);
  auto a = std::make_shared<RecordingListener>(&t);
  auto b = std::make_shared<RecordingListener>(&t);
  t.register_listener(a);
  t.register_listener(b);
  EXPECT_EQ(t.listener_count(), 2u);

  t.notify_stored({key(1), key(2)}, {3, 4});
  t.notify_accessed({key(2)});
  t.notify_deleted({key(1)}, {3});

  for (const auto& l : {a, b}) {
    ASSERT_EQ(l->stored.size(), 1u);
    EXPECT_EQ(l->stored[0].keys, (std::vector<ObjectKey>{key(1), key(2)}));
    EXPECT_EQ(l->stored[0].sizes, (std::vector<std::uint64_t>{3, 4}));
    ASSERT_EQ(l->accessed.size(), 1u);
    EXPECT_EQ(l->accessed[0], (std::vector<ObjectKey>{key(2)}));
    ASSERT_EQ(l->deleted.size(), 1u);
    EXPECT_EQ(l->deleted[0].keys, (std::vector<ObjectKey>{key(1)}));
    EXPECT_EQ(l->deleted[0].sizes, (std::vector<std::uint64_t>{3}));
    EXPECT_EQ(l->seen_total, 4u) << "the counts change before listeners run";
  }
}

TEST(UsageTracker, EmptyListsCallNoListener) {
  UsageTracker t;
  auto l = std::make_shared<RecordingListener>();
  t.register_listener(l);
  t.notify_stored({}, {});
  t.notify_accessed({});
  t.notify_deleted({}, {});
  EXPECT_TRUE(l->stored.empty());
  EXPECT_TRUE(l->accessed.empty());
  EXPECT_TRUE(l->deleted.empty());
}

TEST(UsageTracker, ThrowingListenerIsCountedAndOthersStillRun) {
  UsageTracker t;
  auto good = std::make_shared<RecordingListener>();
  t.register_listener(std::make_shared<ThrowingListener>());
  t.register_listener(good);
  EXPECT_NO_THROW(t.notify_stored({key(1)}, {8}));
  EXPECT_NO_THROW(t.notify_accessed({key(1)}));
  EXPECT_NO_THROW(t.notify_deleted({key(1)}, {8}));
  EXPECT_EQ(t.listener_errors(), 3u);
  EXPECT_EQ(good->stored.size(), 1u);
  EXPECT_EQ(good->accessed.size(), 1u);
  EXPECT_EQ(good->deleted.size(), 1u);
  EXPECT_EQ(t.get_usage().total_bytes_used, 0u);
}

TEST(UsageTracker, RecordAndFireAreSeparable) {
  UsageTracker t;
  auto l = std::make_shared<RecordingListener>();
  t.register_listener(l);
  t.record_stored({key(1, "x")}, {9});
  EXPECT_EQ(t.get_usage().bytes_by_cache_salt.at("x"), 9u);
  EXPECT_TRUE(l->stored.empty()) << "record_* calls no listener";
  t.fire_stored({key(1, "x")}, {9});
  EXPECT_EQ(l->stored.size(), 1u);
  t.record_deleted({key(1, "x")}, {9});
  EXPECT_TRUE(l->deleted.empty());
  t.fire_deleted({key(1, "x")}, {9});
  EXPECT_EQ(l->deleted.size(), 1u);
  EXPECT_EQ(t.get_usage().total_bytes_used, 0u);
}

TEST(UsageTracker, NullListenerRejected) {
  UsageTracker t;
  EXPECT_THROW(t.register_listener(nullptr), std::invalid_argument);
}

TEST(UsageTrackerConcurrency, ConcurrentStoresAndDeletesBalance) {
  UsageTracker t;
  auto l = std::make_shared<RecordingListener>(&t);
  t.register_listener(l);
  constexpr int kThreads = 4, kRounds = 300;
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      const std::string salt = "s" + std::to_string(th % 2);
      for (int i = 0; i < kRounds; ++i) {
        ObjectKey k = key(static_cast<std::uint32_t>(th * kRounds + i), salt);
        t.notify_stored({k}, {7});
        t.notify_accessed({k});
        t.notify_deleted({k}, {7});
      }
    });
  }
  // A late registration while notifications run must be safe too.
  t.register_listener(std::make_shared<RecordingListener>());
  for (auto& th : threads) th.join();
  AdapterUsage u = t.get_usage();
  EXPECT_EQ(u.total_bytes_used, 0u);
  EXPECT_TRUE(u.bytes_by_cache_salt.empty());
  EXPECT_EQ(t.clamp_events(), 0u);
  EXPECT_EQ(l->stored.size(), static_cast<std::size_t>(kThreads * kRounds));
  EXPECT_EQ(l->deleted.size(), static_cast<std::size_t>(kThreads * kRounds));
}

}  // namespace
}  // namespace lmcache
