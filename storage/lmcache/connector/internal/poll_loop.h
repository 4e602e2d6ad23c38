// File: lmcache/connector/internal/poll_loop.h
//
// PollLoop: one background thread that polls a few fds plus its own wake fd and calls back after
// every wake-up. The bridge's demux loop; kept small and on its own so that it can give way to
// a shared poll-loop helper in reference/lmcache/core once there is one.
//
// Each iteration: next_timeout_ms() gives the poll timeout (-1: none); poll() waits for POLLIN on
// the fds or the wake fd, or the timeout; the wake fd is drained; an fd that reports POLLERR or
// POLLNVAL is dropped from the set (on_broken(i)); then on_wake(readable) runs, readable[i] being
// whether fds[i] was readable. Fds coalesce, so on_wake() must look at everything pending.
//
// Thread safety: wake() from any thread; stop() from any thread but the loop's own.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"

namespace lmcache::connector_internal {

class PollLoop {
 public:
  struct Callbacks {
    std::function<int()> next_timeout_ms;
    std::function<void(const std::vector<bool>& readable)> on_wake;
    std::function<void(std::size_t index)> on_broken;
  };

  // Starts the thread. Throws std::system_error when the wake fd or the thread cannot be made.
  PollLoop(std::vector<int> fds, Callbacks callbacks);
  // stop().
  ~PollLoop();
  PollLoop(const PollLoop&) = delete;
  PollLoop& operator=(const PollLoop&) = delete;

  // Makes the loop run an iteration soon (to recompute its timeout).
  void wake();
  // Ends the loop and joins its thread; idempotent. The callbacks are not called afterwards.
  void stop();
  bool on_loop_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void run();

  std::vector<int> fds_;
  Callbacks callbacks_;
  EventNotifier wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace lmcache::connector_internal
