// What only MockL2Adapter promises: its capacity and all-or-nothing stores, no overwrite, deep
// copies, narrowed sizes, unlock edge cases, the task-id counter, status, close and destructor
// behaviour, the bandwidth model, its config, and races the kit does not stage (deletes and
// close against submitters). The adapter contracts every adapter shares (valid distinct fds, one
// signal per task on its own fd, one-shot results, unknown ids, lookup presence and locks,
// partial loads, usage per cache_salt, listeners, concurrent submitters, the store/lookup/load
// workflow) are checked once, by AdapterConformance over the mock in
// mock_adapter_conformance_test.cc. Waits use generous timeouts and no test asserts an upper
// bound on elapsed time.
#include "lmcache/l2/mock_adapter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/l2/testing/adapter_waits.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::chrono::milliseconds kWait = 5000ms;  // generous: never a speed assertion
constexpr std::chrono::milliseconds kPoll = 50ms;

// The Python fixture: 0.001 GB at 10 GB/s.
std::unique_ptr<MockL2Adapter> make_adapter(double max_size_gb = 0.001, double bandwidth_gb = 10) {
  return std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(max_size_gb, bandwidth_gb));
}

ObjectKey key(std::uint32_t i, std::string salt = {}) {
  return ObjectKey(int_hash_to_bytes(i), "test_model", 0, 0, std::move(salt));
}

// A float32 object of `n` elements, every element `fill`.
MemoryObjPtr float_obj(std::size_t n, float fill) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kFloat32));
  auto* f = reinterpret_cast<float*>(obj->data());
  for (std::size_t i = 0; i < n; ++i) f[i] = fill;
  return obj;
}

// A uint8 object of `n` bytes, every byte `fill`.
MemoryObjPtr byte_obj(std::size_t n, std::uint8_t fill) {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  std::memset(obj->data(), fill, n);
  return obj;
}

bool all_floats_equal(const MemoryObjPtr& obj, float value) {
  const auto* f = reinterpret_cast<const float*>(obj->data());
  for (std::size_t i = 0; i < obj->size() / sizeof(float); ++i) {
    if (f[i] != value) return false;
  }
  return true;
}

// Pops store completions until `n` have been collected or kWait passes. Drains the store fd,
// so tests that count signals do not use it.
std::map<TaskId, L2StoreResult> wait_stores(L2AdapterInterface& a, std::size_t n) {
  std::map<TaskId, L2StoreResult> out;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    if (wait_readable(a.get_store_event_fd(), kPoll)) consume_fd(a.get_store_event_fd());
    // Scan after every wake-up: many completions fold into one.
    for (auto& [id, r] : a.pop_completed_store_tasks()) out.emplace(id, r);
  }
  return out;
}

L2StoreResult wait_store(L2AdapterInterface& a, TaskId id) {
  auto done = wait_stores(a, 1);
  EXPECT_EQ(done.size(), 1u);
  EXPECT_EQ(done.count(id), 1u) << "task " << id;
  return done.count(id) ? done.at(id) : L2StoreResult::failure();
}

std::optional<Bitmap> wait_lookup(L2AdapterInterface& a, TaskId id) {
  return l2_testing::wait_for_result(a.get_lookup_and_lock_event_fd(),
                                     [&] { return a.query_lookup_and_lock_result(id); });
}

std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id) {
  return l2_testing::wait_for_result(a.get_load_event_fd(),
                                     [&] { return a.query_load_result(id); });
}

// Stores the pairs and waits; expects success.
void store_ok(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
              const std::vector<MemoryObjPtr>& objs) {
  L2StoreResult r = wait_store(a, a.submit_store_task(keys, objs));
  ASSERT_TRUE(r.is_successful());
}

// Every task runs in submission order on the worker, so an empty lookup completing means that
// everything submitted before it (an unlock included) has run.
void barrier(L2AdapterInterface& a) {
  auto r = wait_lookup(a, a.submit_lookup_and_lock_task({}));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 0u);
}

class RecordingListener : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                         const std::vector<std::uint64_t>& sizes) override {
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i < keys.size(); ++i) stored.emplace_back(keys[i], sizes[i]);
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    std::lock_guard lock(mu);
    accessed.insert(accessed.end(), keys.begin(), keys.end());
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>& sizes) override {
    std::lock_guard lock(mu);
    for (std::size_t i = 0; i < keys.size(); ++i) deleted.emplace_back(keys[i], sizes[i]);
  }
  std::mutex mu;
  std::vector<std::pair<ObjectKey, std::uint64_t>> stored;
  std::vector<ObjectKey> accessed;
  std::vector<std::pair<ObjectKey, std::uint64_t>> deleted;
};

