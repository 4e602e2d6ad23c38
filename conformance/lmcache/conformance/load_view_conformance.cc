// The load view property (docs/l2-adapter.md, submit_load_view_task()): AdapterConformance.
// LoadViewsHoldStoredBytes. A scenario property: three stored keys (one narrowed, one of 0
// bytes) and a miss in one view load, the views checked against what was written, then held
// across a delete, a re-store of the key with other bytes, close() and the adapter's
// destruction. An adapter without the capability is NotSupported.
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/scenario_checks.h"
#include "lmcache/conformance/internal/waits.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

ObjectKey view_key(std::uint32_t i) {
  return ObjectKey(int_hash_to_bytes(i), "load_view_conformance", 0, 0, "");
}

// `n` bytes of pattern `tag` (uint8 objects: views hold bytes as stored).
MemoryObjPtr pattern_object(std::int64_t n, std::uint8_t tag) {
  MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({n}, DType::kUInt8));
  auto* p = reinterpret_cast<std::uint8_t*>(o->data());
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(tag + i * 7);
  return o;
}

// "" when `view` holds exactly the first `n` bytes of pattern `tag`.
std::string differs(const MemoryObj& view, std::size_t n, std::uint8_t tag) {
  if (view.size() != n) {
    return "size() is " + std::to_string(view.size()) + ", the key stored " + std::to_string(n) +
           " bytes";
  }
  const auto* p = reinterpret_cast<const std::uint8_t*>(view.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != static_cast<std::uint8_t>(tag + i * 7)) {
      return "byte " + std::to_string(i) + " differs from what was stored";
    }
  }
  return "";
}

void store_all(L2AdapterInterface& a, const std::vector<ObjectKey>& ks,
               const std::vector<MemoryObjPtr>& objs) {
  const TaskId id = a.submit_store_task(ks, objs);
  std::map<TaskId, L2StoreResult> got;
  const bool completed = pop_stores_until(a, {id}, &got).empty();
  scenario_check(completed && got.at(id).is_successful(),
                 "a store of " + std::to_string(ks.size()) + " keys did not complete successfully");
}

// A view load of `ks`; the plain query, asked first each time, must never answer it.
L2LoadViews view_load(L2AdapterInterface& a, const std::vector<ObjectKey>& ks) {
  const TaskId id = a.submit_load_view_task(ks);
  bool plain_answered = false;
  std::optional<L2LoadViews> r = poll_until(
      [&] {
        if (a.query_load_result(id)) plain_answered = true;
        return a.query_load_view_result(id);
      },
      result_timeout());
  scenario_check(!plain_answered, "query_load_result() answered a view task");
  scenario_check(r.has_value(), "view load task " + std::to_string(id) + " did not complete");
  scenario_check(!a.query_load_view_result(id), "a view task's result was handed out twice");
  scenario_check(r->loaded.size() == ks.size() && r->views.size() == ks.size(),
                 "a view load of " + std::to_string(ks.size()) + " keys answered " +
                     std::to_string(r->loaded.size()) + " bits and " +
                     std::to_string(r->views.size()) + " views");
  return std::move(*r);
}

}  // namespace

Verdict LoadViewsHoldStoredBytes(const AdapterUnderTest& aut) {
  {
    L2AdapterPtr probe = aut.make();
    Closer closer{probe.get()};
    if (!probe->supports_load_views()) {
      return Verdict::not_supported(
          "the adapter does not lend load views (supports_load_views() is false)");
    }
  }
  return run_scenario([&] {
    L2AdapterPtr a = aut.make();
    Closer closer{a.get()};
    // 1. Three keys, one narrowed (its size() bytes are what is stored), one of 0 bytes, and a
    // miss between.
    MemoryObjPtr whole = pattern_object(4097, 11);
    MemoryObjPtr narrowed = pattern_object(256, 29);
    narrowed->set_used_size(100);
    MemoryObjPtr empty = pattern_object(64, 3);
    empty->set_used_size(0);
    store_all(*a, {view_key(1), view_key(2), view_key(3)}, {whole, narrowed, empty});
    L2LoadViews r = view_load(*a, {view_key(1), view_key(9), view_key(2), view_key(3)});
    scenario_check(r.loaded.to_string() == "1011",
                   "the view load of (stored, absent, stored, "
                   "stored) answered " +
                       r.loaded.to_string());
    scenario_check(r.views[1] == nullptr, "the absent key has a view");
    scenario_check(r.views[0] && r.views[2] && r.views[3], "a loaded key has no view");
    std::string bad = differs(*r.views[0], 4097, 11);
    scenario_check(bad.empty(), "the view of a stored key: " + bad);
    bad = differs(*r.views[2], 100, 29);
    scenario_check(bad.empty(), "the view of a key stored narrowed to 100 bytes: " + bad);
    bad = differs(*r.views[3], 0, 3);
    scenario_check(bad.empty(), "the view of a key stored with 0 bytes: " + bad);
    // 2. Views never change: the key deleted, then stored again with other bytes.
    MemoryObjPtr held = r.views[0];
    a->delete_keys({view_key(1)});
    store_all(*a, {view_key(1)}, {pattern_object(4097, 57)});
    L2LoadViews again = view_load(*a, {view_key(1)});
    scenario_check(again.loaded.to_string() == "1" && again.views[0],
                   "a key stored again does not load as a view");
    bad = differs(*again.views[0], 4097, 57);
    scenario_check(bad.empty(), "the view of a key stored again: " + bad);
    bad = differs(*held, 4097, 11);
    scenario_check(bad.empty(),
                   "a view held across a delete and a new store of its key changed: " + bad);
    // 3. ... nor at close() or when the adapter is gone; submits after close() throw.
    a->close();
    bool threw = false;
    try {
      a->submit_load_view_task({view_key(1)});
    } catch (const std::logic_error&) {
      threw = true;
    }
    scenario_check(threw, "submit_load_view_task() after close() did not throw std::logic_error");
    closer.a = nullptr;
    a.reset();
    bad = differs(*held, 4097, 11);
    scenario_check(bad.empty(), "a view changed when its adapter was closed and destroyed: " + bad);
    return Verdict::pass();
  });
}

}  // namespace lmcache::conformance_internal::adapter_properties
