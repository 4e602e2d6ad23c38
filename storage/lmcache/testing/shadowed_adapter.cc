#include "lmcache/testing/shadowed_adapter.h"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/stall_tolerant_deadline.h"

namespace lmcache::storage_testing {

namespace {

using namespace std::chrono_literals;

// Polls the shadow until `poll` has its result, sleeping on the shadow's `fd` in between. The
// shadow is this decorator's own, so nobody else reads its fds: the counter is drained before
// each poll, or a notify left on it would make every later wait return at once (a spin that
// took a core from the adapters under test while a wrapper stored).
template <class Poll>
auto wait_for(Poll&& poll, int fd, const char* what) {
  StallTolerantDeadline deadline(10s);
  for (;;) {
    consume_fd(fd);
    if (auto r = poll()) return *r;
    if (deadline.expired()) {
      throw std::runtime_error(std::string("ShadowedAdapter: the shadow's ") + what +
                               " did not complete");
    }
    wait_readable(fd, 1ms);
  }
}

}  // namespace

ShadowedAdapter::ShadowedAdapter(L2AdapterPtr primary, L2AdapterPtr shadow)
    : ForwardingL2Adapter(std::move(primary)), shadow_(std::move(shadow)) {
  if (!shadow_) throw std::invalid_argument("ShadowedAdapter: shadow is null");
}

TaskId ShadowedAdapter::submit_store_task(const std::vector<ObjectKey>& keys,
                                          const std::vector<MemoryObjPtr>& objects) {
  if (keys.size() != objects.size()) {  // malformed batches are the primary's to reject
    return ForwardingL2Adapter::submit_store_task(keys, objects);
  }
  std::shared_lock open(shadow_open_);
  const TaskId sid = shadow_->submit_store_task(keys, objects);
  // Several threads may store at once (a wrapper stores from its submitters and from its loop):
  // whichever pops the shadow's results keeps the others' for them.
  const L2StoreResult shadow_result = wait_for(
      [&]() -> std::optional<L2StoreResult> {
        std::lock_guard lock(shadow_mu_);
        for (auto& [id, result] : shadow_->pop_completed_store_tasks()) {
          shadow_popped_.insert_or_assign(id, result);
        }
        auto it = shadow_popped_.find(sid);
        if (it == shadow_popped_.end()) return std::nullopt;
        const L2StoreResult result = it->second;
        shadow_popped_.erase(it);
        return result;
      },
      shadow_->get_store_event_fd(), "store");
  open.unlock();
  // Registered before the primary can complete it (under the lock pops take too).
  std::lock_guard lock(mu_);
  const TaskId id = ForwardingL2Adapter::submit_store_task(keys, objects);
  shadow_results_.insert_or_assign(id, shadow_result);
  return id;
}

std::map<TaskId, L2StoreResult> ShadowedAdapter::pop_completed_store_tasks() {
  std::lock_guard lock(mu_);
  std::map<TaskId, L2StoreResult> done = ForwardingL2Adapter::pop_completed_store_tasks();
  for (auto& [id, result] : done) {
    auto it = shadow_results_.find(id);
    if (it == shadow_results_.end()) continue;
    if (result.is_successful()) {
      result = it->second.is_successful() ? L2StoreResult::success(it->second.bytes_transferred())
                                          : L2StoreResult::failure();
    }
    shadow_results_.erase(it);
  }
  return done;
}

TaskId ShadowedAdapter::submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) {
  {
    std::shared_lock open(shadow_open_);
    const TaskId sid = shadow_->submit_lookup_and_lock_task(keys);
    wait_for([&] { return shadow_->query_lookup_and_lock_result(sid); },
             shadow_->get_lookup_and_lock_event_fd(), "lookup");
  }
  return ForwardingL2Adapter::submit_lookup_and_lock_task(keys);
}

void ShadowedAdapter::submit_unlock(const std::vector<ObjectKey>& keys) {
  shadow_->submit_unlock(keys);
  ForwardingL2Adapter::submit_unlock(keys);
}

void ShadowedAdapter::delete_keys(const std::vector<ObjectKey>& keys) {
  shadow_->delete_keys(keys);
  ForwardingL2Adapter::delete_keys(keys);
}

void ShadowedAdapter::close() {
  ForwardingL2Adapter::close();
  std::unique_lock open(shadow_open_);
  shadow_->close();
}

}  // namespace lmcache::storage_testing