using core_internal::invalid_argument_message;

// ---------------------------------------------------------------------------------------------
// Store

TEST(MockL2AdapterStoreConcurrency, EmptyBatchSucceedsWithZeroBytes) {
  auto a = make_adapter();
  L2StoreResult r = wait_store(*a, a->submit_store_task({}, {}));
  EXPECT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 0u);
}

TEST(MockL2AdapterStoreConcurrency, NoOverwrite) {
  auto a = make_adapter();
  store_ok(*a, {key(1)}, {float_obj(16, 1.0f)});
  L2StoreResult again = wait_store(*a, a->submit_store_task({key(1)}, {float_obj(16, 2.0f)}));
  EXPECT_TRUE(again.is_successful()) << "an existing key is not an error";
  EXPECT_EQ(again.bytes_transferred(), 0u) << "and is not counted";
  EXPECT_EQ(a->current_size_bytes(), 64u);

  auto dst = float_obj(16, 0.0f);
  auto bits = wait_load(*a, a->submit_load_task({key(1)}, {dst}));
  ASSERT_TRUE(bits && bits->test(0));
  EXPECT_TRUE(all_floats_equal(dst, 1.0f)) << "the first value stays";
}

TEST(MockL2AdapterStoreConcurrency, RepeatedKeyInOneBatchStoresTheFirst) {
  auto a = make_adapter();
  L2StoreResult r = wait_store(
      *a, a->submit_store_task({key(1), key(1)}, {float_obj(4, 1.0f), float_obj(4, 2.0f)}));
  EXPECT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 16u);
  auto dst = float_obj(4, 0.0f);
  ASSERT_TRUE(wait_load(*a, a->submit_load_task({key(1)}, {dst}))->test(0));
  EXPECT_TRUE(all_floats_equal(dst, 1.0f));
}

TEST(MockL2AdapterStoreConcurrency, StoreThatDoesNotFitFailsAndStoresNothing) {
  auto a = make_adapter();  // int(0.001 * 2^30) = 1073741 bytes
  const std::uint64_t cap = a->options().max_capacity_bytes;
  ASSERT_EQ(cap, 1073741u);
  const std::size_t big = 600 * 1024;  // two do not fit together

  L2StoreResult r =
      wait_store(*a, a->submit_store_task({key(1), key(2)}, {byte_obj(big, 1), byte_obj(big, 2)}));
  EXPECT_FALSE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 0u);
  EXPECT_EQ(a->stored_object_count(), 0u) << "all or nothing";
  EXPECT_EQ(a->get_usage().total_bytes_used, 0u);

  r = wait_store(*a, a->submit_store_task({key(1)}, {byte_obj(big, 1)}));
  EXPECT_TRUE(r.is_successful());
  r = wait_store(*a, a->submit_store_task({key(2)}, {byte_obj(big, 2)}));
  EXPECT_FALSE(r.is_successful()) << "the remaining capacity is too small";
  EXPECT_TRUE(a->has_key(key(1)));
  EXPECT_FALSE(a->has_key(key(2)));

  // A batch of an existing key plus a new one that fits: only the new bytes count.
  r = wait_store(*a, a->submit_store_task({key(1), key(3)}, {byte_obj(big, 1), byte_obj(1000, 3)}));
  EXPECT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 1000u);
}

TEST(MockL2AdapterStoreConcurrency, ObjectLargerThanCapacityFails) {
  auto a = make_adapter();
  L2StoreResult r = wait_store(
      *a, a->submit_store_task({key(1)}, {byte_obj(a->options().max_capacity_bytes + 1, 0)}));
  EXPECT_FALSE(r.is_successful());
  EXPECT_EQ(a->stored_object_count(), 0u);
}

TEST(MockL2AdapterStoreConcurrency, StoresExactlyTheNarrowedSize) {
  auto a = make_adapter();
  auto src = byte_obj(16, 0xAB);
  src->set_used_size(7);
  L2StoreResult r = wait_store(*a, a->submit_store_task({key(1)}, {src}));
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 7u);
  EXPECT_EQ(a->stored_size(key(1)), 7u);
  EXPECT_EQ(a->get_usage().total_bytes_used, 7u);

  // A larger destination gets the 7 bytes at its front; the rest is left as it was.
  auto dst = byte_obj(16, 0x11);
  auto bits = wait_load(*a, a->submit_load_task({key(1)}, {dst}));
  ASSERT_TRUE(bits && bits->test(0));
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[i]), i < 7 ? 0xAB : 0x11) << "byte " << i;
  }
  EXPECT_EQ(dst->size(), 7u) << "the destination's logical size reports the bytes loaded";
}

