// File: lmcache/testing/connector_faults.h
//
// FaultyConnector: a decorator (ForwardingConnector) over any connector that injects the
// failures a bridge must survive, switchable while it runs through a shared ConnectorFaults:
//   fail_sets_after_write  a set is forwarded (the store writes it) but completes ok = false;
//   hold_completions       completions drained from the inner connector are kept back (a
//                          connector that never completes); release_held() hands them out at
//                          the next drain, i.e. the next time the inner fd is readable;
//   throw_on_submit        every submit throws std::runtime_error before reaching the store;
//   refuse_connections     every submit throws std::runtime_error("...connection refused"), a
//                          connection-class error (circuit_breaker.h), before reaching the store.
// `submits` counts every submit call, refused or not.
// Used by the bridge checks (bridge_checks.h) over every connector, and by fault campaigns.
//
// Thread safety: as the inner connector; the switches are atomic.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "lmcache/bridge/erased_connector.h"

namespace lmcache::storage_testing {

struct ConnectorFaults {
  std::atomic<bool> fail_sets_after_write{false};
  std::atomic<bool> hold_completions{false};
  std::atomic<bool> throw_on_submit{false};
  std::atomic<bool> refuse_connections{false};
  std::atomic<std::uint64_t> submits{0};
};

class FaultyConnector final : public bridge::ForwardingConnector {
 public:
  FaultyConnector(bridge::ErasedConnectorPtr inner, std::shared_ptr<ConnectorFaults> faults);

  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override;
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override;
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override;
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override;
  std::vector<bridge::Completion> drain_completions() override;

  // Moves the held completions to the next drain; returns how many.
  std::size_t release_held();
  std::size_t held() const;

 private:
  void on_submit() const;

  std::shared_ptr<ConnectorFaults> faults_;
  mutable std::mutex mu_;
  std::set<std::uint64_t> failing_sets_;
  std::vector<bridge::Completion> held_;
  std::vector<bridge::Completion> released_;
};

}  // namespace lmcache::storage_testing
