// File: lmcache/testing/shadowed_adapter.h
//
// ShadowedAdapter: lets the conformance kit's wrapper properties run over a real adapter. The
// kit's rig judges the wrapper against its own in-memory mock (did a store reach the inner
// adapter? does it hold locks? how many bytes did the inner store?), so the mock becomes a
// shadow that every state-changing call is mirrored onto, synchronously, while the adapter under
// test (a bridge over Redis or files) is the primary that answers every load and lookup:
//
//   wrapper -> kit's scripted inner -> ShadowedAdapter -> primary: loads, lookups, fds, status,
//                                                         usage, listeners
//                                                      \-> shadow (the kit's mock): stores,
//                                                          lookups (its locks), unlocks, deletes
//
// A store completes with the primary's success and the shadow's bytes_transferred (the kit
// counts the bytes the inner newly stored, which the mock reports; a bridge reports the bytes it
// sent, re-stores included). Everything else is the primary's.
//
// Thread safety: as the primary's; the shadow must be thread-safe too. Stores from several
// threads at once each get their own shadow result (shadowed_adapter_test.cc). close() waits
// for the submits still waiting on the shadow, so that none reads a closed shadow fd.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "lmcache/l2/forwarding_adapter.h"

namespace lmcache::storage_testing {

class ShadowedAdapter final : public ForwardingL2Adapter {
 public:
  // Throws std::invalid_argument for a null primary or shadow.
  ShadowedAdapter(L2AdapterPtr primary, L2AdapterPtr shadow);

  // Stores into the shadow and waits for it (up to 10 s, whole-machine stalls excluded:
  // lmcache/core/stall_tolerant_deadline.h; std::runtime_error past it), then
  // submits to the primary and returns the primary's id.
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override;
  // The primary's results, each with the bytes its shadow store reported.
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override;
  // Locks in the shadow too (synchronously), then the primary's lookup.
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override;
  void submit_unlock(const std::vector<ObjectKey>& keys) override;
  void delete_keys(const std::vector<ObjectKey>& keys) override;
  void close() override;

 private:
  L2AdapterPtr shadow_;
  // Held shared while a submit waits on the shadow; close() takes it to close the shadow.
  std::shared_mutex shadow_open_;
  std::mutex mu_;
  std::map<TaskId, L2StoreResult> shadow_results_;  // by the primary's id
  std::mutex shadow_mu_;
  std::map<TaskId, L2StoreResult> shadow_popped_;  // the shadow's results no waiter took yet
};

}  // namespace lmcache::storage_testing