TEST(MockL2AdapterStoreConcurrency, KeepsADeepCopy) {
  auto a = make_adapter();
  auto src = float_obj(8, 3.0f);
  store_ok(*a, {key(1)}, {src});
  reinterpret_cast<float*>(src->data())[0] = -1.0f;  // the caller reuses its buffer
  auto dst = float_obj(8, 0.0f);
  ASSERT_TRUE(wait_load(*a, a->submit_load_task({key(1)}, {dst}))->test(0));
  EXPECT_TRUE(all_floats_equal(dst, 3.0f));
}

TEST(MockL2AdapterStoreConcurrency, MismatchedListsOrNullObjectRejected) {
  auto a = make_adapter();
  std::string msg = invalid_argument_message([&] {
    a->submit_store_task({key(1), key(2)}, {float_obj(4, 0.0f)});
  });
  EXPECT_THAT(msg, HasSubstr("2 keys but 1 objects"));
  msg = invalid_argument_message([&] { a->submit_load_task({key(1)}, {}); });
  EXPECT_THAT(msg, HasSubstr("1 keys but 0 objects"));
  msg = invalid_argument_message([&] {
    a->submit_store_task({key(1), key(2)}, {float_obj(4, 0.0f), nullptr});
  });
  EXPECT_THAT(msg, HasSubstr("objects[1] is null"));
  EXPECT_EQ(a->pop_completed_store_tasks().size(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Unlock

TEST(MockL2AdapterUnlockConcurrency, UnlockOfUnknownKeysDoesNotThrow) {
  auto a = make_adapter();
  EXPECT_NO_THROW(a->submit_unlock({key(1), key(2)}));
  barrier(*a);
  EXPECT_EQ(a->locked_key_count(), 0u);
}

TEST(MockL2AdapterUnlockConcurrency, UnlockAfterLock) {
  auto a = make_adapter();
  store_ok(*a, {key(1)}, {float_obj(4, 1.0f)});
  ASSERT_TRUE(wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)})));
  ASSERT_TRUE(wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)})));
  EXPECT_EQ(a->lock_count(key(1)), 2u);

  a->submit_unlock({key(1)});
  barrier(*a);
  EXPECT_EQ(a->lock_count(key(1)), 1u);
  a->submit_unlock({key(1)});
  barrier(*a);
  EXPECT_EQ(a->lock_count(key(1)), 0u);
  EXPECT_EQ(a->locked_key_count(), 0u) << "the entry goes at 0";
  a->submit_unlock({key(1)});  // one too many: ignored
  barrier(*a);
  EXPECT_EQ(a->locked_key_count(), 0u);
  EXPECT_TRUE(a->has_key(key(1))) << "unlock never removes data";
}

// ---------------------------------------------------------------------------------------------
// Load

TEST(MockL2AdapterLoadConcurrency, KeyNeedNotBeLocked) {
  auto a = make_adapter();
  store_ok(*a, {key(1)}, {float_obj(4, 7.0f)});
  auto dst = float_obj(4, 0.0f);
  ASSERT_TRUE(wait_load(*a, a->submit_load_task({key(1)}, {dst}))->test(0));
  EXPECT_EQ(a->locked_key_count(), 0u);
}

TEST(MockL2AdapterLoadConcurrency, TooSmallDestinationFailsThatKeyOnly) {
  auto a = make_adapter();
  store_ok(*a, {key(1), key(2)}, {byte_obj(16, 1), byte_obj(8, 2)});
  auto small = byte_obj(8, 0x55);
  auto fine = byte_obj(8, 0);
  auto bits = wait_load(*a, a->submit_load_task({key(1), key(2)}, {small, fine}));
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->to_string(), "01");
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(small->data()[i]), 0x55) << "not overrun, not written";
  }
}

// ---------------------------------------------------------------------------------------------
// Ids

