// File: lmcache/conformance/store_preflight.h
//
// Before the kit runs a suite over an adapter it did not build itself (a vendor's native
// connector from a plugin), one store tells whether there is anything to test: a connector whose
// server is unreachable (LMCache's own Redis connector: its workers exit, its submits never
// complete) would otherwise fail every property the same way, each after the bridge's task
// deadline. Part of lmcache::conformance_api.
#pragma once

#include <chrono>
#include <string>

#include "lmcache/l2/l2_adapter.h"

namespace lmcache::conformance {

// first_store_problem()
//
// Stores one 64-byte object through `adapter` under probe_key(0) (the adapter's namespace should
// be fresh: key_namespace.h), waits for its result for at most `limit` (whole-machine stalls
// excluded, up to 30 s: lmcache/core/stall_tolerant_deadline.h), and deletes the key
// again (delete_keys(); a bridge over a connector without deletes only hides it). Returns ""
// when the store succeeded; otherwise what went wrong, in words, naming the first error the
// implementation reported meanwhile (error_notes.h) when there is one, e.g.
//   "a store of one 64-byte object completed as failed; the implementation reported: no
//    completion within the task deadline (10000 ms) (in connector store of 1 key [... 64 B])".
// Clears the implementation-error notes before and after. Throws what the adapter throws.
std::string first_store_problem(L2AdapterInterface& adapter, std::chrono::milliseconds limit);

// The environment variable that turns the load-time store off (any value): lmcache-conform sets
// it for the children that run one property each, after the child that lists the
// implementations has made the check once, so that a property's first operations are the
// process's first use of the connector (a lazy, process-wide initialization raced by
// ConcurrentSubmitters' threads is not hidden behind the preflight's single store).
inline constexpr const char* kStorePreflightOffEnv = "LMCACHE_CONFORMANCE_STORE_PREFLIGHT_OFF";

// store_preflight_wanted()
//
// False when kStorePreflightOffEnv is set.
bool store_preflight_wanted();

}  // namespace lmcache::conformance
