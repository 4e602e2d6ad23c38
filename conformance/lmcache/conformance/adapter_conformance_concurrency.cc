// AdapterConformance properties with many tasks: threads submitting at once (callers submit
// concurrently: the store and prefetch controllers share an adapter), and hundreds of tasks on
// one adapter, whose fds, threads and references to caller buffers must not grow with them.
#include <algorithm>
#include <cstring>
#include <deque>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/task_id_stream.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

constexpr int kThreads = 4;

// The object stored under key k of a run, and what a load of it must give.
struct Objects {
  const AdapterUnderTest* aut;
  MemoryLayoutDesc layout;
  std::uint64_t seed;

  MemoryObjPtr content(std::size_t k) const {
    MemoryObjPtr obj = make_object(layout);
    fill_bytes(obj->physical_bytes(), seed * 131 + k + 1);
    return obj;
  }
  MemoryObjPtr expected(std::size_t k) const { return expected_load_of(*aut, *content(k)); }
};

// The objects of a case whose threads store at once: a generated layout of at most 2 groups and
// 2^12 elements, none empty, and a generated seed (call inside a RapidCheck property).
Objects gen_thread_objects(const AdapterUnderTest& aut) {
  SizeLimits limits = size_limits();
  limits.max_groups = 2;
  limits.max_group_elements = std::min<std::size_t>(limits.max_group_elements, 1u << 12);
  limits.max_total_elements = limits.max_group_elements;
  limits.allow_empty_groups = false;
  return Objects{&aut, *gen_layout(aut.object_dtypes, limits), *gen_seed()};
}

// Runs body(t) on kThreads threads released together; the first exception's text, or "".
template <class Body>
std::string on_threads(Body body) {
  std::vector<std::string> errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(static_cast<std::size_t>(t));
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (!e.empty()) return e;
  }
  return {};
}

}  // namespace

