// The bridge over the in-memory connector (current and legacy shapes): its own rules, the bridge
// checks, mutants of the bridge that the checks must catch, and concurrency.
#include "lmcache/bridge/native_connector_adapter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/testing/bridge_checks.h"
#include "lmcache/testing/connector_faults.h"
#include "lmcache/testing/memory_connector.h"

namespace lmcache::bridge {
namespace {

using namespace std::chrono_literals;
using storage_testing::BridgeRig;
using storage_testing::ConnectorFaults;
using storage_testing::FaultyConnector;
using storage_testing::LegacyMemoryConnector;
using storage_testing::MemoryConnector;
using storage_testing::MemoryConnectorFaults;
using storage_testing::MemoryStore;

MemoryObjPtr obj(std::size_t n, std::uint8_t fill) {
  MemoryObjPtr o =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  std::memset(o->data(), fill, n);
  return o;
}

bool all_bytes(const MemoryObj& o, std::size_t n, std::uint8_t fill) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(o.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != fill) return false;
  }
  return true;
}

ObjectKey key(int i, std::string salt = {}) {
  return ObjectKey(int_hash_to_bytes(static_cast<std::uint32_t>(i)), "test-model", 0, 0,
                   std::move(salt));
}

L2StoreResult wait_store(L2AdapterInterface& a, TaskId id) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = a.pop_completed_store_tasks();
    if (auto it = done.find(id); it != done.end()) return it->second;
    wait_readable(a.get_store_event_fd(), 5ms);
  }
  ADD_FAILURE() << "store " << id << " did not complete";
  return L2StoreResult::failure();
}

Bitmap wait_lookup(L2AdapterInterface& a, TaskId id) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto bits = a.query_lookup_and_lock_result(id)) return *bits;
    wait_readable(a.get_lookup_and_lock_event_fd(), 5ms);
  }
  ADD_FAILURE() << "lookup " << id << " did not complete";
  return Bitmap();
}

Bitmap wait_load(L2AdapterInterface& a, TaskId id) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto bits = a.query_load_result(id)) return *bits;
    wait_readable(a.get_load_event_fd(), 5ms);
  }
  ADD_FAILURE() << "load " << id << " did not complete";
  return Bitmap();
}

class RecordingListener final : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                         const std::vector<std::uint64_t>& sizes) override {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < keys.size(); ++i) stored.emplace_back(keys[i], sizes[i]);
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    std::lock_guard lock(mu_);
    accessed.insert(accessed.end(), keys.begin(), keys.end());
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>& sizes) override {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < keys.size(); ++i) deleted.emplace_back(keys[i], sizes[i]);
  }
  std::mutex mu_;
  std::vector<std::pair<ObjectKey, std::uint64_t>> stored, deleted;
  std::vector<ObjectKey> accessed;
};

// A bridge over a MemoryConnector, with the store and faults at hand.
struct Rig {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  std::shared_ptr<MemoryConnectorFaults> faults = std::make_shared<MemoryConnectorFaults>();
  MemoryConnector* connector = nullptr;
  std::unique_ptr<NativeConnectorL2Adapter> bridge;

  explicit Rig(NativeConnectorAdapterOptions options = {}) {
    auto c = std::make_unique<MemoryConnector>(store, faults);
    connector = c.get();
    bridge = make_native_connector_adapter(std::move(c), std::move(options));
  }
  std::string encoded(const ObjectKey& k) const { return bridge->key_codec().encode(k); }
};

// --- The L2 rules ----------------------------------------------------------------------------

