#include "lmcache/testing/shadowed_adapter.h"

#include <chrono>
#include <stdexcept>

#include "lmcache/core/event_notifier.h"

namespace lmcache::storage_testing {

using namespace std::chrono_literals;

ShadowedAdapter::ShadowedAdapter(L2AdapterPtr primary, L2AdapterPtr shadow)
    : ForwardingL2Adapter(std::move(primary)), shadow_(std::move(shadow)) {
  if (!shadow_) throw std::invalid_argument("ShadowedAdapter: shadow is null");
}

TaskId ShadowedAdapter::submit_store_task(const std::vector<ObjectKey>& keys,
                                          const std::vector<MemoryObjPtr>& objects) {
  if (keys.size() == objects.size()) {  // malformed batches are the primary's to reject
    const TaskId id = shadow_->submit_store_task(keys, objects);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (bool done = false; !done;) {
      for (const auto& [tid, result] : shadow_->pop_completed_store_tasks()) {
        if (tid == id) done = true;
      }
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("ShadowedAdapter: the shadow store did not complete");
      }
      wait_readable(shadow_->get_store_event_fd(), 1ms);
    }
  }
  return ForwardingL2Adapter::submit_store_task(keys, objects);
}

void ShadowedAdapter::delete_keys(const std::vector<ObjectKey>& keys) {
  shadow_->delete_keys(keys);
  ForwardingL2Adapter::delete_keys(keys);
}

void ShadowedAdapter::close() {
  ForwardingL2Adapter::close();
  shadow_->close();
}

}  // namespace lmcache::storage_testing