TEST(MockL2AdapterIdsConcurrency, OneCounterAcrossKindsAndNoCrossDirectionResults) {
  auto a = make_adapter();
  TaskId s = a->submit_store_task({key(1)}, {float_obj(4, 1.0f)});
  TaskId l = a->submit_lookup_and_lock_task({key(1)});
  TaskId d = a->submit_load_task({key(1)}, {float_obj(4, 0.0f)});
  EXPECT_EQ(s, 0u);
  EXPECT_EQ(l, 1u);
  EXPECT_EQ(d, 2u);
  ASSERT_TRUE(wait_load(*a, d).has_value());
  ASSERT_TRUE(wait_lookup(*a, l).has_value());
  EXPECT_FALSE(a->query_lookup_and_lock_result(s).has_value()) << "a store id is not a lookup";
  EXPECT_FALSE(a->query_load_result(l).has_value()) << "a lookup id is not a load";
  EXPECT_EQ(wait_stores(*a, 1).count(s), 1u);
}

// ---------------------------------------------------------------------------------------------
// Usage, listeners, delete, status

TEST(MockL2AdapterUsageConcurrency, UsageGrowsAndReturnsToZeroAfterDeletes) {
  auto a = make_adapter();
  EXPECT_TRUE(a->supports_global_eviction());
  AdapterUsage u = a->get_usage();
  EXPECT_EQ(u.total_bytes_used, 0u);
  EXPECT_EQ(u.total_capacity_bytes, a->options().max_capacity_bytes);

  store_ok(*a, {key(1), key(2)}, {byte_obj(100, 1), byte_obj(50, 2)});
  u = a->get_usage();
  EXPECT_EQ(u.total_bytes_used, 150u);
  EXPECT_GT(u.usage_fraction(), 0.0);

  a->delete_keys({key(1), key(99)});  // absent keys are ignored
  EXPECT_EQ(a->get_usage().total_bytes_used, 50u);
  EXPECT_FALSE(a->has_key(key(1)));
  a->delete_keys({key(2), key(2)});
  u = a->get_usage();
  EXPECT_EQ(u.total_bytes_used, 0u);
  EXPECT_TRUE(u.bytes_by_cache_salt.empty());
  EXPECT_EQ(a->current_size_bytes(), 0u);
  EXPECT_EQ(a->stored_object_count(), 0u);

  // Freed space can be used again.
  store_ok(*a, {key(1)}, {byte_obj(100, 1)});
  EXPECT_EQ(a->get_usage().total_bytes_used, 100u);
}

TEST(MockL2AdapterUsageConcurrency, FailedStoreNotifiesNobody) {
  auto a = make_adapter();
  auto l = std::make_shared<RecordingListener>();
  a->register_listener(l);
  L2StoreResult r = wait_store(
      *a, a->submit_store_task({key(1)}, {byte_obj(a->options().max_capacity_bytes + 1, 0)}));
  EXPECT_FALSE(r.is_successful());
  std::lock_guard lock(l->mu);
  EXPECT_TRUE(l->stored.empty());
}

TEST(MockL2AdapterUsageConcurrency, DeleteIgnoresLocks) {
  auto a = make_adapter();
  store_ok(*a, {key(1)}, {byte_obj(8, 0)});
  ASSERT_TRUE(wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)})));
  a->delete_keys({key(1)});
  EXPECT_FALSE(a->has_key(key(1)));
  EXPECT_EQ(a->lock_count(key(1)), 1u) << "lock counts are left for the holder to release";
  a->submit_unlock({key(1)});
  barrier(*a);
  EXPECT_EQ(a->locked_key_count(), 0u);
}

TEST(MockL2AdapterStatusConcurrency, ReportStatus) {
  auto a = make_adapter();
  store_ok(*a, {key(1), key(2)}, {byte_obj(10, 0), byte_obj(20, 0)});
  ASSERT_TRUE(wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)})));
  Json s = a->report_status();
  EXPECT_EQ(s["is_healthy"], true);
  EXPECT_EQ(s["type"], "MockL2Adapter");
  EXPECT_EQ(s["stored_object_count"], 2);
  EXPECT_EQ(s["locked_key_count"], 1);
  EXPECT_EQ(s["current_size_bytes"], 30);
  EXPECT_EQ(s["max_capacity_bytes"], a->options().max_capacity_bytes);
  a->close();
  EXPECT_EQ(a->report_status()["is_healthy"], false);
}

// ---------------------------------------------------------------------------------------------
// Close and use after close

TEST(MockL2AdapterCloseConcurrency, CloseDoesNotThrowAndIsIdempotent) {
  auto a = make_adapter();
  EXPECT_NO_THROW(a->close());
  EXPECT_NO_THROW(a->close());
  EXPECT_EQ(a->get_store_event_fd(), -1);
  EXPECT_EQ(a->get_lookup_and_lock_event_fd(), -1);
  EXPECT_EQ(a->get_load_event_fd(), -1);
}

