#include "lmcache/conformance/doubles.h"

#include <stdexcept>

#include "lmcache/serde/async_serde_processor.h"

namespace lmcache::conformance {

std::size_t ScriptedSerializer::serialize(const MemoryObj& src, MemoryObj& dst) {
  long n = faults_->serialize_calls.fetch_add(1);
  if (faults_->serialize_fail_always || n == faults_->serialize_fail_at) {
    throw std::runtime_error("injected serialize failure (call " + std::to_string(n) + ")");
  }
  return inner_.serialize(src, dst);
}

void ScriptedDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst) {
  faults_->deserialize_calls.fetch_add(1);
  if (faults_->deserialize_fail_always) throw std::runtime_error("injected deserialize failure");
  inner_.deserialize(src, dst);
}

ScriptedProcessor::ScriptedProcessor(std::shared_ptr<SerdeFaults> faults)
    : ForwardingSerdeProcessor(
          std::make_unique<AsyncSerdeProcessor>(std::make_shared<ScriptedSerializer>(faults),
                                                std::make_shared<ScriptedDeserializer>(faults))),
      faults_(std::move(faults)) {}

TaskId ScriptedProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                           std::vector<MemoryObjPtr> dsts) {
  if (faults_->throw_on_submit_serialize) {
    throw std::runtime_error("injected submit_serialize failure");
  }
  return ForwardingSerdeProcessor::submit_serialize(std::move(srcs), std::move(dsts));
}

TaskId ScriptedProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                             std::vector<MemoryObjPtr> dsts) {
  if (faults_->throw_on_submit_deserialize) {
    throw std::runtime_error("injected submit_deserialize failure");
  }
  return ForwardingSerdeProcessor::submit_deserialize(std::move(srcs), std::move(dsts));
}

void AdapterFaults::SetDroppedLoadIndices(std::set<std::size_t> indices) {
  std::lock_guard lock(mu_);
  drop_load_indices_ = std::move(indices);
}

std::set<std::size_t> AdapterFaults::DroppedLoadIndices() const {
  std::lock_guard lock(mu_);
  return drop_load_indices_;
}

ScriptedAdapter::ScriptedAdapter(std::shared_ptr<L2AdapterInterface> inner,
                                 std::shared_ptr<AdapterFaults> faults)
    : inner_(std::move(inner)), faults_(std::move(faults)) {
  if (!inner_ || !faults_) throw std::invalid_argument("ScriptedAdapter: null inner or faults");
}

TaskId ScriptedAdapter::submit_store_task(const std::vector<ObjectKey>& keys,
                                          const std::vector<MemoryObjPtr>& objects) {
  if (faults_->throw_on_submit_store)
    throw std::runtime_error("injected inner submit_store failure");
  return inner_->submit_store_task(keys, objects);
}

std::map<TaskId, L2StoreResult> ScriptedAdapter::pop_completed_store_tasks() {
  std::lock_guard lock(mu_);
  for (auto& [id, r] : inner_->pop_completed_store_tasks()) {
    held_.emplace(id, faults_->fail_stores ? L2StoreResult::failure() : r);
  }
  if (faults_->hold_results) return {};
  return std::exchange(held_, {});
}

TaskId ScriptedAdapter::submit_load_task(const std::vector<ObjectKey>& keys,
                                         const std::vector<MemoryObjPtr>& objects) {
  if (faults_->throw_on_submit_load) throw std::runtime_error("injected inner submit_load failure");
  return inner_->submit_load_task(keys, objects);
}

std::optional<Bitmap> ScriptedAdapter::query_load_result(TaskId id) {
  if (faults_->hold_results) return std::nullopt;
  std::optional<Bitmap> bits = inner_->query_load_result(id);
  if (bits) {
    for (std::size_t i : faults_->DroppedLoadIndices()) bits->clear(i);
  }
  return bits;
}

}  // namespace lmcache::conformance