Verdict ConcurrentSubmitters(const AdapterUnderTest& aut) {
  return run_rc_property(
      rc_id("ConcurrentSubmitters", aut), {.max_success = 6, .shrink = false}, [&] {
        const Objects objects = gen_thread_objects(aut);
        // Each thread owns `per` keys, stored in `stores` tasks; the keys of the family that no
        // thread stores are the absent ones.
        const std::size_t per =
            *gen_batch_size(std::min<std::size_t>(current_profile().max_batch, 24));
        const std::size_t stores = std::min<std::size_t>(per, 3);
        std::vector<ObjectKey> keys = key_family(objects.seed, kThreads * per + kThreads);
        auto key_of = [&](std::size_t t, std::size_t i) { return keys[t * per + i]; };
        auto absent_key = [&](std::size_t t) { return keys[kThreads * per + t]; };
        L2AdapterPtr adapter = aut.make();
        require(adapter != nullptr, "the adapter factory returned null");
        Closer closer{adapter.get()};
        L2AdapterInterface& a = *adapter;
        const std::string shape = std::to_string(kThreads) + " threads, " + std::to_string(per) +
                                  " keys each, objects " + objects.layout.to_string();

        // Phase 1: every thread stores its keys in `stores` tasks; two of them also pop results.
        std::vector<std::vector<TaskId>> store_ids(kThreads);
        std::mutex popped_mu;
        std::map<TaskId, L2StoreResult> popped;
        std::vector<TaskId> popped_twice;
        std::atomic<bool> submitted_all{false};
        std::atomic<int> submitters_left{kThreads};
        std::string error = on_threads([&](std::size_t t) {
          for (std::size_t s = 0; s < stores; ++s) {
            std::vector<ObjectKey> ks;
            std::vector<MemoryObjPtr> objs;
            for (std::size_t i = s; i < per; i += stores) {
              ks.push_back(key_of(t, i));
              objs.push_back(objects.content(t * per + i));
            }
            store_ids[t].push_back(a.submit_store_task(ks, objs));
          }
          if (--submitters_left == 0) submitted_all = true;
          if (t >= 2) return;
          // A popper: until every store is in, pop and keep what comes.
          auto deadline = wait_deadline(result_timeout());
          while (!deadline.expired()) {
            std::map<TaskId, L2StoreResult> got = a.pop_completed_store_tasks();
            {
              std::lock_guard lock(popped_mu);
              for (auto& [id, r] : got) {
                if (!popped.emplace(id, r).second) popped_twice.push_back(id);
              }
              if (submitted_all && popped.size() >= kThreads * stores) break;
            }
            std::this_thread::yield();  // two poppers as close together as they get
          }
        });
        require(error.empty(), "a concurrent submit threw: " + error);
        std::set<TaskId> ids;
        for (auto& list : store_ids) {
          for (TaskId id : list) {
            require(ids.insert(id).second, "two stores submitted at once got the same id " +
                                               std::to_string(id) + " (" + shape + ")");
          }
        }
        std::vector<TaskId> all(ids.begin(), ids.end());
        std::vector<TaskId> missing = pop_stores_until(a, all, &popped);
        require(popped_twice.empty(),
                "store " +
                    (popped_twice.empty() ? std::string() : std::to_string(popped_twice[0])) +
                    " was handed out twice to two threads popping at once (" + shape + ")");
        require(missing.empty(), std::to_string(missing.size()) + " of " +
                                     std::to_string(all.size()) +
                                     " stores submitted at once never came out of "
                                     "pop_completed_store_tasks() (" +
                                     shape + ")");
        for (auto& [id, r] : popped) {
          require(ids.count(id), "pop_completed_store_tasks() returned id " + std::to_string(id) +
                                     ", which no store was given");
          require(r.is_successful(), "store " + std::to_string(id) + " of " + shape + " failed");
        }
        require(collect_notifies(a.get_store_event_fd(), all.size()) == all.size(),
                std::to_string(all.size()) +
                    " stores submitted at once did not give one store notify "
                    "each");
        if (aut.capabilities.reports_usage) {
          std::uint64_t want = 0;
          for (std::size_t t = 0; t < kThreads; ++t) {
            want += per * stored_size_of(aut, objects.layout, objects.layout.total_bytes());
          }
          require(a.get_usage().total_bytes_used == want,
                  "after stores submitted at once, get_usage().total_bytes_used = " +
                      std::to_string(a.get_usage().total_bytes_used) + ", the keys hold " +
                      std::to_string(want) + " (" + shape + ")");
        }

        // Phase 2: every thread looks up and loads its keys plus an absent one, at once.
        struct Issued {
          TaskId lookup = 0;
          TaskId load = 0;
          std::vector<MemoryObjPtr> dsts;
        };
        std::vector<Issued> issued(kThreads);
        error = on_threads([&](std::size_t t) {
          std::vector<ObjectKey> ks;
          for (std::size_t i = 0; i < per; ++i) ks.push_back(key_of(t, i));
          ks.push_back(absent_key(t));
          for (std::size_t i = 0; i < ks.size(); ++i)
            issued[t].dsts.push_back(make_object(objects.layout));
          issued[t].lookup = a.submit_lookup_and_lock_task(ks);
          issued[t].load = a.submit_load_task(ks, issued[t].dsts);
        });
        require(error.empty(), "a concurrent submit threw: " + error);
        const Bitmap want(per + 1, per);  // every own key, not the absent one
        std::set<TaskId> lookup_ids, load_ids;
        for (std::size_t t = 0; t < kThreads; ++t) {
          require(lookup_ids.insert(issued[t].lookup).second,
                  "two lookups submitted at once got the same id");
          require(load_ids.insert(issued[t].load).second,
                  "two loads submitted at once got the same id");
        }
        for (std::size_t t = 0; t < kThreads; ++t) {
          auto bits = poll_until([&] { return a.query_lookup_and_lock_result(issued[t].lookup); },
                                 result_timeout());
          require(bits.has_value(), "a lookup submitted with 3 others never completed");
          require(*bits == want, "thread " + std::to_string(t) + "'s lookup of its " +
                                     std::to_string(per) + " stored keys and one absent key gave " +
                                     bits->to_string() + " (" + shape + ")");
          auto loaded =
              poll_until([&] { return a.query_load_result(issued[t].load); }, result_timeout());
          require(loaded.has_value(), "a load submitted with 3 others never completed");
          require(*loaded == want, "thread " + std::to_string(t) + "'s load of its " +
                                       std::to_string(per) +
                                       " stored keys and one absent key gave " +
                                       loaded->to_string() + " (" + shape + ")");
          for (std::size_t i = 0; i < per; ++i) {
            MemoryObjPtr w = objects.expected(t * per + i);
            require(same_bytes(issued[t].dsts[i]->data(), w->data(), w->size()),
                    "thread " + std::to_string(t) + "'s load of key " + std::to_string(i) +
                        " did not give its own bytes back (" + shape + ")");
          }
        }
        require(collect_notifies(a.get_lookup_and_lock_event_fd(), kThreads) == kThreads,
                "4 lookups submitted at once did not give one lookup notify each");
        require(collect_notifies(a.get_load_event_fd(), kThreads) == kThreads,
                "4 loads submitted at once did not give one load notify each");

        // Phase 3: every thread unlocks and deletes its keys at once.
        error = on_threads([&](std::size_t t) {
          std::vector<ObjectKey> ks;
          for (std::size_t i = 0; i < per; ++i) ks.push_back(key_of(t, i));
          a.submit_unlock(ks);
          if (aut.capabilities.supports_delete) a.delete_keys(ks);
        });
        require(error.empty(), "a concurrent unlock or delete threw: " + error);
        if (aut.capabilities.reports_lock_count) {
          auto zero = poll_until(
              [&]() -> std::optional<bool> {
                auto n = locked_key_count(a);
                return n && *n == 0 ? std::optional<bool>(true) : std::nullopt;
              },
              settle_timeout());
          require(zero.has_value(),
                  "after every thread unlocked its keys at once, "
                  "report_status().locked_key_count = " +
                      std::to_string(locked_key_count(a).value_or(0)) + " (" + shape + ")");
        }
        if (aut.capabilities.reports_usage && aut.capabilities.supports_delete) {
          require(a.get_usage().total_bytes_used == 0,
                  "after every thread deleted its keys at once, get_usage().total_bytes_used = " +
                      std::to_string(a.get_usage().total_bytes_used) + " (" + shape + ")");
        }
      });
}