TEST(MockL2AdapterCloseConcurrency, CloseAfterOperationsKeepsCompletedResults) {
  auto a = make_adapter();
  TaskId s = a->submit_store_task({key(1)}, {float_obj(4, 1.0f)});
  ASSERT_TRUE(wait_readable(a->get_store_event_fd(), kWait));
  TaskId l = a->submit_lookup_and_lock_task({key(1)});
  ASSERT_TRUE(wait_readable(a->get_lookup_and_lock_event_fd(), kWait));
  TaskId d = a->submit_load_task({key(1)}, {float_obj(4, 0.0f)});
  ASSERT_TRUE(wait_readable(a->get_load_event_fd(), kWait));
  EXPECT_NO_THROW(a->close());

  auto stores = a->pop_completed_store_tasks();
  ASSERT_EQ(stores.count(s), 1u);
  EXPECT_TRUE(stores.at(s).is_successful());
  auto lookup = a->query_lookup_and_lock_result(l);
  ASSERT_TRUE(lookup.has_value());
  EXPECT_TRUE(lookup->test(0));
  auto load = a->query_load_result(d);
  ASSERT_TRUE(load.has_value());
  EXPECT_TRUE(load->test(0));
  EXPECT_EQ(a->stored_object_count(), 1u) << "getters still work";
}

TEST(MockL2AdapterCloseConcurrency, SubmitAfterCloseThrowsLogicError) {
  auto a = make_adapter();
  a->close();
  EXPECT_THROW(a->submit_store_task({key(1)}, {float_obj(4, 1.0f)}), std::logic_error);
  EXPECT_THROW(a->submit_lookup_and_lock_task({key(1)}), std::logic_error);
  EXPECT_THROW(a->submit_load_task({key(1)}, {float_obj(4, 1.0f)}), std::logic_error);
  EXPECT_THROW(a->submit_unlock({key(1)}), std::logic_error);
  EXPECT_THROW(a->delete_keys({key(1)}), std::logic_error);
  EXPECT_TRUE(a->pop_completed_store_tasks().empty());
  EXPECT_FALSE(a->query_load_result(0).has_value());
}

TEST(MockL2AdapterCloseConcurrency, PendingTasksAreDroppedAndBuffersReleased) {
  // 0.0001 GB/s: a 400 KB store would take about 4 s.
  auto a = make_adapter(0.01, 0.0001);
  auto src = byte_obj(400 * 1024, 9);
  auto dst = byte_obj(400 * 1024, 0);
  TaskId s = a->submit_store_task({key(1)}, {src});
  barrier(*a);  // the store has run (its copy is made); its completion is still pending
  TaskId d = a->submit_load_task({key(1)}, {dst});
  a->close();
  EXPECT_TRUE(a->pop_completed_store_tasks().empty()) << "dropped, never completed";
  EXPECT_FALSE(a->query_load_result(d).has_value());
  EXPECT_EQ(src.use_count(), 1) << "the adapter holds no caller buffer after close()";
  EXPECT_EQ(dst.use_count(), 1);
  (void)s;
}

