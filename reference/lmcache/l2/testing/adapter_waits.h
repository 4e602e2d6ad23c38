// File: lmcache/l2/testing/adapter_waits.h
//
// Waiting for an adapter's one-shot results in the l2 tests: poll the query, sleeping on the
// result's fd between tries. The limit is generous: it is never a speed assertion.
#pragma once

#include <chrono>
#include <optional>

#include "lmcache/core/event_notifier.h"

namespace lmcache::l2_testing {

inline constexpr std::chrono::milliseconds kResultWait{5000};

// wait_for_result()
//
// Calls `query` (returning an optional) until it has a value or `timeout` passes, waiting up to
// 50 ms on `fd` between calls and consuming what it signalled. Returns the last answer.
template <class Query>
auto wait_for_result(int fd, Query&& query, std::chrono::milliseconds timeout = kResultWait)
    -> decltype(query()) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto r = query()) return r;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    if (wait_readable(fd, std::chrono::milliseconds(50))) consume_fd(fd);
  }
}

}  // namespace lmcache::l2_testing
