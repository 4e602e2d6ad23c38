#include "lmcache/conformance/adapter_conformance.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/core/close_quietly.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance {}  // namespace lmcache::conformance

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// ---------------------------------------------------------------------------------------------
// Shared helpers (internal/adapter_properties.h).

std::string rc_id(std::string_view property, const AdapterUnderTest& aut) {
  return "AdapterConformance." + std::string(property) + "/" + aut.name;
}

Closer::~Closer() {
  if (a) close_quietly(*a);
}

std::uint64_t stored_size_of(const AdapterUnderTest& aut, const MemoryLayoutDesc& layout,
                             std::size_t used) {
  return aut.stored_bytes ? aut.stored_bytes(layout) : used;
}

MemoryObjPtr expected_load_of(const AdapterUnderTest& aut, const MemoryObj& stored) {
  MemoryObjPtr out = make_object(stored.layout());
  if (aut.expected_load) {
    aut.expected_load(stored, *out);
  } else {
    std::memcpy(out->data(), stored.data(), stored.physical_bytes().size());
  }
  return out;
}

std::vector<TaskId> pop_stores_until(L2AdapterInterface& a, const std::vector<TaskId>& ids,
                                     std::map<TaskId, L2StoreResult>* got,
                                     std::chrono::milliseconds timeout) {
  auto missing = [&] {
    std::vector<TaskId> out;
    for (TaskId id : ids) {
      if (!got->count(id)) out.push_back(id);
    }
    return out;
  };
  poll_until(
      [&]() -> std::optional<bool> {
        for (auto& kv : a.pop_completed_store_tasks()) got->insert(kv);
        return missing().empty() ? std::optional<bool>(true) : std::nullopt;
      },
      timeout);
  return missing();
}

std::optional<std::uint64_t> locked_key_count(const L2AdapterInterface& a) {
  Json status = a.report_status();
  if (!status.is_object() || !status.contains("locked_key_count")) return std::nullopt;
  return status["locked_key_count"].get<std::uint64_t>();
}

// ---------------------------------------------------------------------------------------------
// The [stateful] properties: one check of the model each, StatefulModel all of them.

