#include "lmcache/testing/adapter_waits.h"

#include "lmcache/core/event_notifier.h"

namespace lmcache::storage_testing {

using namespace std::chrono_literals;

std::optional<L2StoreResult> wait_store(L2AdapterInterface& a, TaskId id,
                                        std::chrono::milliseconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < deadline;) {
    wait_readable(a.get_store_event_fd(), 10ms);
    auto done = a.pop_completed_store_tasks();
    if (auto it = done.find(id); it != done.end()) return it->second;
  }
  return std::nullopt;
}

std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id,
                                std::chrono::milliseconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < deadline;) {
    wait_readable(a.get_load_event_fd(), 10ms);
    if (std::optional<Bitmap> bits = a.query_load_result(id)) return bits;
  }
  return std::nullopt;
}

}  // namespace lmcache::storage_testing