TEST(NativeConnectorL2Adapter, StoreLookupLoadDelete) {
  Rig rig;
  auto& a = *rig.bridge;
  auto listener = std::make_shared<RecordingListener>();
  a.register_listener(listener);
  const ObjectKey k1 = key(1), k2 = key(2, "salt");
  L2StoreResult r = wait_store(a, a.submit_store_task({k1, k2}, {obj(64, 1), obj(32, 2)}));
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 96u);
  EXPECT_TRUE(rig.store->contains(rig.encoded(k1)));
  EXPECT_EQ(rig.connector->counters().sets.load(), 2u) << "one batch per object size";
  EXPECT_EQ(listener->stored.size(), 2u);

  AdapterUsage u = a.get_usage();
  EXPECT_EQ(u.total_bytes_used, 96u);
  EXPECT_EQ(u.bytes_by_cache_salt[""], 64u);
  EXPECT_EQ(u.bytes_by_cache_salt["salt"], 32u);

  Bitmap found = wait_lookup(a, a.submit_lookup_and_lock_task({k1, key(3), k2}));
  EXPECT_EQ(found.to_string(), "101");
  EXPECT_EQ(a.lock_count(k1), 1u);
  EXPECT_EQ(a.report_status()["locked_key_count"], 2);
  a.submit_unlock({k1, k2, key(3)});
  EXPECT_EQ(a.locked_key_count(), 0u);

  std::vector<MemoryObjPtr> dsts = {obj(32, 0), obj(64, 0), obj(16, 7)};
  Bitmap loaded = wait_load(a, a.submit_load_task({k2, k1, key(3)}, dsts));
  EXPECT_EQ(loaded.to_string(), "110");
  EXPECT_TRUE(all_bytes(*dsts[0], 32, 2));
  EXPECT_TRUE(all_bytes(*dsts[1], 64, 1));
  EXPECT_TRUE(all_bytes(*dsts[2], 16, 7)) << "a missing key's destination was written";
  EXPECT_EQ(listener->accessed.size(), 2u);

  a.delete_keys({k1, key(3)});
  EXPECT_FALSE(rig.store->contains(rig.encoded(k1)));
  EXPECT_EQ(a.get_usage().total_bytes_used, 32u);
  ASSERT_EQ(listener->deleted.size(), 1u);
  EXPECT_EQ(listener->deleted[0].second, 64u);
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({k1})).to_string(), "0");
  EXPECT_FALSE(a.is_tombstoned(k1)) << "a confirmed delete leaves no tombstone";
}

TEST(NativeConnectorL2Adapter, EachCompletionSignalsItsOwnFdOnce) {
  Rig rig;
  auto& a = *rig.bridge;
  std::set<int> fds = {a.get_store_event_fd(), a.get_lookup_and_lock_event_fd(),
                       a.get_load_event_fd()};
  EXPECT_EQ(fds.size(), 3u);
  const TaskId s = a.submit_store_task({key(1)}, {obj(8, 1)});
  wait_store(a, s);
  wait_readable(a.get_store_event_fd(), 1s);
  EXPECT_EQ(consume_fd(a.get_store_event_fd()), 1u);
  EXPECT_EQ(consume_fd(a.get_load_event_fd()), 0u);
  EXPECT_EQ(consume_fd(a.get_lookup_and_lock_event_fd()), 0u);
  EXPECT_FALSE(a.query_load_result(s)) << "ids are not shared across kinds";
}

TEST(NativeConnectorL2Adapter, EmptyBatchesCompleteAtOnce) {
  Rig rig;
  auto& a = *rig.bridge;
  EXPECT_TRUE(wait_store(a, a.submit_store_task({}, {})).is_successful());
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({})).size(), 0u);
  EXPECT_EQ(wait_load(a, a.submit_load_task({}, {})).size(), 0u);
  a.delete_keys({});
  EXPECT_EQ(rig.connector->counters().sets + rig.connector->counters().exists +
                rig.connector->counters().gets + rig.connector->counters().deletes,
            0u)
      << "an empty batch reached the connector (LMCache's connectors throw on one)";
}

TEST(NativeConnectorL2Adapter, RejectsBadArguments) {
  Rig rig;
  auto& a = *rig.bridge;
  EXPECT_THROW(a.submit_store_task({key(1)}, {}), std::invalid_argument);
  EXPECT_THROW(a.submit_store_task({key(1)}, {nullptr}), std::invalid_argument);
  EXPECT_THROW(a.submit_load_task({key(1), key(2)}, {obj(1, 0)}), std::invalid_argument);
  EXPECT_THROW(make_native_connector_adapter(std::unique_ptr<MemoryConnector>()),
               std::invalid_argument);
  NativeConnectorAdapterOptions bad;
  bad.task_deadline = 0ms;
  EXPECT_THROW(make_native_connector_adapter(std::make_unique<MemoryConnector>(), bad),
               std::invalid_argument);
  bad = {};
  bad.key_namespace = "a/b";
  EXPECT_THROW(make_native_connector_adapter(std::make_unique<MemoryConnector>(), bad),
               std::invalid_argument);
}

