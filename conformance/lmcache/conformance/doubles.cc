#include "lmcache/conformance/doubles.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "lmcache/serde/async_serde_processor.h"

namespace lmcache::conformance {

std::size_t ScriptedSerializer::serialize(const MemoryObj& src, MemoryObj& dst,
                                          const ObjectKey& key) {
  long n = faults_->serialize_calls.fetch_add(1);
  if (faults_->serialize_fail_always || n == faults_->serialize_fail_at) {
    throw std::runtime_error("injected serialize failure (call " + std::to_string(n) + ")");
  }
  return inner_.serialize(src, dst, key);
}

void ScriptedDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  long n = faults_->deserialize_calls.fetch_add(1);
  if (faults_->count_deserialize_into(dst) || faults_->deserialize_fail_always) {
    throw std::runtime_error("injected deserialize failure (call " + std::to_string(n) + ")");
  }
  inner_.deserialize(src, dst, key);
}

void SerdeFaults::watch_deserialize_into(const std::vector<MemoryObjPtr>& dsts, long i) {
  std::lock_guard lock(watch_mu_);
  watched_dsts_.clear();
  for (const auto& d : dsts) watched_dsts_.insert(d.get());
  watched_calls_ = 0;
  watched_fail_at_ = i;
}

void SerdeFaults::unwatch_deserialize() {
  std::lock_guard lock(watch_mu_);
  watched_dsts_.clear();
  watched_fail_at_ = -1;
}

long SerdeFaults::watched_deserialize_calls() const {
  std::lock_guard lock(watch_mu_);
  return watched_calls_;
}

bool SerdeFaults::count_deserialize_into(const MemoryObj& dst) {
  std::lock_guard lock(watch_mu_);
  if (!watched_dsts_.count(&dst)) return false;
  return watched_calls_++ == watched_fail_at_;
}

ScriptedProcessor::ScriptedProcessor(std::shared_ptr<SerdeFaults> faults)
    : ForwardingSerdeProcessor(
          std::make_unique<AsyncSerdeProcessor>(std::make_shared<ScriptedSerializer>(faults),
                                                std::make_shared<ScriptedDeserializer>(faults))),
      faults_(std::move(faults)) {}

TaskId ScriptedProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                           std::vector<MemoryObjPtr> dsts,
                                           std::vector<ObjectKey> keys) {
  if (faults_->throw_on_submit_serialize) {
    throw std::runtime_error("injected submit_serialize failure");
  }
  return ForwardingSerdeProcessor::submit_serialize(std::move(srcs), std::move(dsts),
                                                    std::move(keys));
}

TaskId ScriptedProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                             std::vector<MemoryObjPtr> dsts,
                                             std::vector<ObjectKey> keys) {
  if (faults_->throw_on_submit_deserialize) {
    throw std::runtime_error("injected submit_deserialize failure");
  }
  return ForwardingSerdeProcessor::submit_deserialize(std::move(srcs), std::move(dsts),
                                                      std::move(keys));
}

std::optional<bool> ScriptedProcessor::query_serialize_result(TaskId id) {
  if (faults_->throw_on_query) throw std::runtime_error("injected query_serialize_result failure");
  return ForwardingSerdeProcessor::query_serialize_result(id);
}

std::optional<bool> ScriptedProcessor::query_deserialize_result(TaskId id) {
  if (faults_->throw_on_query) {
    throw std::runtime_error("injected query_deserialize_result failure");
  }
  return ForwardingSerdeProcessor::query_deserialize_result(id);
}

void ScriptedProcessor::close() {
  faults_->closed = true;
  ForwardingSerdeProcessor::close();
}

void AdapterFaults::set_usage_override(std::optional<AdapterUsage> usage) {
  std::lock_guard lock(mu_);
  usage_override_ = std::move(usage);
}

std::optional<AdapterUsage> AdapterFaults::usage_override() const {
  std::lock_guard lock(mu_);
  return usage_override_;
}

AdapterFaults::Records AdapterFaults::records() const {
  std::lock_guard lock(mu_);
  return records_;
}

void AdapterFaults::clear_records() {
  std::lock_guard lock(mu_);
  records_ = {};
}

void AdapterFaults::set_dropped_load_indices(std::set<std::size_t> indices) {
  std::lock_guard lock(mu_);
  drop_load_indices_ = std::move(indices);
}

std::set<std::size_t> AdapterFaults::dropped_load_indices() const {
  std::lock_guard lock(mu_);
  return drop_load_indices_;
}

ScriptedAdapter::ScriptedAdapter(std::shared_ptr<L2AdapterInterface> inner,
                                 std::shared_ptr<AdapterFaults> faults,
                                 ForwardedCapabilities forwarded)
    : ForwardingL2Adapter(std::move(inner)), faults_(std::move(faults)), forwarded_(forwarded) {
  if (!faults_) throw std::invalid_argument("ScriptedAdapter: null faults");
}

