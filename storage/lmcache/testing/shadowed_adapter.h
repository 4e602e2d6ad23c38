// File: lmcache/testing/shadowed_adapter.h
//
// ShadowedAdapter: forwards every call to a primary adapter and mirrors each store and delete,
// synchronously, onto a shadow adapter whose results are discarded. It lets the conformance kit's
// wrapper properties run over a real adapter: the kit's rig inspects its own in-memory mock
// (did a store reach the inner adapter?), so the mock is the shadow and the adapter under test
// (a bridge over Redis or files) is the primary that answers every store, lookup and load:
//
//   wrapper -> kit's scripted inner -> ShadowedAdapter -> primary (results)
//                                                      \-> shadow = the kit's mock (inspected)
//
// Thread safety: as the primary's; the shadow must be thread-safe too.
#pragma once

#include <memory>

#include "lmcache/l2/forwarding_adapter.h"

namespace lmcache::storage_testing {

class ShadowedAdapter final : public ForwardingL2Adapter {
 public:
  // Throws std::invalid_argument for a null primary or shadow.
  ShadowedAdapter(L2AdapterPtr primary, L2AdapterPtr shadow);

  // Stores into the shadow and waits for it (up to 10 s; a failure there throws
  // std::runtime_error), then submits to the primary and returns the primary's id.
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override;
  void delete_keys(const std::vector<ObjectKey>& keys) override;
  void close() override;

 private:
  L2AdapterPtr shadow_;
};

}  // namespace lmcache::storage_testing