// Rounds each thread of ConcurrentFirstUse runs after its adapter's first use.
constexpr std::size_t kBusyRounds = 8;

Verdict ConcurrentFirstUse(const AdapterUnderTest& aut) {
  // kThreads adapters, all made before any is used, each used first by a thread of its own, all
  // released together: whatever an implementation sets up on its first operation -- a
  // process-wide pool, connection or registry behind a hand-rolled "if not yet initialized" --
  // is set up by several threads at once. The runner runs each property in a fresh process
  // (and skips its load-time store there, store_preflight.h), so the first case is the
  // process's first use; a library that tears its globals down when its last instance closes
  // races again in every case.
  return run_rc_property(
      rc_id("ConcurrentFirstUse", aut), {.max_success = 4, .shrink = false}, [&] {
        const Objects objects = gen_thread_objects(aut);
        const std::size_t per =
            *gen_batch_size(std::min<std::size_t>(current_profile().max_batch, 8));
        const std::vector<ObjectKey> keys = key_family(objects.seed, kThreads * per + kThreads);
        const std::vector<ObjectKey> busy_keys =
            key_family(objects.seed + 1, kThreads * kBusyRounds);
        const std::string shape = std::to_string(kThreads) + " adapters, " + std::to_string(per) +
                                  " keys each, objects " + objects.layout.to_string();
        std::vector<L2AdapterPtr> adapters;
        std::vector<std::unique_ptr<Closer>> closers;
        for (int t = 0; t < kThreads; ++t) {
          adapters.push_back(aut.make());
          require(adapters.back() != nullptr, "the adapter factory returned null");
          closers.push_back(std::unique_ptr<Closer>(new Closer{adapters.back().get()}));
        }
        // Each thread: its adapter's first operation is a store of its keys, then a lookup of
        // them and an absent key, then a load of the same. Failures are thrown as text (the
        // case's require() must not leave a thread).
        const std::string error = on_threads([&](std::size_t t) {
          L2AdapterInterface& a = *adapters[t];
          const std::string who = "thread " + std::to_string(t) + " (" + shape + ")";
          auto check = [&](bool ok, const std::string& what) {
            if (!ok) throw std::runtime_error(who + ": " + what);
          };
          std::vector<ObjectKey> ks(keys.begin() + static_cast<std::ptrdiff_t>(t * per),
                                    keys.begin() + static_cast<std::ptrdiff_t>((t + 1) * per));
          std::vector<MemoryObjPtr> objs;
          for (std::size_t i = 0; i < per; ++i) objs.push_back(objects.content(t * per + i));
          const TaskId s = a.submit_store_task(ks, objs);
          std::map<TaskId, L2StoreResult> got;
          check(pop_stores_until(a, {s}, &got).empty(),
                "the first store of a fresh adapter never completed");
          check(got.at(s).is_successful(), "the first store of a fresh adapter failed");
          ks.push_back(keys[kThreads * per + t]);  // absent
          const Bitmap want(per + 1, per);
          const TaskId k = a.submit_lookup_and_lock_task(ks);
          auto bits =
              poll_until([&] { return a.query_lookup_and_lock_result(k); }, result_timeout());
          check(bits.has_value(), "a lookup after the first store never completed");
          check(*bits == want, "a lookup of the " + std::to_string(per) +
                                   " keys it stored first and an absent one gave " +
                                   bits->to_string());
          a.submit_unlock(std::vector<ObjectKey>(ks.begin(), ks.end() - 1));
          std::vector<MemoryObjPtr> dsts;
          for (std::size_t i = 0; i <= per; ++i) dsts.push_back(make_object(objects.layout));
          const TaskId l = a.submit_load_task(ks, dsts);
          auto loaded = poll_until([&] { return a.query_load_result(l); }, result_timeout());
          check(loaded.has_value(), "a load after the first store never completed");
          check(*loaded == want, "a load of the " + std::to_string(per) +
                                     " keys it stored first and an absent one gave " +
                                     loaded->to_string());
          for (std::size_t i = 0; i < per; ++i) {
            MemoryObjPtr w = objects.expected(t * per + i);
            check(same_bytes(dsts[i]->data(), w->data(), w->size()),
                  "the load of key " + std::to_string(i) + " did not give its own bytes back");
          }
          if (aut.capabilities.supports_delete) {
            a.delete_keys(std::vector<ObjectKey>(ks.begin(), ks.end() - 1));
          }
          // Then the instances stay busy at once: rounds of a store, a load and a delete of one
          // key each (what instances share -- a map, a pool -- is used by every thread at once).
          for (std::size_t r = 0; r < kBusyRounds; ++r) {
            const std::size_t at = r % per;
            const ObjectKey key = busy_keys[t * kBusyRounds + r];
            const TaskId bs = a.submit_store_task({key}, {objs[at]});
            std::map<TaskId, L2StoreResult> stored;
            check(pop_stores_until(a, {bs}, &stored).empty() && stored.at(bs).is_successful(),
                  "store " + std::to_string(r + 1) + " of " + std::to_string(kBusyRounds) +
                      " after the first use did not succeed");
            MemoryObjPtr back = make_object(objects.layout);
            const TaskId bl = a.submit_load_task({key}, {back});
            auto hit = poll_until([&] { return a.query_load_result(bl); }, result_timeout());
            MemoryObjPtr w = objects.expected(t * per + at);
            check(hit.has_value() && hit->test(0) && same_bytes(back->data(), w->data(), w->size()),
                  "the load of store " + std::to_string(r + 1) + " of " +
                      std::to_string(kBusyRounds) +
                      " after the first use did not give its own bytes back");
            if (aut.capabilities.supports_delete) a.delete_keys({key});
          }
        });
        require(error.empty(), "adapters used for the first time at once: " + error);
      });
}