TEST(NativeConnectorL2Adapter, LoadsTheStoredSizeIntoLargerDestinations) {
  // A serde wrapper loads into estimate-sized temps: the bridge must get exactly the stored
  // bytes and narrow the destination to them.
  Rig rig;
  auto& a = *rig.bridge;
  MemoryObjPtr src = obj(100, 5);
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {src})).is_successful());
  MemoryObjPtr big = obj(150, 0);
  EXPECT_EQ(wait_load(a, a.submit_load_task({key(1)}, {big})).to_string(), "1");
  EXPECT_EQ(big->size(), 100u);
  EXPECT_TRUE(all_bytes(*big, 100, 5));
  MemoryObjPtr small = obj(50, 3);
  EXPECT_EQ(wait_load(a, a.submit_load_task({key(1)}, {small})).to_string(), "0");
  EXPECT_TRUE(all_bytes(*small, 50, 3)) << "an object larger than the destination was fetched";
}

TEST(NativeConnectorL2Adapter, StoreRepeatingAKeyKeepsTheFirstCopy) {
  Rig rig;
  auto& a = *rig.bridge;
  L2StoreResult r = wait_store(a, a.submit_store_task({key(1), key(1)}, {obj(8, 1), obj(8, 2)}));
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 8u);
  EXPECT_EQ(a.get_usage().total_bytes_used, 8u);
  // Stored again: counted once.
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 3)})).is_successful());
  EXPECT_EQ(a.get_usage().total_bytes_used, 8u);
}

TEST(NativeConnectorL2Adapter, CapacityIsAllOrNothing) {
  NativeConnectorAdapterOptions o;
  o.max_capacity_bytes = 100;
  Rig rig(o);
  auto& a = *rig.bridge;
  EXPECT_TRUE(a.supports_global_eviction());
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(60, 1)})).is_successful());
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(2), key(3)}, {obj(20, 1), obj(30, 1)}))
                   .is_successful());
  EXPECT_FALSE(rig.store->contains(rig.encoded(key(2)))) << "a store over capacity sent keys";
  EXPECT_TRUE(wait_store(a, a.submit_store_task({key(1), key(2)}, {obj(60, 1), obj(40, 1)}))
                  .is_successful())
      << "a key already stored needs no new room";
  EXPECT_EQ(a.get_usage().usage_fraction(), 1.0);
}

TEST(NativeConnectorL2Adapter, SubmitThatThrowsFailsTheTask) {
  Rig rig;
  auto& a = *rig.bridge;
  rig.faults->throw_on_submit = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({key(1)})).to_string(), "0");
  EXPECT_EQ(wait_load(a, a.submit_load_task({key(1)}, {obj(8, 0)})).to_string(), "0");
  rig.faults->throw_on_submit = false;
  EXPECT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_GE(a.stats().submit_errors, 3u);
}

TEST(NativeConnectorL2Adapter, FailedStoreIsDeletedBeforeItsFailureIsPublished) {
  Rig rig;
  auto& a = *rig.bridge;
  auto listener = std::make_shared<RecordingListener>();
  a.register_listener(listener);
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  rig.faults->fail_sets_after_write = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(1), key(2)}, {obj(8, 1), obj(16, 2)}))
                   .is_successful());
  // The failure is published after the cleanup delete completed: nothing is left in the store.
  EXPECT_FALSE(rig.store->contains(rig.encoded(key(1))));
  EXPECT_FALSE(rig.store->contains(rig.encoded(key(2))));
  EXPECT_EQ(a.get_usage().total_bytes_used, 0u);
  ASSERT_EQ(listener->deleted.size(), 1u) << "the key stored before was reported deleted";
  EXPECT_FALSE(a.is_tombstoned(key(1)));
  EXPECT_EQ(a.stats().failed_stores, 1u);
  EXPECT_EQ(a.stats().cleanup_deletes, 1u);
}

