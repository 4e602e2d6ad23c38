// AdapterConformance.CapacityHonoured: an adapter built with a byte capacity (docs/l2-adapter.md,
// "Capacity"). A deployment sizes each tier; an adapter that holds more than its capacity takes
// memory or disk the deployment gave to something else, one that refuses what fits wastes it,
// and one whose admission forgets what a delete or a refused store gave back fills up for good
// while its usage looks right: every later store fails and nothing says why.
//
// Each case, over a fresh adapter from the descriptor's make_with_capacity(capacity): one layout
// (1 B to 1 MiB stored), a capacity of 1-5 objects plus a remainder below one object; stores one
// object per task until two more than fit were tried, then a batch of two, then deletes what was
// stored and stores as many fresh objects again. Checks:
//  - usage never exceeds the capacity (when the adapter reports usage exactly);
//  - every object that fits is stored (when the adapter reports usage exactly: its capacity counts
//    the bytes get_usage() reports, nothing else);
//  - a refused store leaves none of its keys behind, and a stored key loads its own bytes or
//    misses (an adapter that evicts to make room may have dropped it);
//  - after the delete, as many objects as were stored before are stored again, each within the
//    settle time (a delete that frees capacity later is given that long).
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// Stores one task and returns whether it succeeded; a Fail when it does not complete.
bool try_store(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>& objs, const std::string& who) {
  const TaskId id = a.submit_store_task(keys, objs);
  std::map<TaskId, L2StoreResult> got;
  require(pop_stores_until(a, {id}, &got).empty(), who + "the store did not complete");
  return got.at(id).is_successful();
}

void run_case(const AdapterUnderTest& aut, const MemoryLayoutDesc& layout, std::uint64_t fitting,
              std::uint64_t remainder) {
  const std::uint64_t object_bytes = stored_size_of(aut, layout, layout.total_bytes());
  const std::uint64_t asked = fitting * object_bytes + remainder;
  L2AdapterPtr made = aut.make_with_capacity(asked);
  require(made != nullptr, "make_with_capacity() returned no adapter");
  L2AdapterInterface& a = *made;
  Closer closer{&a};
  const bool exact = aut.capabilities.reports_usage;
  const std::uint64_t reported = a.get_usage().total_capacity_bytes;
  const std::uint64_t capacity = reported != 0 ? reported : asked;
  const std::uint64_t fits = capacity / object_bytes;
  const std::string who = "capacity " + std::to_string(capacity) + " bytes (asked " +
                          std::to_string(asked) + "), objects of " + std::to_string(object_bytes) +
                          " stored bytes (" + layout.to_string() + "): ";

  const std::size_t tries = static_cast<std::size_t>(std::min<std::uint64_t>(fits, 8)) + 2;
  const std::vector<ObjectKey> keys = key_family(*gen_seed(), 2 * tries + 2);
  std::vector<ObjectKey> stored_keys, refused_keys;
  std::vector<MemoryObjPtr> stored_objs;
  for (std::size_t i = 0; i < tries; ++i) {
    MemoryObjPtr obj = filled_objects(layout, 1)[0];
    const std::string store = who + "store " + std::to_string(i + 1) + " of " +
                              std::to_string(tries) + " (one object each): ";
    const bool ok = try_store(a, {keys[i]}, {obj}, store);
    if (exact) {
      const std::uint64_t used = a.get_usage().total_bytes_used;
      require(used <= capacity,
              store + "the adapter holds " + std::to_string(used) + " bytes, over its capacity");
      require(ok || i >= fits, store + "refused, though " + std::to_string(i) +
                                   " object(s) held and this one fit " +
                                   "(a store that fits must not be refused for room)");
    }
    if (ok) {
      stored_keys.push_back(keys[i]);
      stored_objs.push_back(obj);
    } else {
      refused_keys.push_back(keys[i]);
    }
  }
  if (!refused_keys.empty()) {
    // Full: a batch of two fresh objects does not fit either (an adapter that evicts takes it).
    const std::vector<ObjectKey> pair = {keys[tries], keys[tries + 1]};
    if (!try_store(a, pair, filled_objects(layout, 2), who + "a batch of two when full: ")) {
      refused_keys.insert(refused_keys.end(), pair.begin(), pair.end());
    }
  }
  if (!refused_keys.empty()) {
    const Bitmap found = wait_lookup(a, refused_keys, who + "looking up the refused keys:");
    for (std::size_t i = 0; i < refused_keys.size(); ++i) {
      require(!found.test(i), who + "key " + refused_keys[i].to_string() +
                                  " of a refused store is present (a refused store must leave "
                                  "none of its keys behind)");
    }
  }
  if (!stored_keys.empty()) {
    std::vector<MemoryObjPtr> back = zeroed_objects(layout, stored_keys.size());
    const Bitmap hits = wait_load(a, stored_keys, back, who + "loading the stored keys:");
    for (std::size_t i = 0; i < stored_keys.size(); ++i) {
      if (!hits.test(i)) continue;  // evicted to make room
      const MemoryObjPtr want = expected_load_of(aut, *stored_objs[i]);
      require(back[i]->size() == want->size() &&
                  same_bytes(back[i]->data(), want->data(), want->size()),
              who + "key " + stored_keys[i].to_string() + " loads other bytes than it stored");
    }
  }
  if (!aut.capabilities.supports_delete || stored_keys.empty()) return;

  // What the delete frees is room again: as many objects as were held are stored again.
  a.delete_keys(stored_keys);
  for (std::size_t i = 0; i < stored_keys.size(); ++i) {
    const ObjectKey& key = keys[tries + 2 + i];
    const MemoryObjPtr obj = filled_objects(layout, 1)[0];
    const std::string store = who + "after deleting the " + std::to_string(stored_keys.size()) +
                              " stored key(s), store " + std::to_string(i + 1) + " of as many: ";
    const auto deadline = std::chrono::steady_clock::now() + settle_timeout();
    bool ok = try_store(a, {key}, {obj}, store);
    while (!ok && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ok = try_store(a, {key}, {obj}, store);
    }
    require(ok, store + "refused for " + std::to_string(settle_timeout().count()) +
                    " ms: the capacity the delete freed was not given back");
  }
  a.close();
}

}  // namespace

Verdict CapacityHonoured(const AdapterUnderTest& aut) {
  if (!aut.make_with_capacity) {
    return Verdict::not_supported(
        "the descriptor gives no way to build the adapter with a capacity "
        "(AdapterUnderTest::make_with_capacity)");
  }
  return run_rc_property(rc_id("CapacityHonoured", aut), {.max_success = 4, .shrink = false}, [&] {
    const std::size_t most =
        std::min<std::size_t>(current_profile().max_chunk_bytes, std::size_t{1} << 20);
    MemoryLayoutDesc layout = *gen_layout_of_any_size(aut.object_dtypes, most);
    while (stored_size_of(aut, layout, layout.total_bytes()) == 0) {
      layout = *gen_layout_of_any_size(aut.object_dtypes, most);  // nothing to count
    }
    const std::uint64_t object_bytes = stored_size_of(aut, layout, layout.total_bytes());
    const auto fitting = *uniform_in_range<std::uint64_t>(1, 6);
    const auto remainder = *uniform_in_range<std::uint64_t>(0, object_bytes);
    run_case(aut, layout, fitting, remainder);
  });
}

}  // namespace lmcache::conformance_internal::adapter_properties