TaskId ScriptedAdapter::submit_store_task(const std::vector<ObjectKey>& keys,
                                          const std::vector<MemoryObjPtr>& objects) {
  if (faults_->throw_on_submit_store)
    throw std::runtime_error("injected inner submit_store failure");
  // Under the lock, so that a pop cannot see the result before the record exists.
  std::lock_guard lock(faults_->mu_);
  TaskId id = inner().submit_store_task(keys, objects);
  faults_->records_.stores[id].keys = keys;
  return id;
}

std::map<TaskId, L2StoreResult> ScriptedAdapter::pop_completed_store_tasks() {
  std::lock_guard lock(mu_);
  for (auto& [id, r] : inner().pop_completed_store_tasks()) {
    L2StoreResult result = faults_->fail_stores ? L2StoreResult::failure() : r;
    held_.emplace(id, result);
    std::lock_guard records(faults_->mu_);
    faults_->records_.stores[id].result = result;
  }
  if (faults_->hold_results) return {};
  return std::exchange(held_, {});
}

void ScriptedAdapter::submit_unlock(const std::vector<ObjectKey>& keys) {
  {
    std::lock_guard lock(faults_->mu_);
    faults_->records_.unlocks.push_back(keys);
  }
  inner().submit_unlock(keys);
}

void ScriptedAdapter::delete_keys(const std::vector<ObjectKey>& keys) {
  {
    std::lock_guard lock(faults_->mu_);
    faults_->records_.deletes.push_back(keys);
  }
  inner().delete_keys(keys);
}

AdapterUsage ScriptedAdapter::get_usage() const {
  if (std::optional<AdapterUsage> u = faults_->usage_override()) return *u;
  return inner().get_usage();
}

bool ScriptedAdapter::supports_global_eviction() const {
  const int o = faults_->eviction_override.load();
  return o < 0 ? inner().supports_global_eviction() : o == 1;
}

void ScriptedAdapter::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  {
    std::lock_guard lock(faults_->mu_);
    ++faults_->records_.listeners_registered;
  }
  inner().register_listener(std::move(listener));
}

Json ScriptedAdapter::report_status() const {
  Json status = inner().report_status();
  if (long marker = faults_->status_marker.load(); marker >= 0 && status.is_object()) {
    status["scripted_inner_marker"] = marker;
  }
  return status;
}

void ScriptedAdapter::close() {
  {
    std::lock_guard lock(faults_->mu_);
    faults_->records_.closed = true;
  }
  inner().close();
}

TaskId ScriptedAdapter::submit_load_task(const std::vector<ObjectKey>& keys,
                                         const std::vector<MemoryObjPtr>& objects) {
  if (faults_->throw_on_submit_load) throw std::runtime_error("injected inner submit_load failure");
  return inner().submit_load_task(keys, objects);
}

std::optional<Bitmap> ScriptedAdapter::query_load_result(TaskId id) {
  if (faults_->hold_results) return std::nullopt;
  if (faults_->throw_on_query_load) throw std::runtime_error("injected inner query_load failure");
  std::optional<Bitmap> bits = inner().query_load_result(id);
  if (!bits) return bits;
  return apply_load_faults(std::move(*bits), nullptr);
}

TaskId ScriptedAdapter::submit_load_view_task(const std::vector<ObjectKey>& keys) {
  if (!forwarded_.load_views) return L2AdapterInterface::submit_load_view_task(keys);  // throws
  if (faults_->throw_on_submit_load) throw std::runtime_error("injected inner submit_load failure");
  return inner().submit_load_view_task(keys);
}

std::optional<L2LoadViews> ScriptedAdapter::query_load_view_result(TaskId id) {
  if (faults_->hold_results) return std::nullopt;
  if (faults_->throw_on_query_load) throw std::runtime_error("injected inner query_load failure");
  std::optional<L2LoadViews> r = inner().query_load_view_result(id);
  if (!r) return r;
  r->loaded = apply_load_faults(std::move(r->loaded), &r->views);
  return r;
}

Bitmap ScriptedAdapter::apply_load_faults(Bitmap bits, std::vector<MemoryObjPtr>* views) const {
  for (std::size_t i : faults_->dropped_load_indices()) {
    bits.clear(i);
    if (views != nullptr && i < views->size()) (*views)[i] = nullptr;
  }
  if (const int delta = faults_->load_bitmap_size_delta.load(); delta != 0) {
    const std::size_t n =
        delta > 0 ? bits.size() + static_cast<std::size_t>(delta)
                  : bits.size() - std::min(bits.size(), static_cast<std::size_t>(-delta));
    Bitmap resized(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (i >= bits.size() || bits.test(i)) resized.set(i);
    }
    bits = resized;
    if (views != nullptr) views->resize(n);
  }
  return bits;
}

}  // namespace lmcache::conformance