TEST(MockL2AdapterCloseConcurrency, DestructorClosesWithTasksInFlight) {
  auto src = byte_obj(400 * 1024, 9);
  {
    auto a = make_adapter(0.01, 0.0001);
    a->submit_store_task({key(1)}, {src});
    a->submit_lookup_and_lock_task({key(1)});
  }
  EXPECT_EQ(src.use_count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Bandwidth model

TEST(MockL2AdapterBandwidthConcurrency, StoreCompletionIsDelayedByBandwidth) {
  // 40 KB at int(0.0001 * 2^30) = 107374 bytes/s is about 0.38 s: a functional lower bound of
  // the simulated delay, not a speed assertion.
  auto a = make_adapter(0.001, 0.0001);
  const auto start = std::chrono::steady_clock::now();
  TaskId id = a->submit_store_task({key(1)}, {byte_obj(40 * 1024, 1)});
  L2StoreResult r = wait_store(*a, id);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.is_successful());
  EXPECT_GT(elapsed, 100ms);
}

TEST(MockL2AdapterBandwidthConcurrency, LoadCompletionIsDelayedByBandwidth) {
  auto a = make_adapter(0.001, 0.0001);
  store_ok(*a, {key(1)}, {byte_obj(40 * 1024, 1)});
  const auto start = std::chrono::steady_clock::now();
  auto dst = byte_obj(40 * 1024, 0);
  auto bits = wait_load(*a, a->submit_load_task({key(1)}, {dst}));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(bits && bits->test(0));
  EXPECT_GT(elapsed, 100ms);
}

TEST(MockL2AdapterBandwidthConcurrency, FastBandwidthCompletes) {
  // The Python test asserts "under 1 s"; we only check that it completes (within kWait).
  auto a = make_adapter(0.001, 10);
  L2StoreResult r = wait_store(*a, a->submit_store_task({key(1)}, {byte_obj(40 * 1024, 1)}));
  EXPECT_TRUE(r.is_successful());
}

TEST(MockL2AdapterBandwidthConcurrency, LookupDoesNotWaitBehindASlowStore) {
  // Lookups move no bytes; a lookup submitted after a slow store completes on its own schedule
  // and already sees the store's keys (they are visible once the store ran).
  auto a = make_adapter(0.01, 0.0001);
  TaskId s = a->submit_store_task({key(1)}, {byte_obj(400 * 1024, 1)});
  auto bits = wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)}));
  ASSERT_TRUE(bits.has_value());
  EXPECT_TRUE(bits->test(0));
  (void)s;
}

// ---------------------------------------------------------------------------------------------
// Config

TEST(MockL2AdapterConfigConcurrency, ParsesGigabytes) {
  MockL2AdapterOptions o =
      MockL2Adapter::parse_config(Json{{"max_size_gb", 0.001}, {"mock_bandwidth_gb", 10}});
  EXPECT_EQ(o.max_capacity_bytes, 1073741u);
  EXPECT_EQ(o.bandwidth_bytes_per_sec, 10737418240u);
  o = MockL2Adapter::parse_config(
      Json{{"type", "mock"}, {"max_size_gb", 2}, {"mock_bandwidth_gb", 0.5}});
  EXPECT_EQ(o.max_capacity_bytes, 2147483648u);
  EXPECT_EQ(o.bandwidth_bytes_per_sec, 536870912u);
}

TEST(MockL2AdapterConfigConcurrency, FromJsonBuildsAnAdapter) {
  auto a = MockL2Adapter::from_json(Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}});
  EXPECT_EQ(a->options().max_capacity_bytes, 1073741824u);
}

TEST(MockL2AdapterConfigConcurrency, MissingKeyNamed) {
  std::string msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("max_size_gb must be a positive number"));
  EXPECT_THAT(msg, HasSubstr("missing"));
  msg = invalid_argument_message([] { MockL2Adapter::parse_config(Json{{"max_size_gb", 1}}); });
  EXPECT_THAT(msg, HasSubstr("mock_bandwidth_gb must be a positive number"));
}

TEST(MockL2AdapterConfigConcurrency, NonNumberRejected) {
  std::string msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"max_size_gb", "1"}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("max_size_gb must be a positive number"));
  msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", true}});
  });
  EXPECT_THAT(msg, HasSubstr("mock_bandwidth_gb must be a positive number"));
  msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"max_size_gb", nullptr}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("max_size_gb must be a positive number"));
}

TEST(MockL2AdapterConfigConcurrency, NonPositiveRejected) {
  for (double bad : {0.0, -1.0, -0.001}) {
    std::string msg = invalid_argument_message([&] {
      MockL2Adapter::parse_config(Json{{"max_size_gb", bad}, {"mock_bandwidth_gb", 1}});
    });
    EXPECT_THAT(msg, HasSubstr("max_size_gb must be a positive number")) << bad;
    msg = invalid_argument_message([&] {
      MockL2Adapter::parse_config(Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", bad}});
    });
    EXPECT_THAT(msg, HasSubstr("mock_bandwidth_gb must be a positive number")) << bad;
  }
}

TEST(MockL2AdapterConfigConcurrency, TooSmallToBeAByteRejected) {
  std::string msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"max_size_gb", 1e-12}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("max_size_gb"));
  EXPECT_THAT(msg, HasSubstr("0 bytes"));
}

TEST(MockL2AdapterConfigConcurrency, UnknownKeyNamed) {
  std::string msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(
        Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}, {"eviction", "lru"}});
  });
  EXPECT_THAT(msg, HasSubstr("unknown key 'eviction'"));
  // A typo is reported as the unknown key, not as the missing one.
  msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"max_size_g", 1}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("unknown key 'max_size_g'"));
}