Verdict ResourcesBoundedOverManyTasks(const AdapterUnderTest& aut) {
  // Rounds of: store 4 keys, load them, look them up, unlock them, delete them. The counts are
  // taken after the first rounds, halfway and at the end: a pool that grows to its size does so
  // early (or, if it grew late, holds still over the rounds run to confirm); a leak keeps
  // growing.
  const std::size_t rounds = std::max<std::size_t>(8, current_profile().resource_tasks / 4);
  constexpr std::size_t kKeys = 4;
  L2AdapterPtr adapter = aut.make();
  if (!adapter) return Verdict::fail("the adapter factory returned null");
  Closer closer{adapter.get()};
  L2AdapterInterface& a = *adapter;
  Objects objects{&aut, MemoryLayoutDesc::single({3, 40}, aut.object_dtypes.front()), 99};
  std::vector<std::weak_ptr<MemoryObj>> handed;
  std::size_t tasks = 0;
  auto round = [&](std::size_t r) -> std::string {
    std::vector<ObjectKey> ks = key_family(r + 1, kKeys);
    std::vector<MemoryObjPtr> objs, dsts;
    for (std::size_t i = 0; i < kKeys; ++i) {
      objs.push_back(objects.content(i));
      dsts.push_back(make_object(objects.layout));
      handed.push_back(objs.back());
      handed.push_back(dsts.back());
    }
    TaskId s = a.submit_store_task(ks, objs);
    std::map<TaskId, L2StoreResult> got;
    if (!pop_stores_until(a, {s}, &got).empty()) {
      return "store " + std::to_string(s) + " (task " + std::to_string(tasks + 1) +
             " of the run) never completed";
    }
    if (!got.at(s).is_successful()) {
      return "store of round " + std::to_string(r) + " failed after " + std::to_string(tasks) +
             " tasks";
    }
    TaskId l = a.submit_load_task(ks, dsts);
    auto bits = poll_until([&] { return a.query_load_result(l); }, result_timeout());
    if (!bits || !bits->all()) {
      return "load " + std::to_string(l) + " of 4 stored keys after " + std::to_string(tasks) +
             " tasks gave " + (bits ? bits->to_string() : std::string("nothing"));
    }
    TaskId k = a.submit_lookup_and_lock_task(ks);
    auto hits = poll_until([&] { return a.query_lookup_and_lock_result(k); }, result_timeout());
    if (!hits || !hits->all()) {
      return "lookup " + std::to_string(k) + " of 4 stored keys after " + std::to_string(tasks) +
             " tasks gave " + (hits ? hits->to_string() : std::string("nothing"));
    }
    a.submit_unlock(ks);
    if (aut.capabilities.supports_delete) a.delete_keys(ks);
    tasks += 3;
    consume_fd(a.get_store_event_fd());
    consume_fd(a.get_lookup_and_lock_event_fd());
    consume_fd(a.get_load_event_fd());
    return {};
  };
  for (std::size_t r = 0; r < 2; ++r) {
    if (std::string e = round(r); !e.empty()) return Verdict::fail(e);
  }
  ProcessResources halfway;
  for (std::size_t r = 2; r < rounds; ++r) {
    if (std::string e = round(r); !e.empty()) return Verdict::fail(e);
    if (r == rounds / 2) halfway = ProcessResources::take();
  }
  // Grown since halfway: as many rounds again tell a pool that grew late from a leak.
  const HalfwayGrowth growth = growth_past_halfway(halfway, rounds, round, settle_timeout());
  if (!growth.round_error.empty()) return Verdict::fail(growth.round_error);
  if (!growth.grew.empty()) {
    return Verdict::fail("the adapter keeps growing: after " + std::to_string(tasks) +
                         " tasks the process holds " + growth.grew +
                         " (before: halfway through the first " + std::to_string(rounds) +
                         " rounds; it grew again over as many rounds more): a leak per task or "
                         "every few tasks");
  }
  if (const std::size_t n = objects_still_held(handed, 2 * kKeys); n > 2 * kKeys) {
    return Verdict::fail("after " + std::to_string(tasks) +
                         " completed tasks the adapter still "
                         "references " +
                         std::to_string(n) + " of the " + std::to_string(handed.size()) +
                         " caller objects it was given (buffers belong to the caller once a "
                         "task completed)");
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::adapter_properties

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

Verdict TaskIdsNeverReused(const AdapterUnderTest& aut) {
  // Past 2^16 tasks, with an early load still untaken: an id kept in 16 bits (or a result table
  // indexed by one) hands a later task the early one's id.
  constexpr std::size_t kTasks = (std::size_t{1} << 16) + 100;
  constexpr std::size_t kInFlight = 256;
  L2AdapterPtr a = aut.make();
  if (!a) return Verdict::fail("the adapter factory returned null");
  Closer closer{a.get()};
  const std::vector<ObjectKey> keys = key_family(0x1D5, 2);  // keys[0] stored, keys[1] never
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({16}, aut.object_dtypes.front());
  MemoryObjPtr obj = make_object(layout);
  fill_bytes(obj->physical_bytes(), 0x1D5);
  const TaskId store = a->submit_store_task({keys[0]}, {obj});
  if (!poll_until(
          [&]() -> std::optional<bool> {
            return a->pop_completed_store_tasks().count(store) ? std::optional<bool>(true)
                                                               : std::nullopt;
          },
          result_timeout())) {
    return Verdict::fail("store task " + std::to_string(store) + " did not complete");
  }
  const TaskId early = a->submit_load_task({keys[0]}, {make_object(layout)});
  const std::string failure = stream_of_unique_ids(
      kTasks, kInFlight, /*first_number=*/3, early, "load", {store, early},
      [&] { return a->submit_load_task({keys[1]}, {make_object(layout)}); },
      [&](TaskId id) -> std::string {
        std::optional<Bitmap> bits =
            poll_until([&] { return a->query_load_result(id); }, result_timeout());
        if (!bits) return "load task " + std::to_string(id) + " did not complete";
        if (bits->size() != 1 || bits->test(0)) {
          return "a load of a key never stored (task " + std::to_string(id) + ") answered " +
                 bits->to_string();
        }
        return {};
      });
  if (!failure.empty()) return Verdict::fail(failure);
  std::optional<Bitmap> bits =
      poll_until([&] { return a->query_load_result(early); }, result_timeout());
  if (!bits || bits->size() != 1 || !bits->test(0)) {
    return Verdict::fail("the early load (task " + std::to_string(early) + ") of a stored key, " +
                         "taken after " + std::to_string(kTasks) + " later tasks, answered " +
                         (bits ? bits->to_string() : std::string("nothing")) +
                         " instead of its hit");
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::adapter_properties
