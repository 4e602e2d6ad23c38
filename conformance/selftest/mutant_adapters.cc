// Adapter mutants: the knobs of the knob adapter (knob_adapter.h), each with the property that
// catches it and a witness scenario that proves the bug real.
#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "knob_adapter.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/fake_resp_server.h"
#include "lmcache/wrapper/adapter_factory.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

Impl adapter_impl(AdapterKnobs k) {
  Impl i;
  i.adapter = make_knob_adapter(k);
  return i;
}

// ---------------------------------------------------------------------------------------------
// Witness scenarios.

ObjectKey key(std::uint32_t i, std::int64_t rank = 0) {
  return ObjectKey(int_hash_to_bytes(i), "witness-model", rank);
}

MemoryObjPtr object(std::uint8_t fill, std::size_t bytes = 32) {
  MemoryObjPtr o = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8));
  std::memset(o->data(), fill, bytes);
  return o;
}

std::optional<L2StoreResult> store(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                                   const std::vector<MemoryObjPtr>& objs) {
  TaskId id = a.submit_store_task(keys, objs);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = a.pop_completed_store_tasks();
    if (done.count(id)) return done.at(id);
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::optional<Bitmap> load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& dsts) {
  TaskId id = a.submit_load_task(keys, dsts);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto b = a.query_load_result(id)) return b;
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::optional<Bitmap> lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& keys) {
  TaskId id = a.submit_lookup_and_lock_task(keys);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto b = a.query_lookup_and_lock_result(id)) return b;
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::uint64_t locked(const L2AdapterInterface& a) {
  return a.report_status().value("locked_key_count", std::uint64_t{0});
}

using AdapterWitness = std::function<std::string(L2AdapterInterface&)>;

std::function<std::string(const Impl&)> with_adapter(AdapterWitness w) {
  return [w](const Impl& i) {
    L2AdapterPtr a = i.adapter.make();
    std::string r = w(*a);
    try {
      a->close();
    } catch (...) {  // the second_close_throws mutant
    }
    return r;
  };
}

// The witness `w` over the mutant's make_over_resp_peer(), against a server that refuses every
// command with Redis's -OOM (maxmemory reached), the one failure an honest server gives.
std::function<std::string(const Impl&)> over_refusing_server(AdapterWitness w) {
  return [w](const Impl& i) {
    storage_testing::FakeRespServer server([](storage_testing::FakeRespServer::Conn& c) {
      for (auto r = c.request(); !r.empty(); r = c.request()) {
        if (!c.send("-OOM command not allowed when used memory > 'maxmemory'.\r\n")) return;
      }
    });
    L2AdapterPtr a = i.adapter.make_over_resp_peer(static_cast<std::uint16_t>(server.port()));
    std::string r = w(*a);
    a->close();
    return r;
  };
}

void add(std::vector<Mutant>& out, std::string name, BugClass c, std::string property,
         std::string bug, AdapterKnobs k, std::function<std::string(const Impl&)> witness) {
  out.push_back(mutant(std::move(name), ImplementationKind::kAdapter, c, std::move(property),
                       std::move(bug), adapter_impl(k), adapter_impl({}), std::move(witness)));
}

std::string store_then_check(L2AdapterInterface& a, std::size_t n) {
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> objs;
  for (std::uint32_t i = 0; i < n; ++i) {
    keys.push_back(key(i));
    objs.push_back(object(static_cast<std::uint8_t>(i)));
  }
  auto r = store(a, keys, objs);
  if (!r || !r->is_successful()) return "a store failed";
  return {};
}

}  // namespace

AdapterUnderTest decorated_mock_adapter() { return make_knob_adapter({}); }

