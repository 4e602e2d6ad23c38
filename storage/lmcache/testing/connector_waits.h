// Waiting for one batch of a native connector in the storage tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "lmcache/bridge/native_connector.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::storage_testing {

// wait_completion()
//
// The completion of batch `id` of `connector` (any native connector: event_fd() and
// drain_completions(), e.g. FsConnector, RespConnector), read when its fd says something
// completed, or std::nullopt when it has not completed within `timeout`. Completions of other
// batches drained meanwhile are dropped.
template <typename Connector>
std::optional<bridge::Completion> wait_completion(Connector& connector, std::uint64_t id,
                                                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    wait_readable(connector.event_fd(), std::chrono::milliseconds(10));
    for (bridge::Completion& done : connector.drain_completions()) {
      if (done.future_id == id) return std::move(done);
    }
  }
  return std::nullopt;
}

}  // namespace lmcache::storage_testing