TEST(MockL2AdapterConfigConcurrency, WrongTypeOrNonObjectRejected) {
  std::string msg = invalid_argument_message([] {
    MockL2Adapter::parse_config(Json{{"type", "fs"}, {"max_size_gb", 1}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("'type' must be \"mock\""));
  EXPECT_THROW(MockL2Adapter::parse_config(Json::array()), std::invalid_argument);
}

TEST(MockL2AdapterConfigConcurrency, OptionsValidated) {
  EXPECT_THAT(invalid_argument_message([] { MockL2AdapterOptions::from_gb(-1, 1); }),
              HasSubstr("max_size_gb must be a positive number, got -1"));
  EXPECT_THAT(invalid_argument_message([] { MockL2AdapterOptions::from_gb(1, 0); }),
              HasSubstr("mock_bandwidth_gb must be a positive number"));
  EXPECT_THROW(MockL2Adapter(MockL2AdapterOptions{0, 1}), std::invalid_argument);
  EXPECT_THROW(MockL2Adapter(MockL2AdapterOptions{1, 0}), std::invalid_argument);
  MockL2Adapter direct(MockL2AdapterOptions{100, 1000});
  EXPECT_EQ(direct.get_usage().total_capacity_bytes, 100u);
}

TEST(MockL2AdapterConfigConcurrency, RunWhenIdleIsAnOptionalBoolean) {
  EXPECT_FALSE(MockL2Adapter::parse_config(Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}})
                   .run_when_idle);
  EXPECT_TRUE(MockL2Adapter::parse_config(
                  Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}, {"run_when_idle", true}})
                  .run_when_idle);
  EXPECT_THAT(invalid_argument_message([] {
                MockL2Adapter::parse_config(
                    Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}, {"run_when_idle", 1}});
              }),
              HasSubstr("run_when_idle must be a boolean, got 1"));
}

// ---------------------------------------------------------------------------------------------
// run_when_idle: where tasks run and complete

// 1e9 GB/s: every transfer here is over before its task has finished running.
std::unique_ptr<MockL2Adapter> make_idle_runner(double bandwidth_gb = 1e9) {
  MockL2AdapterOptions options = MockL2AdapterOptions::from_gb(0.001, bandwidth_gb);
  options.run_when_idle = true;
  return std::make_unique<MockL2Adapter>(options);
}

// Records the thread each store notification ran on; optionally runs `on_store` there.
class ThreadListener : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>&,
                         const std::vector<std::uint64_t>&) override {
    {
      std::lock_guard lock(mu);
      threads.push_back(std::this_thread::get_id());
    }
    if (on_store) on_store();
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {}
  void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                          const std::vector<std::uint64_t>&) override {}
  std::function<void()> on_store;
  std::mutex mu;
  std::vector<std::thread::id> threads;
};

TEST(MockL2AdapterRunWhenIdleConcurrency, AnIdleSubmitRunsAndCompletesBeforeItReturns) {
  auto a = make_idle_runner();
  auto l = std::make_shared<ThreadListener>();
  a->register_listener(l);
  TaskId s = a->submit_store_task({key(1)}, {float_obj(16, 2.0f)});
  // No wait: the result and its signal are there when submit returns.
  EXPECT_TRUE(wait_readable(a->get_store_event_fd(), 0ms));
  auto stores = a->pop_completed_store_tasks();
  ASSERT_EQ(stores.count(s), 1u);
  EXPECT_TRUE(stores.at(s).is_successful());
  {
    std::lock_guard lock(l->mu);
    EXPECT_EQ(l->threads, std::vector<std::thread::id>{std::this_thread::get_id()});
  }
  TaskId k = a->submit_lookup_and_lock_task({key(1), key(2)});
  EXPECT_EQ(a->query_lookup_and_lock_result(k), Bitmap(2, 1));
  auto dst = float_obj(16, 0.0f);
  TaskId d = a->submit_load_task({key(1)}, {dst});
  EXPECT_EQ(a->query_load_result(d), Bitmap(1, 1));
  EXPECT_TRUE(all_floats_equal(dst, 2.0f));
}