TEST(NativeConnectorL2Adapter, FailedCleanupKeepsTheKeysHidden) {
  Rig rig;
  auto& a = *rig.bridge;
  rig.faults->fail_sets_after_write = true;
  rig.faults->fail_deletes = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_TRUE(rig.store->contains(rig.encoded(key(1)))) << "the delete was supposed to fail";
  EXPECT_TRUE(a.is_tombstoned(key(1)));
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({key(1)})).to_string(), "0");
  MemoryObjPtr dst = obj(8, 9);
  EXPECT_EQ(wait_load(a, a.submit_load_task({key(1)}, {dst})).to_string(), "0");
  EXPECT_TRUE(all_bytes(*dst, 8, 9));
  EXPECT_EQ(a.stats().cleanup_failures, 1u);
  // A later successful store lifts the tombstone.
  rig.faults->fail_sets_after_write = false;
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 4)})).is_successful());
  EXPECT_FALSE(a.is_tombstoned(key(1)));
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({key(1)})).to_string(), "1");
}

TEST(NativeConnectorL2Adapter, DeadlineFailsAndLateSetIsCleanedUp) {
  NativeConnectorAdapterOptions o;
  o.task_deadline = 100ms;
  Rig rig(o);
  auto& a = *rig.bridge;
  rig.faults->hold_completions = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_EQ(a.stats().deadline_failures, 1u);
  ASSERT_TRUE(a.first_connector_error().has_value());
  EXPECT_EQ(a.first_connector_error()->op, "store");
  EXPECT_EQ(a.first_connector_error()->error, "no completion within the task deadline (100 ms)");
  EXPECT_EQ(a.first_connector_error()->sizes, std::vector<std::uint64_t>{8});
  EXPECT_TRUE(a.is_tombstoned(key(1)));
  EXPECT_EQ(a.stats().abandoned_batches, 1u);
  // The late completion arrives: the bridge deletes what the set wrote and lifts the tombstone.
  rig.faults->hold_completions = false;
  rig.connector->release_held();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((a.is_tombstoned(key(1)) || rig.store->contains(rig.encoded(key(1)))) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_FALSE(rig.store->contains(rig.encoded(key(1))));
  EXPECT_FALSE(a.is_tombstoned(key(1)));
  EXPECT_EQ(a.stats().abandoned_batches, 0u);
  EXPECT_EQ(a.stats().pending_tasks, 0u);
}

TEST(NativeConnectorL2Adapter, MissingKnownKeyIsDroppedFromTheUsage) {
  Rig rig;
  auto& a = *rig.bridge;
  auto listener = std::make_shared<RecordingListener>();
  a.register_listener(listener);
  ASSERT_TRUE(
      wait_store(a, a.submit_store_task({key(1), key(2)}, {obj(8, 1), obj(8, 2)})).is_successful());
  rig.store->clear();  // a server restart
  EXPECT_EQ(wait_lookup(a, a.submit_lookup_and_lock_task({key(1)})).to_string(), "0");
  EXPECT_EQ(wait_load(a, a.submit_load_task({key(2)}, {obj(8, 0)})).to_string(), "0");
  EXPECT_EQ(a.get_usage().total_bytes_used, 0u);
  EXPECT_EQ(listener->deleted.size(), 2u);
  EXPECT_EQ(a.stats().reconciled_misses, 2u);
}

TEST(NativeConnectorL2Adapter, CloseFailsPendingTasksOnceAndIsIdempotent) {
  Rig rig;
  auto& a = *rig.bridge;
  rig.faults->hold_completions = true;
  const TaskId s = a.submit_store_task({key(1)}, {obj(8, 1)});
  const TaskId l = a.submit_lookup_and_lock_task({key(1)});
  const TaskId d = a.submit_load_task({key(2)}, {obj(8, 0)});
  a.close();
  a.close();
  auto stores = a.pop_completed_store_tasks();
  ASSERT_EQ(stores.count(s), 1u);
  EXPECT_FALSE(stores.at(s).is_successful());
  EXPECT_EQ(a.query_lookup_and_lock_result(l)->to_string(), "0");
  EXPECT_EQ(a.query_load_result(d)->to_string(), "0");
  EXPECT_FALSE(a.query_load_result(d));
  EXPECT_THROW(a.submit_store_task({key(1)}, {obj(8, 1)}), std::logic_error);
  EXPECT_THROW(a.submit_lookup_and_lock_task({key(1)}), std::logic_error);
  EXPECT_THROW(a.submit_load_task({key(1)}, {obj(8, 1)}), std::logic_error);
  EXPECT_THROW(a.delete_keys({key(1)}), std::logic_error);
  EXPECT_FALSE(a.report_status()["is_healthy"].get<bool>());
  EXPECT_EQ(a.get_store_event_fd(), -1);
}

TEST(NativeConnectorL2Adapter, ReportsItsConnectorStatus) {
  Rig rig;
  Json s = rig.bridge->report_status();
  EXPECT_TRUE(s["is_healthy"].get<bool>());
  EXPECT_EQ(s["connector_type"], "native");
  EXPECT_EQ(s["task_deadline_ms"], NativeConnectorAdapterOptions::kDefaultTaskDeadlineMs);
  EXPECT_FALSE(s.contains("connector")) << "the memory connector has no report_status()";
}

TEST(NativeConnectorL2Adapter, RecordsConnectorErrorsWithTheirOperationKeysAndSizes) {
  std::mutex mu;
  std::vector<ConnectorError> seen;
  NativeConnectorAdapterOptions options;
  options.on_connector_error = [&](const ConnectorError& e) {
    std::lock_guard lock(mu);
    seen.push_back(e);
  };
  Rig rig(std::move(options));
  auto& a = *rig.bridge;
  ASSERT_TRUE(wait_store(a, a.submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_FALSE(a.first_connector_error().has_value()) << "no error yet";
  EXPECT_FALSE(a.report_status().contains("first_connector_error"));
  rig.faults->fail_sets_before_write = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(2), key(3)}, {obj(16, 2), obj(16, 3)}))
                   .is_successful());
  rig.faults->fail_sets_before_write = false;
  rig.faults->throw_on_submit = true;
  EXPECT_FALSE(wait_store(a, a.submit_store_task({key(4)}, {obj(8, 4)})).is_successful());
  rig.faults->throw_on_submit = false;

  const std::optional<ConnectorError> first = a.first_connector_error();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->op, "set");
  EXPECT_NE(first->future_id, 0u);
  EXPECT_EQ(first->key_count, 2u);
  EXPECT_EQ(first->keys, (std::vector<std::string>{rig.encoded(key(2)), rig.encoded(key(3))}));
  EXPECT_EQ(first->sizes, (std::vector<std::uint64_t>{16, 16}));
  EXPECT_EQ(first->error, "MemoryConnector: injected set failure (nothing written)");
  const std::string line = first->describe();
  EXPECT_NE(line.find("set (future "), std::string::npos) << line;
  EXPECT_NE(line.find("of 2 keys [\"" + rig.encoded(key(2)) + "\" 16 B"), std::string::npos)
      << line;
  EXPECT_NE(line.find("]: MemoryConnector: injected set failure"), std::string::npos) << line;

  const std::optional<ConnectorError> last = a.last_connector_error();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->future_id, 0u) << "a submit that threw has no future id";
  EXPECT_NE(last->error.find("connector submit threw: MemoryConnector: injected throw"),
            std::string::npos)
      << last->error;

  const Json s = a.report_status();
  EXPECT_EQ(s["connector_errors"], a.stats().connector_errors);
  EXPECT_GE(a.stats().connector_errors, 2u);
  EXPECT_EQ(s["first_connector_error"], first->describe());
  EXPECT_EQ(s["last_connector_error"], last->describe());
  a.close();  // the observer's calls happen before the tasks complete; close() joins the loop
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), a.stats().connector_errors);
  EXPECT_EQ(seen.front().describe(), first->describe());
}

