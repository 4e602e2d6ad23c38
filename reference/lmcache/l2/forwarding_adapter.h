// File: lmcache/l2/forwarding_adapter.h
//
// ForwardingL2Adapter: a decorator base (RocksDB's *Wrapper idiom). It holds an inner adapter
// (owned, or shared with whoever made it) and forwards every call to it; a decorator overrides only
// what it changes (fault injection, instrumentation, test doubles). Event fds are the inner's, so a
// decorator that rewrites results should do so when they are popped or queried. Load views are not
// forwarded (the default: no views): a decorator that changes loads would otherwise be bypassed by
// them; one that wants them forwards the three view members itself.
#pragma once

#include <memory>
#include <stdexcept>
#include <utility>

#include "lmcache/l2/l2_adapter.h"

namespace lmcache {

class ForwardingL2Adapter : public L2AdapterInterface {
 public:
  // Throws std::invalid_argument when `inner` is null. The inner adapter may be shared (a test
  // double whose test keeps inspecting it); an L2AdapterPtr converts.
  explicit ForwardingL2Adapter(std::shared_ptr<L2AdapterInterface> inner)
      : inner_(std::move(inner)) {
    if (!inner_) throw std::invalid_argument("ForwardingL2Adapter: inner adapter is null");
  }

  int get_store_event_fd() const override { return inner_->get_store_event_fd(); }
  int get_lookup_and_lock_event_fd() const override {
    return inner_->get_lookup_and_lock_event_fd();
  }
  int get_load_event_fd() const override { return inner_->get_load_event_fd(); }

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    return inner_->submit_store_task(keys, objects);
  }
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    return inner_->pop_completed_store_tasks();
  }
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override {
    return inner_->submit_lookup_and_lock_task(keys);
  }
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override {
    return inner_->query_lookup_and_lock_result(id);
  }
  void submit_unlock(const std::vector<ObjectKey>& keys) override { inner_->submit_unlock(keys); }
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    return inner_->submit_load_task(keys, objects);
  }
  std::optional<Bitmap> query_load_result(TaskId id) override {
    return inner_->query_load_result(id);
  }
  // Lent buffers pass through: the inner adapter adopts them only when this decorator hands
  // the caller's objects on to its submit_store_task(); a decorator that stores objects of its
  // own makes the inner copy those, and the lent ones go back when the caller drops them.
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    return inner_->lend_store_buffers(keys, layout);
  }
  std::uint64_t lent_bytes_outstanding() const override { return inner_->lent_bytes_outstanding(); }
  void delete_keys(const std::vector<ObjectKey>& keys) override { inner_->delete_keys(keys); }
  AdapterUsage get_usage() const override { return inner_->get_usage(); }
  bool supports_global_eviction() const override { return inner_->supports_global_eviction(); }
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    inner_->register_listener(std::move(listener));
  }
  Json report_status() const override { return inner_->report_status(); }
  void close() override { inner_->close(); }

  L2AdapterInterface& inner() { return *inner_; }
  const L2AdapterInterface& inner() const { return *inner_; }

 private:
  std::shared_ptr<L2AdapterInterface> inner_;
};

}  // namespace lmcache
