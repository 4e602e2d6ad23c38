// File: lmcache/fault/internal/campaign_stack.h
//
// CampaignStack: the stack a fault campaign drives for one epoch, built bottom up from the
// campaign's options:
//
//   L1Manager (the plan's allocation faults)
//   < the inner adapter (options.inner; a real store under the epoch's own key namespace)
//   < FaultInjectL2Adapter (the plan's adapter faults)
//   < the adapter mutant, if any
//   < SerdeL2AdapterWrapper over the faulty serde processor (the plan's serde faults)
//   < the top mutant, if any.
//
// The driver (internal/campaign_driver.h) submits to top() and reads the layers it checks
// (L1's usage, the wrapper's and the fault injector's status, the mock's locks) through the
// typed pointers, which are null where the layer is something else (a real store is no mock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lmcache/core/object_key.h"
#include "lmcache/fault/campaign.h"
#include "lmcache/fault/fault_inject_adapter.h"
#include "lmcache/fault/fault_log.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::fault_internal {

// epoch_inner_config()
//
// options.inner as epoch `epoch` builds it. A real store (resp, fs) keeps what earlier epochs
// wrote, so each epoch writes under a key namespace of its own ("<base>-s<seed>e<epoch>") and
// starts empty like the model; the mock starts empty anyway (no namespace). Over the campaign's
// own server with storage faults, resp's breaker probes 100 ms after it opens unless the config
// says otherwise. `key_namespace` receives the namespace ("" for none).
Json epoch_inner_config(const fault::CampaignOptions& options, std::uint64_t epoch,
                        std::string* key_namespace);

class CampaignStack {
 public:
  // Builds the stack of epoch `epoch` (see above), its faults recorded in `log`. Throws what
  // the layers' factories throw (a bad config, an unreachable directory).
  CampaignStack(const fault::CampaignOptions& options, std::uint64_t epoch,
                std::shared_ptr<fault::FaultLog> log);

  CampaignStack(const CampaignStack&) = delete;
  CampaignStack& operator=(const CampaignStack&) = delete;

  L2AdapterInterface& top() { return *top_; }
  L1Manager& l1() { return *l1_; }
  // L1's used bytes once the stack was built: what it holds again when no task is in flight.
  std::size_t l1_baseline() const { return l1_baseline_; }
  SerdeL2AdapterWrapper& wrapper() { return *wrapper_; }
  fault::FaultInjectL2Adapter& fault_injector() { return *fault_; }
  // The inner adapter when it is the mock; null for a real store.
  MockL2Adapter* mock() { return mock_; }
  const std::string& key_namespace() const { return key_namespace_; }
  // top()'s fds, read once when the stack was built (the driver polls them every wave).
  int store_fd() const { return store_fd_; }
  int load_fd() const { return load_fd_; }
  int lookup_fd() const { return lookup_fd_; }

  // describe()
  //
  // For the watchdog: where the fault injector holds the newest task of `key` (when given) and
  // the wrapper's tasks in flight by phase; "(status unavailable: ...)" when a layer throws.
  std::string describe(const std::optional<ObjectKey>& key);

 private:
  std::string key_namespace_;
  std::shared_ptr<L1Manager> l1_;  // first: the layers above hold buffers of it
  std::size_t l1_baseline_ = 0;
  L2AdapterPtr top_;
  SerdeL2AdapterWrapper* wrapper_ = nullptr;
  fault::FaultInjectL2Adapter* fault_ = nullptr;
  MockL2Adapter* mock_ = nullptr;
  int store_fd_ = -1, load_fd_ = -1, lookup_fd_ = -1;
};

}  // namespace lmcache::fault_internal
