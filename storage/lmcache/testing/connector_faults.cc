#include "lmcache/testing/connector_faults.h"

#include <stdexcept>

namespace lmcache::storage_testing {

FaultyConnector::FaultyConnector(bridge::ErasedConnectorPtr inner,
                                 std::shared_ptr<ConnectorFaults> faults)
    : ForwardingConnector(std::move(inner)), faults_(std::move(faults)) {
  if (!faults_) throw std::invalid_argument("FaultyConnector: faults is null");
}

void FaultyConnector::on_submit() const {
  faults_->submits.fetch_add(1);
  if (faults_->throw_on_submit.load()) throw std::runtime_error("FaultyConnector: injected throw");
  if (faults_->refuse_connections.load()) {
    throw std::runtime_error("FaultyConnector: injected connect: connection refused");
  }
}

std::uint64_t FaultyConnector::submit_batch_get(const std::vector<std::string>& keys,
                                                const std::vector<void*>& bufs,
                                                const std::vector<std::size_t>& lens,
                                                std::size_t chunk) {
  on_submit();
  return ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
}

std::uint64_t FaultyConnector::submit_batch_set(const std::vector<std::string>& keys,
                                                const std::vector<void*>& bufs,
                                                const std::vector<std::size_t>& lens,
                                                std::size_t chunk) {
  on_submit();
  // Registered under the lock so that drain_completions() cannot see the id first.
  std::lock_guard lock(mu_);
  const std::uint64_t id = ForwardingConnector::submit_batch_set(keys, bufs, lens, chunk);
  if (faults_->fail_sets_after_write.load()) failing_sets_.insert(id);
  return id;
}

std::uint64_t FaultyConnector::submit_batch_exists(const std::vector<std::string>& keys) {
  on_submit();
  return ForwardingConnector::submit_batch_exists(keys);
}

std::uint64_t FaultyConnector::submit_batch_delete(const std::vector<std::string>& keys) {
  on_submit();
  return ForwardingConnector::submit_batch_delete(keys);
}

std::vector<bridge::Completion> FaultyConnector::drain_completions() {
  std::vector<bridge::Completion> in = ForwardingConnector::drain_completions();
  std::lock_guard lock(mu_);
  std::vector<bridge::Completion> out = std::move(released_);
  released_.clear();
  for (bridge::Completion& c : in) {
    if (failing_sets_.erase(c.future_id) != 0) {
      c.ok = false;
      c.error = "FaultyConnector: injected set failure (after writing)";
    }
    if (faults_->hold_completions.load()) {
      held_.push_back(std::move(c));
    } else {
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::size_t FaultyConnector::release_held() {
  std::lock_guard lock(mu_);
  const std::size_t n = held_.size();
  for (auto& c : held_) released_.push_back(std::move(c));
  held_.clear();
  return n;
}

std::size_t FaultyConnector::held() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace lmcache::storage_testing