TEST(MockL2AdapterRunWhenIdleConcurrency, ABusyMockQueuesOnTheWorker) {
  // 0.00001 GB/s: the first store's completion is held for about 3.8 s, so the schedule is not
  // empty and the second store must wait its turn on the worker.
  auto a = make_idle_runner(0.00001);
  auto l = std::make_shared<ThreadListener>();
  a->register_listener(l);
  a->submit_store_task({key(1)}, {byte_obj(40 * 1024, 1)});
  EXPECT_TRUE(a->pop_completed_store_tasks().empty()) << "its transfer is not over";
  TaskId second = a->submit_store_task({key(2)}, {byte_obj(16, 2)});
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  for (;;) {
    {
      std::lock_guard lock(l->mu);
      if (l->threads.size() == 2 || std::chrono::steady_clock::now() > deadline) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  std::lock_guard lock(l->mu);
  ASSERT_EQ(l->threads.size(), 2u) << "the second store never ran";
  EXPECT_EQ(l->threads[0], std::this_thread::get_id()) << "the idle submit ran here";
  EXPECT_NE(l->threads[1], std::this_thread::get_id()) << "the queued one ran on the worker";
  (void)second;
}

TEST(MockL2AdapterRunWhenIdleConcurrency, CloseWaitsForATaskRunningOnASubmitter) {
  auto a = make_idle_runner();
  auto l = std::make_shared<ThreadListener>();
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  l->on_store = [&] {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait_for(lock, kWait, [&] { return release; });
  };
  a->register_listener(l);
  auto src = byte_obj(64, 3);
  std::thread submitter([&] { a->submit_store_task({key(1)}, {src}); });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kWait, [&] { return entered; }));
  }
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    a->close();
    closed = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(closed.load()) << "close() returned while a task was still running";
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  closer.join();
  submitter.join();
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(src.use_count(), 1) << "the adapter holds no caller buffer after close()";
}

TEST(MockL2AdapterRunWhenIdleConcurrency, CloseFromATaskOnASubmitterIsALogicError) {
  auto a = make_idle_runner();
  auto l = std::make_shared<ThreadListener>();
  std::string error;
  l->on_store = [&] {
    try {
      a->close();
    } catch (const std::logic_error& e) {
      error = e.what();
    }
  };
  a->register_listener(l);
  a->submit_store_task({key(1)}, {byte_obj(8, 1)});
  EXPECT_THAT(error, HasSubstr("close() called from a task it runs"));
  EXPECT_NO_THROW(a->submit_lookup_and_lock_task({key(1)})) << "still open";
}

// ---------------------------------------------------------------------------------------------
// Concurrency

TEST(MockL2AdapterConcurrency, DeletesRaceWithStoresAndAccountingStaysExact) {
  auto a = make_adapter(0.01, 10);
  auto l = std::make_shared<RecordingListener>();
  a->register_listener(l);
  constexpr std::uint32_t kKeys = 200;
  std::atomic<bool> done{false};
  std::thread deleter([&] {
    while (!done.load()) {
      for (std::uint32_t i = 0; i < kKeys; i += 3) a->delete_keys({key(i)});
      std::this_thread::yield();
    }
  });
  std::vector<TaskId> ids;
  for (std::uint32_t i = 0; i < kKeys; ++i) {
    ids.push_back(a->submit_store_task({key(i)}, {byte_obj(32, 1)}));
  }
  auto stores = wait_stores(*a, kKeys);
  done.store(true);
  deleter.join();
  ASSERT_EQ(stores.size(), kKeys);
  // Whatever interleaving happened, usage equals the bytes really held.
  EXPECT_EQ(a->get_usage().total_bytes_used, a->current_size_bytes());
  EXPECT_EQ(a->current_size_bytes(), 32 * a->stored_object_count());
  std::lock_guard lock(l->mu);
  EXPECT_EQ(l->stored.size() - l->deleted.size(), a->stored_object_count());
}

TEST(MockL2AdapterConcurrency, CloseRacesWithSubmitters) {
  auto a = make_adapter(0.01, 1);
  std::atomic<int> rejected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < 200; ++i) {
        try {
          a->submit_store_task({key(static_cast<std::uint32_t>(t) * 1000 + i)}, {byte_obj(16, 0)});
          a->submit_lookup_and_lock_task({key(i)});
        } catch (const std::logic_error&) {
          rejected.fetch_add(1);
          return;
        }
      }
    });
  }
  std::this_thread::sleep_for(1ms);
  a->close();
  for (auto& th : threads) th.join();
  EXPECT_THROW(a->submit_lookup_and_lock_task({key(0)}), std::logic_error);
  // Every store that completed is handed out once; none is handed out twice.
  auto first = a->pop_completed_store_tasks();
  EXPECT_TRUE(a->pop_completed_store_tasks().empty());
  (void)first;
}

}  // namespace
}  // namespace lmcache