void add_adapter_mutants(std::vector<Mutant>& out) {
  add(out, "load_fd_is_store_fd", BugClass::kFailureOrder, "DistinctEventFds",
      "the load fd is the store fd", {.same_fd = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        return a.get_load_event_fd() == a.get_store_event_fd() ? "load fd == store fd" : "";
      }));
  add(out, "unknown_load_id_throws", BugClass::kFailureOrder, "UnknownIdsGiveNone",
      "a load query of an id never issued throws", {.unknown_id_throws = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        try {
          a.query_load_result(999);
        } catch (const std::exception& e) {
          return std::string("threw: ") + e.what();
        }
        return {};
      }));
  add(out, "lookup_answers_twice", BugClass::kFailureOrder, "OneShotResults",
      "lookup results are handed out again", {.answer_twice = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId id = a.submit_lookup_and_lock_task({key(1)});
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (!a.query_lookup_and_lock_result(id) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        return a.query_lookup_and_lock_result(id) ? "a lookup answered twice" : "";
      }));
  add(out, "load_fd_never_signalled", BugClass::kFailureOrder, "EachKindSignalsItsFd",
      "the load fd is a fd nobody signals", {.silent_load_fd = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        load(a, {key(1)}, {object(0)});
        return wait_readable(a.get_load_event_fd(), 200ms) ? "" : "a load never signalled";
      }));
  add(out, "store_reports_zero_bytes", BugClass::kData, "StoreReportsBytes",
      "stores report 0 bytes transferred", {.zero_bytes = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto r = store(a, {key(1)}, {object(1)});
        return r && r->bytes_transferred() == 32 ? ""
                                                 : "a store of 32 new bytes reported another count";
      }));
  add(out, "lookup_reports_absent_keys", BugClass::kData, "LookupReportsPresence",
      "lookups report every key present", {.lookup_all_present = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto b = lookup(a, {key(1)});
        return b && !b->test(0) ? "" : "an absent key was reported present";
      }));
  add(out, "load_ignores_bitmap", BugClass::kData, "PartialLoadBitmap",
      "loads report every key loaded", {.load_ignores_bitmap = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto b = load(a, {key(1)}, {object(0)});
        return b && !b->test(0) ? "" : "an absent key was reported loaded";
      }));
  add(out, "lookup_does_not_lock", BugClass::kState, "LookupLocks",
      "lookup hits are unlocked at once", {.lookup_does_not_lock = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        lookup(a, {key(0)});
        std::this_thread::sleep_for(20ms);
        return locked(a) == 1 ? "" : "a lookup hit holds no lock";
      }));
  add(out, "usage_does_not_match", BugClass::kData, "UsageMatchesStoredBytes",
      "usage reports twice the bytes held", {.usage_doubled = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        return a.get_usage().total_bytes_used == 32 ? "" : "32 stored bytes, other usage";
      }));
  add(out, "listeners_not_called", BugClass::kData, "ListenersCalled",
      "register_listener() drops the listener", {.drops_listeners = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        struct Counting : L2AdapterListener {
          std::atomic<int> stored{0};
          void on_l2_keys_stored(const std::vector<ObjectKey>& k,
                                 const std::vector<std::uint64_t>&) override {
            stored += static_cast<int>(k.size());
          }
          void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {}
          void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                                  const std::vector<std::uint64_t>&) override {}
        };
        auto l = std::make_shared<Counting>();
        a.register_listener(l);
        store_then_check(a, 1);
        return l->stored == 1 ? "" : "the listener saw no store";
      }));
  add(out, "delete_does_nothing", BugClass::kState, "StatefulModel", "delete_keys() is a no-op",
      {.delete_is_noop = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        a.delete_keys({key(0)});
        auto b = lookup(a, {key(0)});
        return b && !b->test(0) ? "" : "a deleted key is still found";
      }));
  add(out, "second_close_throws", BugClass::kFailureOrder, "CloseIsIdempotent",
      "a second close() throws", {.close_throws_twice = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        a.close();
        try {
          a.close();
        } catch (const std::exception& e) {
          return std::string("a second close() threw: ") + e.what();
        }
        return {};
      }));
  add(out, "adapter_close_leaks_fd", BugClass::kState, "CloseReleasesResources",
      "close() leaves an eventfd open", {.close_leaks_fd = true}, [](const Impl& i) -> std::string {
        ProcessResources before = ProcessResources::take();
        L2AdapterPtr a = i.adapter.make();
        a->close();
        std::string leak = resources_left_over(before, 1s);
        return leak.empty() ? "" : "after close(): " + leak;
      });

  // Realistic bugs.
  add(out, "bitmap_in_one_byte", BugClass::kSizes, "PartialLoadBitmap",
      "result bitmaps are built in a uint8_t: keys past the 8th are never reported",
      {.bitmap_in_one_byte = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 9);
        std::vector<ObjectKey> keys;
        std::vector<MemoryObjPtr> dsts;
        for (std::uint32_t i = 0; i < 9; ++i) {
          keys.push_back(key(i));
          dsts.push_back(object(0));
        }
        auto b = load(a, keys, dsts);
        return b && b->all() ? ""
                             : "a load of 9 stored keys gave " +
                                   (b ? b->to_string() : std::string("nothing"));
      }));
  add(out, "stores_whole_buffer", BugClass::kSizes, "StoreReportsBytes",
      "stores physical_size() bytes of a narrowed object instead of its size()",
      {.stores_whole_buffer = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(7, 64);
        o->set_used_size(10);
        auto r = store(a, {key(1)}, {o});
        return r && r->bytes_transferred() == 10
                   ? ""
                   : "an object narrowed to 10 bytes stored " +
                         std::to_string(r ? r->bytes_transferred() : 0);
      }));
  add(out, "load_leaves_size_unset", BugClass::kSizes, "PartialLoadBitmap",
      "a load leaves the destination's size() at its capacity instead of the stored length",
      {.load_leaves_size_unset = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(7, 64);
        o->set_used_size(10);
        store(a, {key(1)}, {o});
        MemoryObjPtr d = object(0, 64);
        load(a, {key(1)}, {d});
        return d->size() == 10
                   ? ""
                   : "a load of 10 stored bytes left size() " + std::to_string(d->size());
      }));
  add(out, "key_ignores_kv_rank", BugClass::kSizes, "LookupReportsPresence",
      "builds its storage key from hash, model, group and salt, not kv_rank",
      {.key_ignores_kv_rank = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store(a, {key(1, 0)}, {object(1)});
        auto b = lookup(a, {key(1, 3)});
        return b && !b->test(0) ? "" : "a key of another kv_rank was found";
      }));
  add(out, "racy_store_ids", BugClass::kConcurrency, "ConcurrentSubmitters",
      "store ids come from a read-then-write counter", {.racy_store_ids = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        return submits_share_an_id(
                   [&](std::uint32_t t) { return a.submit_store_task({key(t)}, {object(1)}); })
                   ? "repeated store ids"
                   : "";
      }));
  add(out, "pop_hands_out_twice", BugClass::kConcurrency, "ConcurrentSubmitters",
      "pop copies the completed results, then erases them in a second step: two threads "
      "popping at once both get them",
      {.pop_hands_out_twice = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        for (int round = 0; round < 200; ++round) {
          a.submit_store_task({key(static_cast<std::uint32_t>(round))}, {object(1)});
          std::this_thread::sleep_for(1ms);
          std::map<TaskId, L2StoreResult> got[2];
          std::latch start(2);
          std::thread t0([&] {
            start.arrive_and_wait();
            got[0] = a.pop_completed_store_tasks();
          });
          std::thread t1([&] {
            start.arrive_and_wait();
            got[1] = a.pop_completed_store_tasks();
          });
          t0.join();
          t1.join();
          for (auto& [id, r] : got[0]) {
            if (got[1].count(id)) return "a store result was handed to both poppers";
          }
        }
        return {};
      }));
  add(out, "racy_usage_counter", BugClass::kConcurrency, "ConcurrentSubmitters",
      "keeps its own usage counter and subtracts deletes read-then-write",
      {.racy_usage_counter = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        for (int round = 0; round < 50; ++round) {
          std::vector<ObjectKey> keys;
          std::vector<MemoryObjPtr> objs;
          for (std::uint32_t i = 0; i < 8; ++i) {
            keys.push_back(key(100 * static_cast<std::uint32_t>(round) + i));
            objs.push_back(object(1));
          }
          store(a, keys, objs);
          std::latch start(4);
          std::vector<std::thread> pool;
          for (std::size_t t = 0; t < 4; ++t) {
            pool.emplace_back([&, t] {
              start.arrive_and_wait();
              a.delete_keys({keys[2 * t], keys[2 * t + 1]});
            });
          }
          for (auto& th : pool) th.join();
          if (a.get_usage().total_bytes_used != 0) {
            return "after 4 threads deleted every key at once, usage reads " +
                   std::to_string(a.get_usage().total_bytes_used);
          }
        }
        return {};
      }));
  add(out, "lock_leaked_on_duplicate_keys", BugClass::kFailureOrder, "LookupLocks",
      "a key twice in one lookup takes two locks, twice in one unlock releases one",
      {.unlock_dedups_keys = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        lookup(a, {key(0), key(0)});
        a.submit_unlock({key(0), key(0)});
        std::this_thread::sleep_for(20ms);
        return locked(a) == 0 ? "" : "a lock is left after unlocking both lookups";
      }));
  add(out, "usage_counted_at_submit", BugClass::kFailureOrder, "UsageMatchesStoredBytes",
      "decides at submit whether a key is new: two stores of one key in flight count it twice",
      {.usage_counted_at_submit = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId s1 = a.submit_store_task({key(1)}, {object(1)});
        TaskId s2 = a.submit_store_task({key(1)}, {object(1)});
        std::map<TaskId, L2StoreResult> done;
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (done.size() < 2 && std::chrono::steady_clock::now() < deadline) {
          for (auto& kv : a.pop_completed_store_tasks()) done.insert(kv);
          std::this_thread::sleep_for(200us);
        }
        (void)s1;
        (void)s2;
        return a.get_usage().total_bytes_used == 32
                   ? ""
                   : "one 32-byte key, usage " + std::to_string(a.get_usage().total_bytes_used);
      }));
  add(out, "keeps_caller_objects", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "keeps every object it was given in a history until close()", {.keeps_caller_objects = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(1);
        store(a, {key(1)}, {o});
        std::this_thread::sleep_for(20ms);
        return o.use_count() > 1 ? "a stored object is still referenced after the store" : "";
      }));
  add(out, "thread_per_load", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "starts a helper thread per load and joins them only in close()", {.thread_per_load = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        load(a, {key(1)}, {object(0)});
        const std::size_t before = thread_count();
        for (int i = 0; i < 10; ++i) load(a, {key(1)}, {object(0)});
        // Settled: a finished helper thread can stay listed in /proc for a moment.
        const std::size_t after =
            wait_for_resources({std::numeric_limits<std::size_t>::max(), before}).threads;
        return after > before ? "10 loads left " + std::to_string(after - before) + " threads" : "";
      }));
  add(out, "flaky_every_40th_load", BugClass::kLuck, "PartialLoadBitmap",
      "one load in 40 (counted across the process) drops its first hit",
      {.flaky_every_40th_load = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        for (int i = 0; i < 45; ++i) {
          auto b = load(a, {key(0)}, {object(0)});
          if (!b || !b->test(0)) return "load " + std::to_string(i) + " of a stored key missed it";
        }
        return {};
      }));
  const MemoryLayoutDesc lend_layout = MemoryLayoutDesc::single({256}, DType::kUInt8);
  add(out, "lends_first_buffer_again", BugClass::kState, "LentBufferWrittenOnce",
      "one lend ring per buffer size whose index never advances: every later lend of a size "
      "hands out the first buffer of that size again",
      {.lends_first_buffer_again = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        auto first = a.lend_store_buffers({key(1)}, lend_layout);
        auto second = a.lend_store_buffers({key(2)}, lend_layout);
        if (first.empty() || second.empty()) return {};
        return first[0]->data() == second[0]->data() ? "the same memory was lent twice" : "";
      }));
  add(out, "lent_bytes_only_grow", BugClass::kState, "LentBufferReleasedOnFailure",
      "lent_bytes_outstanding() adds every lend and never takes a returned buffer off",
      {.lent_bytes_only_grow = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        a.lend_store_buffers({key(1)}, lend_layout).clear();  // dropped unsubmitted
        return a.lent_bytes_outstanding() == 0
                   ? ""
                   : "a dropped buffer still counts " + std::to_string(a.lent_bytes_outstanding()) +
                         " lent bytes";
      }));
  add(out, "views_recycled_on_delete", BugClass::kState, "LoadViewsHoldStoredBytes",
      "hands out views of storage memory that a delete recycles (zeroes) while the views are "
      "still held",
      {.views_recycled_on_delete = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        if (store_then_check(a, 2) != "") return {};
        const TaskId id = a.submit_load_view_task({key(1)});
        std::optional<L2LoadViews> r;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (!(r = a.query_load_view_result(id)) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        if (!r || !r->views.at(0)) return {};
        MemoryObjPtr view = r->views[0];
        a.delete_keys({key(1)});
        return view->data()[0] == std::byte{1} ? "" : "a view changed when its key was deleted";
      }));
  add(out, "lent_keys_visible", BugClass::kFailureOrder, "LentBufferInvisibleBeforeStore",
      "lookups report a key present as soon as a buffer is lent for it, before any store",
      {.lent_keys_visible = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        auto lent = a.lend_store_buffers({key(1)}, lend_layout);
        auto b = lookup(a, {key(1)});
        return b && b->test(0) ? "a key was present before its store" : "";
      }));

  // Issue 25's classes: object sizes past 64 KiB and of 0 bytes, results around close(), ids
  // past 2^16.
  add(out, "truncates_objects_past_64k", BugClass::kSizes, "PartialLoadBitmap",
      "each object is stored in a fixed 64 KiB slot: the bytes of a KV chunk past it are dropped",
      {.truncates_past_64k = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr big = object(7, 70000);
        if (auto r = store(a, {key(1)}, {big}); !r || !r->is_successful()) return {};
        MemoryObjPtr dst = object(0, 70000);
        auto b = load(a, {key(1)}, {dst});
        return b && b->test(0) && dst->size() == 70000 && dst->data()[69999] == std::byte{7}
                   ? ""
                   : "a 70,000-byte object did not load back whole";
      }));
  add(out, "empty_values_read_as_missing", BugClass::kSizes, "LookupReportsPresence",
      "a stored 0-byte object reads as \"no such key\" on lookup, as a client that takes an "
      "empty reply for a missing one",
      {.empty_values_missing = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        if (auto r = store(a, {key(1)}, {object(0, 0)}); !r || !r->is_successful()) return {};
        auto b = lookup(a, {key(1)});
        return b && b->test(0) ? "" : "a stored 0-byte object was reported absent";
      }));
  add(out, "adapter_drops_results_at_close", BugClass::kFailureOrder, "CloseIsIdempotent",
      "close() discards store and load results that completed before it and were not taken",
      {.drops_results_at_close = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId id = a.submit_store_task({key(1)}, {object(1)});
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (consume_fd(a.get_store_event_fd()) == 0 &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        a.close();
        return a.pop_completed_store_tasks().count(id) ? ""
                                                       : "a completed store was dropped by close()";
      }));
  add(out, "adapter_load_ids_16_bit", BugClass::kState, "TaskIdsNeverReused",
      "load ids are kept in 16 bits: the load 65,536 tasks later takes an early load's id",
      {.load_ids_16_bit = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        const TaskId first = a.submit_load_task({key(9)}, {object(0)});
        for (int i = 0; i < 65535; ++i) (void)a.submit_load_task({key(9)}, {object(0)});
        const TaskId later = a.submit_load_task({key(9)}, {object(0)});
        return later == first ? "a load 65,536 tasks later got the first load's id" : "";
      }));
  // Found by vendors' implementations written without seeing the kit.
  add(out, "adapter_load_ids_own_counter", BugClass::kState, "OneShotResults",
      "numbers loads 0, 1, ... with a counter of their own: the first store and the first load "
      "share id 0",
      {.load_ids_own_counter = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        const TaskId s = a.submit_store_task({key(1)}, {object(1)});
        const TaskId l = a.submit_load_task({key(2)}, {object(0)});
        return s == l ? "a store and a load both got id " + std::to_string(s) : "";
      }));
  add(out, "load_result_after_notify", BugClass::kFailureOrder, "EachKindSignalsItsFd",
      "the worker notifies the load fd, then files the result: a consumer woken by the fd "
      "finds nothing",
      {.load_result_after_notify = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        const TaskId id = a.submit_load_task({key(0)}, {object(0)});
        if (!wait_readable(a.get_load_event_fd(), 5s)) return {};
        return a.query_load_result(id) ? "" : "the load fd was signalled before its result";
      }));
  add(out, "unlock_releases_every_lock", BugClass::kFailureOrder, "LookupLocks",
      "an unlock of a key releases every lock it holds, not one",
      {.unlock_releases_every_lock = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        lookup(a, {key(0)});
        lookup(a, {key(0)});
        a.submit_unlock({key(0)});
        std::this_thread::sleep_for(20ms);
        return locked(a) == 1 ? "" : "a key locked twice and unlocked once holds no lock";
      }));
  add(out, "config_ignores_unknown_keys", BugClass::kData, "ConfigTyposRejected",
      "the adapter type reads the config keys it knows and ignores the rest: a misspelt "
      "\"max_size_g\" leaves the default in place and nothing says so",
      {.config_ignores_unknown_keys = true}, [](const Impl& i) -> std::string {
        Json c = *i.adapter.config;
        c["max_size_g"] = 2;
        try {
          create_registered_l2_adapter(c)->close();
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a config with the misspelt key \"max_size_g\" built an adapter";
      });
  add(out, "config_flag_kind_unchecked", BugClass::kData, "ConfigValueKindsChecked",
      "the adapter type refuses unknown keys but reads its flag as `is_boolean() && get<bool>()`: "
      "\"lend_load_views\": \"yes\" (or an object) silently turns load views off",
      {.config_flag_kind_unchecked = true}, [](const Impl& i) -> std::string {
        Json c = *i.adapter.config;
        c["lend_load_views"] = "yes";
        try {
          create_registered_l2_adapter(c)->close();
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a config with \"lend_load_views\": \"yes\" built an adapter";
      });
  add(out, "damaged_object_loads", BugClass::kData, "StoredDamageContained",
      "a load of a key the adapter stored is reported loaded whatever the store gave back: a file "
      "cut short is padded with what the buffer held",
      {.damaged_object_loads = true}, [](const Impl& i) -> std::string {
        DamageableAdapter d = i.adapter.make_damageable();
        std::string r;
        if (store_then_check(*d.adapter, 1).empty() && d.damage(StoredDamage::kTruncated) == 1) {
          auto bits = load(*d.adapter, {key(0)}, {object(0xEE)});
          if (bits && bits->test(0)) r = "a key whose file was cut in half was reported loaded";
        }
        d.adapter->close();
        return r;
      });
  add(out, "capacity_kept_after_delete", BugClass::kData, "CapacityHonoured",
      "the adapter admits stores against a counter of its own that no delete lowers, while its "
      "usage follows the store: once full, every later store fails",
      {.capacity_kept_after_delete = true}, [](const Impl& i) -> std::string {
        L2AdapterPtr a = i.adapter.make_with_capacity(2 * object(0)->size());
        std::string r;
        const auto first = store(*a, {key(0), key(1)}, {object(1), object(2)});
        if (first && first->is_successful()) {
          a->delete_keys({key(0), key(1)});
          const auto again = store(*a, {key(2)}, {object(3)});
          if (again && !again->is_successful()) {
            r = "a store into an adapter emptied by a delete was refused for room";
          }
        }
        a->close();
        return r;
      });
  add(out, "config_stage_keys_unchecked", BugClass::kData, "ConfigTyposRejected",
      "a composite serde in the adapter's \"serde\" object refuses unknown keys of its own but "
      "drops whatever else each of its \"stages\" holds: a misspelt \"fp8_dtpye\" in a stage "
      "builds with the default format",
      {.config_stage_keys_unchecked = true}, [](const Impl& i) -> std::string {
        Json c = *i.adapter.config;
        c["serde"]["stages"][0]["fp8_dtpye"] = "float8_e5m2";
        try {
          AdapterContext ctx;
          ctx.l1_manager = std::make_shared<L1Manager>(16u << 20);
          create_l2_adapter(c, ctx)->close();
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a config with the misspelt key \"fp8_dtpye\" in a stage built an adapter";
      });
  // Hostile peers: a store the server refused.
  add(out, "store_failure_reported_done", BugClass::kData, "HostilePeerFailsCleanly",
      "a store is reported done whatever the server answered (a SET whose reply is never read): "
      "an -OOM refusal under maxmemory counts as stored",
      {.store_failure_reported_done = true},
      over_refusing_server([](L2AdapterInterface& a) -> std::string {
        auto r = store(a, {key(1)}, {object(1)});
        return r && r->is_successful() ? "a store the server refused with -OOM was reported done"
                                       : "";
      }));
  add(out, "failed_store_never_completes", BugClass::kFailureOrder, "HostilePeerFailsCleanly",
      "a store the server answers with an error never completes: the worker that met the error "
      "exits with its task (as LMCache's own connector does when its server is unreachable)",
      {.failed_store_never_completes = true},
      over_refusing_server([](L2AdapterInterface& a) -> std::string {
        return store(a, {key(1)}, {object(1)}) ? "" : "a store the server refused never completed";
      }));
}

}  // namespace lmcache::conformance::selftest
