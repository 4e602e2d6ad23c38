// File: lmcache/core/testing/gate.h
//
// Test support (never installed): a one-shot gate that holds a thread (a fake serde step, an
// inner adapter's call) until the test opens it. Every wait is bounded, so a broken
// implementation fails the test instead of hanging it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace lmcache::core_internal {

class Gate {
 public:
  // Opens the gate for good: every wait() returns, now and later.
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

  // Blocks until open() or until `limit` passes; true when the gate was opened.
  bool wait(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    entered_ = true;
    cv_.notify_all();
    return cv_.wait_for(lock, limit, [&] { return open_; });
  }

  // Blocks until some thread has called wait(), or until `limit` passes; true when one has.
  bool wait_entered(std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return entered_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool entered_ = false;
};

}  // namespace lmcache::core_internal