// --- Legacy connectors -----------------------------------------------------------------------

TEST(NativeConnectorL2AdapterLegacy, ProbesBeforeGetSoMissesStayPerKey) {
  auto store = std::make_shared<MemoryStore>();
  auto c = std::make_unique<LegacyMemoryConnector>(store);
  LegacyMemoryConnector* raw = c.get();
  auto a = make_native_connector_adapter(std::move(c));
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  std::vector<MemoryObjPtr> dsts = {obj(8, 0), obj(8, 7)};
  EXPECT_EQ(wait_load(*a, a->submit_load_task({key(1), key(2)}, dsts)).to_string(), "10");
  EXPECT_TRUE(all_bytes(*dsts[0], 8, 1));
  EXPECT_TRUE(all_bytes(*dsts[1], 8, 7));
  EXPECT_EQ(raw->counters().exists.load(), 1u) << "no exists probe before the get";
  EXPECT_EQ(raw->counters().keys_got.load(), 1u) << "the absent key was fetched";
}

TEST(NativeConnectorL2AdapterLegacy, WithoutProbeAMissFailsTheWholeGet) {
  NativeConnectorAdapterOptions o;
  o.probe_before_get = false;
  auto a = make_native_connector_adapter(std::make_unique<LegacyMemoryConnector>(), o);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  EXPECT_EQ(
      wait_load(*a, a->submit_load_task({key(1), key(2)}, {obj(8, 0), obj(8, 0)})).to_string(),
      "00")
      << "all or nothing";
  EXPECT_EQ(wait_load(*a, a->submit_load_task({key(1)}, {obj(8, 0)})).to_string(), "1");
}

