// File: lmcache/conformance/internal/wrapper_properties.h
//
// The functions behind WrapperConformance's properties, one per line of property_list.h, and
// the rig they share: a wrapper built around the kit's scripted collaborators (doubles.h), an
// L1Manager whose capacity the rig can exhaust, and the waits and checks every property uses.
// Defined in wrapper_conformance.cc (rig, dispatch, round trips), wrapper_conformance_failures.cc
// (all or nothing, the stateful model with injected failures), wrapper_conformance_surface.cc
// (pass-through, store bytes, same key in flight) and wrapper_conformance_lifecycle.cc (close,
// resources).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/doubles.h"
#include "lmcache/conformance/internal/property_list.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/conformance/status.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache::conformance_internal::wrapper_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// The signature of every property of the suite.
using PropertyFunction = Verdict(const WrapperUnderTest& wrapper, const WrapperRigOptions& rig);
LMCACHE_CONFORMANCE_WRAPPER_PROPERTIES(LMCACHE_CONFORMANCE_DECLARE_PROPERTY)

// The L1 capacity of a rig: room for the temps of the largest batch a depth generates.
inline constexpr std::size_t kRigL1Bytes = std::size_t{64} << 20;

// One wrapper under test with the kit's collaborators around it.
struct Rig {
  std::shared_ptr<L1Manager> l1;
  std::shared_ptr<SerdeFaults> serde = std::make_shared<SerdeFaults>();
  std::shared_ptr<AdapterFaults> inner = std::make_shared<AdapterFaults>();
  std::shared_ptr<MockL2Adapter> mock;
  int inner_lookup_fd = -1;
  std::vector<ObjectKey> ballast;
  L2AdapterPtr wrapper;
  // The inner lends store buffers and load views (WrapperRigOptions::inner_lends): a wrapper
  // may then need no L1 temps, so a full L1 need not fail its tasks.
  bool lends = false;

  ~Rig();
  std::size_t l1_used() const;
  // Takes every free byte of L1, so that any temp reservation runs out of memory.
  void exhaust_l1();
  // Gives the ballast back.
  void refill_l1();
};

std::unique_ptr<Rig> make_rig(const WrapperUnderTest& wut, const WrapperRigOptions& options);

// "WrapperConformance.<property>/<wrapper>[@<rig name>]".
std::string rc_id(std::string_view property, const WrapperUnderTest& wut,
                  const WrapperRigOptions& rig);

// Distinct valid keys (a key family: every field varies) from `seed`.
std::vector<ObjectKey> make_keys(std::size_t n, std::uint64_t seed);

// `n` objects of `layout` with values the kit's fp8 serde keeps within its range.
std::vector<MemoryObjPtr> make_objects(const MemoryLayoutDesc& layout, std::size_t n,
                                       std::uint64_t seed);

// What the kit's fp8 serde gives back for `src`.
MemoryObjPtr fp8_round_trip(const MemoryObj& src);

// The bytes the kit's serde stores for one object of `layout` (one per element).
std::uint64_t serialized_size(const MemoryLayoutDesc& layout);

// A KV layout (float32 / float16 / bfloat16, 1-2 groups, at least one element) within the
// depth's limits, at most `max_elements` elements.
MemoryLayoutDesc gen_kv_layout(std::size_t max_elements);

// A batch size for objects of `layout`: up to the depth's max_batch, within an element budget.
std::size_t gen_kv_batch(const MemoryLayoutDesc& layout, std::size_t min_batch = 1);

// Waits for the store result of `id` and checks it is handed out and signalled exactly once.
L2StoreResult wait_store_once(L2AdapterInterface& w, TaskId id, const std::string& what);
// Stores the pairs through `w` and fails the case unless the store succeeds, handed out and
// signalled exactly once.
void require_stored(L2AdapterInterface& w, const std::vector<ObjectKey>& keys,
                    const std::vector<MemoryObjPtr>& objs);
// A batch stored through a wrapper: keys and objects made from one seed.
struct StoredBatch {
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> objs;
};
// make_keys(n, seed) and make_objects(layout, n, seed), stored with require_stored().
StoredBatch store_fresh_batch(L2AdapterInterface& w, const MemoryLayoutDesc& layout, std::size_t n,
                              std::uint64_t seed);
// Waits for the load result of `id` and checks it is handed out and signalled exactly once.
Bitmap wait_load_once(L2AdapterInterface& w, TaskId id, const std::string& what);

// The result of one task without the exactly-once checks (other properties make them) and their
// settle time, for properties that run hundreds of tasks; drains the result's fd.
L2StoreResult wait_store_quietly(L2AdapterInterface& w, TaskId id, const std::string& what);
Bitmap wait_load_quietly(L2AdapterInterface& w, TaskId id, const std::string& what);

// Fails the case unless L1 usage returns to `baseline` within the settle time.
void require_l1_back(const Rig& rig, std::size_t baseline, const std::string& after);

// Fails the case unless every destination the wrapper reported loaded holds the serde round
// trip of its object, and every other destination still holds `before`.
void require_loaded(const std::vector<MemoryObjPtr>& objs, const std::vector<MemoryObjPtr>& dsts,
                    const std::vector<std::vector<std::byte>>& before, const Bitmap& bits,
                    const std::string& what);

// Destinations of `layout` filled with stale bytes, and a copy of those bytes.
std::vector<MemoryObjPtr> stale_destinations(const MemoryLayoutDesc& layout, std::size_t n,
                                             std::vector<std::vector<std::byte>>* before);

// A submit that must not throw: any failure but a bad batch completes the task instead.
template <class Fn>
TaskId submit_no_throw(Fn&& fn, const std::string& what) {
  try {
    return fn();
  } catch (const std::exception& e) {
    fail_case(what + ": submit threw (" + e.what() + ") instead of completing the task as failed");
  }
}

// The kit's defaults for wrapper properties (few cases: each builds rigs and threads).
inline constexpr RcOptions kWrapperRc{.max_success = 8, .max_size = 100, .shrink = false};

}  // namespace lmcache::conformance_internal::wrapper_properties
