// File: lmcache/testing/bridge_checks.h
//
// The bridge's own properties, as checks any connector can be run through: each builds the
// bridge under test over connectors from a BridgeRig (FaultyConnector in between where it needs
// a fault), drives it through L2AdapterInterface only, and returns "" when the property holds or
// the first broken rule. The real bridge over the memory, resp and fs connectors passes them
// all; mutants of the bridge (bridge_test) each fail the one aimed at their bug.
//
//   FailedSetLeavesNothingVisible  a store whose connector batch fails after writing completes
//                                  as failure, and then none of its keys is found by a lookup or
//                                  load through the same bridge, nor (when the connector has
//                                  submit_batch_delete) through a second client of the same
//                                  store; the usage is unchanged; a later store of the same keys
//                                  succeeds and is visible (LMCache #4991).
//   PerKeyMisses                   a load and a lookup mixing stored and absent keys set exactly
//                                  the stored keys' bits, load their bytes and leave the absent
//                                  keys' destinations untouched.
//   DuplicateKeysBalanceLocks      a key repeated in a lookup is locked once per hit and released
//                                  once per occurrence in an unlock; a key repeated in a store
//                                  keeps its first copy.
//   DistinctKeysStayDistinct       keys differing in any one field (model names with '/', '.',
//                                  '-SEP-', '%' and non-ASCII bytes, salt, object group, rank,
//                                  hash bytes) never share an object.
//   DeadlineFailsHungTasks         with a connector that never completes, a store, a lookup and a
//                                  load each complete as failed once their deadline passes, and
//                                  close() returns.
//   BreakerOpensProbesAndRecovers  with a breaker (threshold 3, cooldown 500 ms) over a
//                                  connector that refuses connections: it opens; while open a
//                                  store fails, a lookup and a load find nothing, and none of
//                                  them nor delete_keys() reaches the connector; the first store
//                                  after the cooldown is sent (the probe), and its failure opens
//                                  it again; once the connector answers, the probe succeeds, the
//                                  breaker closes (report_status: connection_disabled,
//                                  connection_failures, breaker_retry_in_seconds, breaker_trips)
//                                  and the probe's key loads.
//
// Limits: every wait is bounded (10 s per result, scaled by LMCACHE_CONFORMANCE_TIMEOUT_SCALE);
// nothing asserts on time.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/bridge/erased_connector.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::storage_testing {

// BridgeRig
//
// make_connector  a fresh connector over the rig's one store (every connector made by a rig
//                 sees what the others wrote, as two clients of one server do); each call must
//                 give an empty key space, e.g. through a fresh key namespace in `options`.
// make_bridge     the bridge under test over a connector, with the options the check needs
//                 (empty: the real NativeConnectorL2Adapter). Mutants go here.
// options         the bridge options of the rig (its key namespace is used by every bridge a
//                 check builds, the observer included).
struct BridgeRig {
  std::string name;
  std::function<bridge::ErasedConnectorPtr()> make_connector;
  std::function<L2AdapterPtr(bridge::ErasedConnectorPtr, bridge::NativeConnectorAdapterOptions)>
      make_bridge;
  bridge::NativeConnectorAdapterOptions options;
};

// The checks. Each returns "" when the property holds, else what broke.
std::string check_failed_set_leaves_nothing_visible(const BridgeRig& rig);
std::string check_per_key_misses(const BridgeRig& rig);
std::string check_duplicate_keys_balance_locks(const BridgeRig& rig);
std::string check_distinct_keys_stay_distinct(const BridgeRig& rig);
std::string check_deadline_fails_hung_tasks(const BridgeRig& rig);
std::string check_breaker_opens_probes_and_recovers(const BridgeRig& rig);

// BridgeCheck: a name and its function, for parameterised tests.
struct BridgeCheck {
  std::string_view name;
  std::string (*run)(const BridgeRig&);
};

// Every check above, in that order.
const std::vector<BridgeCheck>& all_bridge_checks();

}  // namespace lmcache::storage_testing