TEST(NativeConnectorL2AdapterLegacy, WithoutDeleteKeysStayHiddenFromThisBridge) {
  auto store = std::make_shared<MemoryStore>();
  auto a = make_native_connector_adapter(std::make_unique<LegacyMemoryConnector>(store));
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(1)}, {obj(8, 1)})).is_successful());
  a->delete_keys({key(1)});
  EXPECT_EQ(store->size(), 1u) << "a legacy connector cannot delete";
  EXPECT_EQ(wait_lookup(*a, a->submit_lookup_and_lock_task({key(1)})).to_string(), "0");
  EXPECT_EQ(a->get_usage().total_bytes_used, 0u);
}

// --- The bridge checks, and mutants of the bridge they must catch ----------------------------

BridgeRig memory_rig(std::shared_ptr<MemoryStore> store, bool legacy) {
  BridgeRig rig;
  rig.name = legacy ? "legacy_memory" : "memory";
  rig.make_connector = [store, legacy]() -> ErasedConnectorPtr {
    if (legacy) return erase_connector(std::make_unique<LegacyMemoryConnector>(store));
    return erase_connector(std::make_unique<MemoryConnector>(store));
  };
  return rig;
}

class BridgeChecks : public ::testing::TestWithParam<storage_testing::BridgeCheck> {};

TEST_P(BridgeChecks, HoldOverTheMemoryConnector) {
  EXPECT_EQ(GetParam().run(memory_rig(std::make_shared<MemoryStore>(), false)), "");
}

TEST_P(BridgeChecks, HoldOverTheLegacyMemoryConnector) {
  EXPECT_EQ(GetParam().run(memory_rig(std::make_shared<MemoryStore>(), true)), "");
}

INSTANTIATE_TEST_SUITE_P(All, BridgeChecks,
                         ::testing::ValuesIn(storage_testing::all_bridge_checks()),
                         [](const auto& info) { return std::string(info.param.name); });

// Mutant: cleanup deletes never reach the store (a bridge that forgets to delete what a failed
// set wrote). The delete is sent as an exists, so that a completion with its id still comes
// back, and reported as a success.
class SwallowDeletes final : public ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    std::lock_guard lock(mu_);
    const std::uint64_t id = ForwardingConnector::submit_batch_exists(keys);
    swallowed_.insert(id);
    return id;
  }
  std::vector<Completion> drain_completions() override {
    std::vector<Completion> done = ForwardingConnector::drain_completions();
    std::lock_guard lock(mu_);
    for (Completion& c : done) {
      if (swallowed_.erase(c.future_id) != 0) {
        c.ok = true;
        std::fill(c.result_bytes.begin(), c.result_bytes.end(), 1);
      }
    }
    return done;
  }

 private:
  std::mutex mu_;
  std::set<std::uint64_t> swallowed_;
};

// Mutant: get completions lose their per-key flags (a bridge that reads a get as all or nothing
// although the connector reports per-key hits, as LMCache's Python bridge once did).
class DropGetFlags final : public ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    std::lock_guard lock(mu_);
    const std::uint64_t id = ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
    gets_.insert(id);
    return id;
  }
  std::vector<Completion> drain_completions() override {
    std::vector<Completion> done = ForwardingConnector::drain_completions();
    std::lock_guard lock(mu_);
    for (Completion& c : done) {
      if (gets_.erase(c.future_id) != 0) c.result_bytes.clear();
    }
    return done;
  }

 private:
  std::mutex mu_;
  std::set<std::uint64_t> gets_;
};

