// File: lmcache/conformance/internal/adapter_properties.h
//
// The functions behind AdapterConformance's properties, one per line of property_list.h, and
// what the suite's files share. Defined in adapter_conformance.cc (scenarios and dispatch),
// adapter_conformance_model.cc (the stateful model every [stateful] property runs with its own
// checks enabled) and adapter_conformance_concurrency.cc (concurrent submitters and resources).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/internal/property_list.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// The signature of every property of the suite.
using PropertyFunction = Verdict(const AdapterUnderTest& adapter);
LMCACHE_CONFORMANCE_ADAPTER_PROPERTIES(LMCACHE_CONFORMANCE_DECLARE_PROPERTY)

// The aspects of the contract a stateful run checks; each [stateful] property enables one.
enum Check : unsigned {
  kOneShot = 1u << 0,
  kFds = 1u << 1,
  kLookup = 1u << 2,
  kLoad = 1u << 3,
  kLocks = 1u << 4,
  kUsage = 1u << 5,
  kListeners = 1u << 6,
  kStoreBytes = 1u << 7,
  kAllChecks = 0xFFu,
};

// run_stateful()
//
// Generated command sequences against fresh adapters and a model, with `checks` enabled.
// NotSupported when `checks` is exactly a check whose capability the adapter lacks.
Verdict run_stateful(std::string_view property, const AdapterUnderTest& aut, unsigned checks);

// "AdapterConformance.<property>/<adapter>".
std::string rc_id(std::string_view property, const AdapterUnderTest& aut);

// Closes an adapter however the property ends.
struct Closer {
  L2AdapterInterface* a;
  ~Closer();
};

// What the adapter stores for an object of `layout` (the descriptor's stored_bytes, or the
// logical size `used`).
std::uint64_t stored_size_of(const AdapterUnderTest& aut, const MemoryLayoutDesc& layout,
                             std::size_t used);

// `n` objects of `layout`, every byte drawn (defined in adapter_conformance_damage.cc).
std::vector<MemoryObjPtr> filled_objects(const MemoryLayoutDesc& layout, std::size_t n);

// What a load of `stored` gives back: the descriptor's expected_load (a serde-wrapping adapter's
// round trip), or a copy of the bytes.
MemoryObjPtr expected_load_of(const AdapterUnderTest& aut, const MemoryObj& stored);

// Pops store results until `ids` are all in (or `timeout` passes); adds what it popped to
// `*got`. Returns the ids that did not complete.
std::vector<TaskId> pop_stores_until(L2AdapterInterface& a, const std::vector<TaskId>& ids,
                                     std::map<TaskId, L2StoreResult>* got,
                                     std::chrono::milliseconds timeout = result_timeout());

// Blocking helpers over one adapter (defined in adapter_conformance_reference.cc); `who` opens
// the failure message. store_all() requires the store to complete and succeed; wait_lookup()
// unlocks the hits it took; wait_load() requires the load to complete and returns its bitmap.
// pair_shares_store(): stores one probe object (fresh key) through `second` and looks it up
// through `first`; true when `first` finds it (the probe is deleted again where delete_keys()
// works). Throws Failure when a store or lookup does not complete or the store fails.
bool pair_shares_store(L2AdapterInterface& first, L2AdapterInterface& second);

// reference_pair_usable(): whether `aut.reference.make_pair` gives a pair over one store: true
// when probe_shared_store is false, else what pair_shares_store() finds over a fresh pair.
bool reference_pair_usable(const AdapterUnderTest& aut);

void store_all(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>& objs, const std::string& who);
Bitmap wait_lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                   const std::string& who);
Bitmap wait_load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                 const std::vector<MemoryObjPtr>& dsts, const std::string& who);

// report_status()["locked_key_count"], when the adapter reports it.
std::optional<std::uint64_t> locked_key_count(const L2AdapterInterface& a);

}  // namespace lmcache::conformance_internal::adapter_properties