// Each is run_stateful() under its own name, with the checks it stands for.
#define LMCACHE_STATEFUL_PROPERTY(Name, checks) \
  Verdict Name(const AdapterUnderTest& aut) { return run_stateful(#Name, aut, checks); }
LMCACHE_STATEFUL_PROPERTY(OneShotResults, kOneShot)
LMCACHE_STATEFUL_PROPERTY(EachKindSignalsItsFd, kFds)
LMCACHE_STATEFUL_PROPERTY(StoreReportsBytes, kStoreBytes)
LMCACHE_STATEFUL_PROPERTY(LookupReportsPresence, kLookup)
LMCACHE_STATEFUL_PROPERTY(PartialLoadBitmap, kLoad)
LMCACHE_STATEFUL_PROPERTY(LookupLocks, kLocks)
LMCACHE_STATEFUL_PROPERTY(UsageMatchesStoredBytes, kUsage)
LMCACHE_STATEFUL_PROPERTY(ListenersCalled, kListeners)
LMCACHE_STATEFUL_PROPERTY(StatefulModel, kAllChecks)
#undef LMCACHE_STATEFUL_PROPERTY

// ---------------------------------------------------------------------------------------------
// Scenario properties.

Verdict DistinctEventFds(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  Closer ca{a.get()};
  L2AdapterPtr b = aut.make();
  Closer cb{b.get()};
  int fds[6] = {a->get_store_event_fd(), a->get_lookup_and_lock_event_fd(), a->get_load_event_fd(),
                b->get_store_event_fd(), b->get_lookup_and_lock_event_fd(), b->get_load_event_fd()};
  const char* names[6] = {"store fd",
                          "lookup fd",
                          "load fd",
                          "second instance's store fd",
                          "second instance's lookup fd",
                          "second instance's load fd"};
  if (std::string problem = distinct_open_fds_problem(fds, names); !problem.empty()) {
    return Verdict::fail(problem);
  }
  return Verdict::pass();
}

Verdict UnknownIdsGiveNone(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  Closer closer{a.get()};
  auto probe = [&](TaskId id) -> std::string {
    try {
      if (a->query_lookup_and_lock_result(id)) {
        return "query_lookup_and_lock_result(" + std::to_string(id) +
               ") answered for an id never issued";
      }
      if (a->query_load_result(id)) {
        return "query_load_result(" + std::to_string(id) + ") answered for an id never issued";
      }
    } catch (const std::exception& e) {
      return "a query of id " + std::to_string(id) + " (never issued) threw: " + e.what();
    }
    return {};
  };
  for (TaskId id : {TaskId{0}, TaskId{1}, TaskId{2}, TaskId{1000}, TaskId{1} << 40, ~TaskId{0}}) {
    if (std::string e = probe(id); !e.empty()) return Verdict::fail(e);
  }
  if (!a->pop_completed_store_tasks().empty()) {
    return Verdict::fail("a fresh adapter's pop_completed_store_tasks() returned results");
  }
  ObjectKey key(int_hash_to_bytes(77), "conformance-model", 0);
  MemoryObjPtr obj = make_object(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  std::map<TaskId, L2StoreResult> got;
  poll_until(
      [&]() -> std::optional<bool> {
        for (auto& kv : a->pop_completed_store_tasks()) got.insert(kv);
        return got.count(s) ? std::optional<bool>(true) : std::nullopt;
      },
      result_timeout());
  if (!got.count(s)) return Verdict::fail("store task " + std::to_string(s) + " did not complete");
  TaskId l = a->submit_load_task({key}, {make_object(obj->layout())});
  if (!poll_until([&] { return a->query_load_result(l); }, result_timeout())) {
    return Verdict::fail("load task " + std::to_string(l) + " did not complete");
  }
  for (TaskId id : {std::max(s, l) + 1000, std::max(s, l) + 99999}) {
    if (std::string e = probe(id); !e.empty()) return Verdict::fail(e);
  }
  return Verdict::pass();
}

namespace {

// A store and a load that completed before close() but were not taken: each is handed out after
// close(), once, with its result (docs/l2-adapter.md).
Verdict results_survive_close(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  const std::vector<ObjectKey> keys = key_family(0xC105E, 2);
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({24}, aut.object_dtypes.front());
  std::vector<MemoryObjPtr> objs;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    objs.push_back(make_object(layout));
    fill_bytes(objs.back()->physical_bytes(), 0xC105E + i);
  }
  TaskId first = a->submit_store_task({keys[0]}, {objs[0]});
  if (!poll_until(
          [&]() -> std::optional<bool> {
            return a->pop_completed_store_tasks().count(first) ? std::optional<bool>(true)
                                                               : std::nullopt;
          },
          result_timeout())) {
    a->close();
    return Verdict::fail("store task " + std::to_string(first) + " did not complete");
  }
  // Its notify: taken, so that the wait below sees the next store's and not this one's (one
  // left on the fd would end that wait at once, before the next store completed).
  if (const std::uint64_t n = collect_notifies(a->get_store_event_fd(), 1); n != 1) {
    a->close();
    return Verdict::fail("store task " + std::to_string(first) + " completed with " +
                         std::to_string(n) + " notifies on the store fd (expected 1)");
  }
  // Completed, never taken: a store of the other key and a load of the stored one.
  TaskId store = a->submit_store_task({keys[1]}, {objs[1]});
  MemoryObjPtr dst = make_object(layout);
  TaskId load = a->submit_load_task({keys[0]}, {dst});
  const bool signalled = wait_signalled(a->get_store_event_fd(), result_timeout()) &&
                         wait_signalled(a->get_load_event_fd(), result_timeout());
  // The fds say a result is stored; give a second task of one kind time to follow.
  std::this_thread::sleep_for(kSettle);
  a->close();
  if (!signalled) return Verdict::fail("a store or load before close() was never signalled");
  std::map<TaskId, L2StoreResult> popped;
  std::optional<Bitmap> bits;
  try {
    popped = a->pop_completed_store_tasks();
    bits = a->query_load_result(load);
    if (!bits) {
      bits = poll_until([&] { return a->query_load_result(load); }, std::chrono::milliseconds(50));
    }
  } catch (const std::exception& e) {
    return Verdict::fail(std::string("pop / query after close() threw: ") + e.what());
  }
  if (!popped.count(store) || !popped.at(store).is_successful()) {
    return Verdict::fail("a store that completed before close() (task " + std::to_string(store) +
                         ") was not handed out as successful by pop_completed_store_tasks() "
                         "after close()");
  }
  if (!bits || bits->size() != 1 || !bits->test(0)) {
    return Verdict::fail("a load that completed before close() (task " + std::to_string(load) +
                         ") was not answered with its hit by query_load_result() after close()");
  }
  if (a->pop_completed_store_tasks().count(store) || a->query_load_result(load)) {
    return Verdict::fail("a result taken after close() was handed out a second time");
  }
  return Verdict::pass();
}

}  // namespace

Verdict CloseIsIdempotent(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  ObjectKey key(int_hash_to_bytes(78), "conformance-model", 0);
  MemoryObjPtr obj = make_object(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  bool done = poll_until(
                  [&]() -> std::optional<bool> {
                    return a->pop_completed_store_tasks().count(s) ? std::optional<bool>(true)
                                                                   : std::nullopt;
                  },
                  result_timeout())
                  .has_value();
  if (!done) {
    a->close();
    return Verdict::fail("store task " + std::to_string(s) + " did not complete");
  }
  try {
    a->close();
    a->close();
  } catch (const std::exception& e) {
    return Verdict::fail(std::string("close() twice threw: ") + e.what());
  }
  auto expect_logic_error = [&](const char* what, auto&& fn) -> std::string {
    try {
      fn();
    } catch (const std::logic_error&) {
      return {};
    } catch (const std::exception& e) {
      return std::string(what) +
             " after close() threw something other than std::logic_error: " + e.what();
    }
    return std::string(what) + " after close() did not throw std::logic_error";
  };
  for (auto msg :
       {expect_logic_error("submit_store_task()", [&] { a->submit_store_task({key}, {obj}); }),
        expect_logic_error("submit_lookup_and_lock_task()",
                           [&] { a->submit_lookup_and_lock_task({key}); }),
        expect_logic_error("submit_load_task()", [&] { a->submit_load_task({key}, {obj}); })}) {
    if (!msg.empty()) return Verdict::fail(msg);
  }
  // docs/l2-adapter.md: what completed stays retrievable; other calls may throw std::logic_error.
  try {
    (void)a->pop_completed_store_tasks();
    (void)a->query_load_result(s);
  } catch (const std::exception& e) {
    return Verdict::fail(std::string("pop / query after close() threw: ") + e.what());
  }
  return results_survive_close(aut);
}

Verdict CloseReleasesResources(const AdapterUnderTest& aut) {
  ProcessResources baseline = ProcessResources::take();
  L2AdapterPtr a = aut.make();
  ObjectKey key(int_hash_to_bytes(79), "conformance-model", 0);
  MemoryObjPtr obj = make_object(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  poll_until(
      [&]() -> std::optional<bool> {
        return a->pop_completed_store_tasks().count(s) ? std::optional<bool>(true) : std::nullopt;
      },
      result_timeout());
  TaskId l = a->submit_load_task({key}, {make_object(obj->layout())});
  poll_until([&] { return a->query_load_result(l); }, result_timeout());
  a->close();
  if (std::string leak = resources_left_over(baseline, settle_timeout()); !leak.empty()) {
    return Verdict::fail("after close() the process holds " + leak +
                         " of the adapter: close() must release its fds and threads");
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::adapter_properties

namespace lmcache::conformance {

Verdict run_adapter_property(std::string_view property, const AdapterUnderTest& adapter) {
  using Fn = Verdict (*)(const AdapterUnderTest&);
#define LMCACHE_ADAPTER_ENTRY(Name, Checks) \
  {#Name, &conformance_internal::adapter_properties::Name},
  static const std::pair<std::string_view, Fn> kTable[] = {
      LMCACHE_CONFORMANCE_ADAPTER_PROPERTIES(LMCACHE_ADAPTER_ENTRY)};
#undef LMCACHE_ADAPTER_ENTRY
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(adapter);
      } catch (const std::exception& e) {
        return Verdict::fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::fail("unknown adapter property '" + std::string(property) + "'");
}

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
int adapter_conformance_link_anchor() { return 0; }
}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AdapterConformance);

#define LMCACHE_ADAPTER_TEST(Name, Checks) \
  LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, Name, run_adapter_property)
LMCACHE_CONFORMANCE_ADAPTER_PROPERTIES(LMCACHE_ADAPTER_TEST)
#undef LMCACHE_ADAPTER_TEST

}  // namespace lmcache::conformance