// Mutant: keys encoded in LMCache's three-field form "<model>@<rank>@<hash>", dropping the
// object group and the salt (two keys, one object).
class ThreeFieldKeys final : public ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  static std::vector<std::string> mangle(const std::vector<std::string>& keys) {
    std::vector<std::string> out;
    for (const std::string& k : keys) {
      std::vector<std::string> f;
      std::size_t start = 0;
      for (std::size_t pos = 0; pos <= k.size(); ++pos) {
        if (pos == k.size() || k[pos] == '@') {
          f.push_back(k.substr(start, pos - start));
          start = pos + 1;
        }
      }
      out.push_back(f.size() >= 4 ? f[0] + "@" + f[1] + "@" + f[3] : k);
    }
    return out;
  }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    return ForwardingConnector::submit_batch_get(mangle(keys), bufs, lens, chunk);
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    return ForwardingConnector::submit_batch_set(mangle(keys), bufs, lens, chunk);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override {
    return ForwardingConnector::submit_batch_exists(mangle(keys));
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    return ForwardingConnector::submit_batch_delete(mangle(keys));
  }
};

// Mutant: unlocks are deduplicated (a bridge that releases a key once per batch although the
// lookup locked it once per occurrence).
class DedupUnlock final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  void submit_unlock(const std::vector<ObjectKey>& keys) override {
    std::vector<ObjectKey> unique;
    for (const ObjectKey& k : keys) {
      if (std::find(unique.begin(), unique.end(), k) == unique.end()) unique.push_back(k);
    }
    ForwardingL2Adapter::submit_unlock(unique);
  }
};

// Mutant: a load hit anywhere is reported as a hit everywhere (misses lost at the L2 surface).
class AnyHitIsAllHits final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  std::optional<Bitmap> query_load_result(TaskId id) override {
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (bits && !bits->none()) bits = Bitmap(bits->size(), bits->size());
    return bits;
  }
};

struct BridgeMutant {
  std::string name;
  std::string caught_by;
  std::function<L2AdapterPtr(ErasedConnectorPtr, NativeConnectorAdapterOptions)> make;
};

template <class Decorator>
L2AdapterPtr with_connector(ErasedConnectorPtr c, NativeConnectorAdapterOptions o) {
  return std::make_unique<NativeConnectorL2Adapter>(std::make_unique<Decorator>(std::move(c)),
                                                    std::move(o));
}

template <class Decorator>
L2AdapterPtr with_adapter(ErasedConnectorPtr c, NativeConnectorAdapterOptions o) {
  return std::make_unique<Decorator>(
      std::make_unique<NativeConnectorL2Adapter>(std::move(c), std::move(o)));
}

// Mutant: a bridge with no circuit breaker (its threshold dropped), which keeps sending every
// request to a store that refuses connections.
L2AdapterPtr without_breaker(ErasedConnectorPtr c, NativeConnectorAdapterOptions o) {
  o.breaker.threshold = 0;
  return std::make_unique<NativeConnectorL2Adapter>(std::move(c), std::move(o));
}

// Mutant: a breaker that ignores its configured cooldown (an hour instead), so that it never
// probes a store that came back.
L2AdapterPtr breaker_never_probes(ErasedConnectorPtr c, NativeConnectorAdapterOptions o) {
  o.breaker.cooldown = std::chrono::hours(1);
  o.breaker.max_cooldown = std::chrono::hours(2);
  return std::make_unique<NativeConnectorL2Adapter>(std::move(c), std::move(o));
}

std::vector<BridgeMutant> bridge_mutants() {
  return {
      {"failed_set_left_visible", "FailedSetLeavesNothingVisible", &with_connector<SwallowDeletes>},
      {"per_key_get_flags_ignored", "PerKeyMisses", &with_connector<DropGetFlags>},
      {"any_hit_is_all_hits", "PerKeyMisses", &with_adapter<AnyHitIsAllHits>},
      {"lock_leaked_on_duplicate_keys", "DuplicateKeysBalanceLocks", &with_adapter<DedupUnlock>},
      {"non_injective_keys", "DistinctKeysStayDistinct", &with_connector<ThreeFieldKeys>},
      {"no_circuit_breaker", "BreakerOpensProbesAndRecovers", &without_breaker},
      {"breaker_never_probes", "BreakerOpensProbesAndRecovers", &breaker_never_probes},
  };
}

class BridgeMutants : public ::testing::TestWithParam<BridgeMutant> {};

TEST_P(BridgeMutants, AreCaughtByTheirCheck) {
  const BridgeMutant& m = GetParam();
  BridgeRig rig = memory_rig(std::make_shared<MemoryStore>(), false);
  rig.make_bridge = m.make;
  for (const auto& check : storage_testing::all_bridge_checks()) {
    if (check.name != m.caught_by) continue;
    const std::string problem = check.run(rig);
    EXPECT_NE(problem, "") << m.name << " was not caught by " << m.caught_by;
    std::cout << "[ caught ] " << m.name << ": " << problem << "\n";
    return;
  }
  FAIL() << "no check named " << m.caught_by;
}

INSTANTIATE_TEST_SUITE_P(All, BridgeMutants, ::testing::ValuesIn(bridge_mutants()),
                         [](const auto& info) { return info.param.name; });

// --- Concurrency -----------------------------------------------------------------------------

// pop_completed_store_tasks() hands out every completed store, whichever thread asks: threads
// sharing an adapter collect the results here and each waits for its own id.
class SharedStoreResults {
 public:
  explicit SharedStoreResults(L2AdapterInterface& a) : a_(a) {}
  std::optional<L2StoreResult> wait(TaskId id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu_);
        for (auto& [tid, r] : a_.pop_completed_store_tasks()) {
          if (!results_.emplace(tid, r).second) ++duplicates_;
        }
        if (auto it = results_.find(id); it != results_.end()) return it->second;
      }
      wait_readable(a_.get_store_event_fd(), 2ms);
    }
    return std::nullopt;
  }
  int duplicates() const { return duplicates_; }

 private:
  L2AdapterInterface& a_;
  std::mutex mu_;
  std::map<TaskId, L2StoreResult> results_;
  int duplicates_ = 0;
};

TEST(NativeConnectorL2AdapterConcurrency, ThreadsStoreLookupLoadAndDeleteAtOnce) {
  Rig rig;
  auto& a = *rig.bridge;
  constexpr int kThreads = 4;
  constexpr int kRounds = 40;
  std::atomic<int> failures{0};
  SharedStoreResults results(a);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const ObjectKey mine = key(1000 * t + r);
        const ObjectKey shared = key(r % 5, "shared");
        const auto fill = static_cast<std::uint8_t>(t * 50 + r);
        auto stored =
            results.wait(a.submit_store_task({mine, shared}, {obj(32, fill), obj(16, 7)}));
        if (!stored || !stored->is_successful()) ++failures;
        Bitmap found = wait_lookup(a, a.submit_lookup_and_lock_task({mine}));
        if (found.to_string() != "1") ++failures;
        a.submit_unlock({mine});
        MemoryObjPtr dst = obj(32, 0);
        if (wait_load(a, a.submit_load_task({mine}, {dst})).to_string() != "1" ||
            !all_bytes(*dst, 32, fill)) {
          ++failures;
        }
        if (r % 3 == 0) a.delete_keys({mine});
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(results.duplicates(), 0);
  EXPECT_EQ(a.locked_key_count(), 0u);
  EXPECT_EQ(a.stats().pending_tasks, 0u);
  // Usage: every key not deleted, counted once.
  std::uint64_t expected = 5 * 16;
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRounds; ++r) expected += r % 3 == 0 ? 0 : 32;
  }
  EXPECT_EQ(a.get_usage().total_bytes_used, expected);
}

TEST(NativeConnectorL2AdapterConcurrency, CloseWhileThreadsSubmit) {
  for (int round = 0; round < 5; ++round) {
    Rig rig;
    auto& a = *rig.bridge;
    std::atomic<bool> go{false};
    std::atomic<int> lost{0};
    SharedStoreResults results(a);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) std::this_thread::yield();
        for (int i = 0; i < 200; ++i) {
          TaskId id = 0;
          try {
            id = a.submit_store_task({key(t * 1000 + i)}, {obj(16, 1)});
          } catch (const std::logic_error&) {
            return;  // closed
          }
          // Completed (success, or failure at close) exactly once; never lost.
          if (!results.wait(id)) ++lost;
        }
      });
    }
    go = true;
    std::this_thread::sleep_for(1ms);
    a.close();
    for (auto& th : threads) th.join();
    EXPECT_EQ(lost.load(), 0);
    EXPECT_EQ(results.duplicates(), 0);
  }
}

}  // namespace
}  // namespace lmcache::bridge
