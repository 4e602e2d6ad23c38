// File: lmcache/core/poll_loop.h
//
// PollLoop: the one event loop of the stack's decorators (the serde wrapper, the fault
// injector, and the storage connectors that come next). A component that consumes other
// components' completion eventfds on a thread of its own owns one PollLoop and gives it:
//
//   - the fds to watch (its inner components' completion fds), fixed at construction;
//   - the scan steps to run after every wake-up (each drains one source of completions);
//   - optionally a deadline function, for owners that also act at times of their own (the
//     fault injector's delayed publications).
//
// The loop's contract (docs/async-completion.md, "Poll loops"):
//   1. It waits on the fds plus its own wake fd, for at most options.max_wait or until the
//      owner's next deadline, whichever is sooner.
//   2. After every wake-up (an fd, wake(), the deadline or the safety timeout) it first drains
//      the counters of every readable fd, then runs *every* scan step in order. Draining first
//      means a completion stored after the drain signals again, so nothing is lost; scanning
//      everything means folded or spurious wake-ups are harmless.
//   3. A scan step that throws does not stop the loop or the other steps: the exception is
//      counted (exceptions_swallowed()) and its message kept (last_exception()), so the owner
//      can report it. Only a component breaking its contract makes a step throw.
//   4. stop() wakes the loop through its own fd (never waiting out a poll timeout), joins the
//      thread and closes the wake fd. After stop() returns no scan step runs again.
//   5. An fd that reports POLLERR or POLLNVAL (closed under the loop) is dropped from the wait
//      set, so the loop never spins on it; broken_fd_count() counts them and the owner's steps
//      keep running on the other events.
//
// options.consume_fds = false leaves the counters to the owner: the loop only waits, and the
// steps drain what is readable themselves. For fds whose owner's own call must do the draining
// (a native connector's drain_completions(), storage/README.md), where a read by the loop would
// swallow the signal the connector relies on.
//
// Thread safety: wake(), exceptions_swallowed() and last_exception() may be called from any
// thread, including from a scan step. start() and stop() are for the owner (not from a step).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"

namespace lmcache {

struct PollLoopOptions {
  // Upper bound of one wait: only a safety net, since every event wakes the loop.
  std::chrono::milliseconds max_wait{500};
  // Whether the loop drains the counters of readable fds before the steps (rule 2). false: the
  // steps drain them (rule 2's "drain before scan" is then the owner's to keep).
  bool consume_fds = true;
};

class PollLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using Step = std::function<void()>;
  // The next time the owner needs a scan without any fd event; Clock::time_point::max() for
  // none. Called on the loop thread before every wait.
  using NextDeadline = std::function<Clock::time_point()>;

  // Throws std::invalid_argument for an empty step or a negative fd, std::system_error when the
  // wake fd cannot be created. Does not start the thread (start() does).
  PollLoop(std::vector<int> fds, std::vector<Step> steps, PollLoopOptions options = {},
           NextDeadline next_deadline = {});
  // Stops the loop (stop()).
  ~PollLoop();

  PollLoop(const PollLoop&) = delete;
  PollLoop& operator=(const PollLoop&) = delete;

  // start()
  //
  // Starts the loop thread. Throws std::logic_error when called twice or after stop().
  void start();

  // wake()
  //
  // Makes the loop scan soon (e.g. after a submit changed the owner's deadline). A no-op after
  // stop().
  void wake();

  // stop()
  //
  // Idempotent. Wakes and joins the loop thread, then closes the wake fd. Must not be called
  // from a scan step.
  void stop();

  // exceptions_swallowed() / last_exception()
  //
  // How many scan steps have thrown, and the message of the last one ("" when none).
  std::uint64_t exceptions_swallowed() const;
  std::string last_exception() const;

  // broken_fd_count()
  //
  // How many of the watched fds have been dropped for POLLERR / POLLNVAL (rule 5).
  std::uint64_t broken_fd_count() const { return broken_fds_.load(std::memory_order_acquire); }

  // on_loop_thread()
  //
  // True when called on the loop's thread (from a scan step or what it calls): owners use it to
  // refuse waits the loop itself would have to finish.
  bool on_loop_thread() const {
    return loop_thread_.load(std::memory_order_acquire) == std::this_thread::get_id();
  }

 private:
  void run();
  void record_exception(std::string what);

  const std::vector<int> fds_;
  const std::vector<Step> steps_;
  const PollLoopOptions options_;
  const NextDeadline next_deadline_;
  EventNotifier wake_;
  std::mutex wake_mu_;        // wake() against stop() closing wake_
  bool wake_closed_ = false;  // guarded by wake_mu_
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> broken_fds_{0};
  std::atomic<std::thread::id> loop_thread_{};  // set by run(), before the first step
  std::thread thread_;
  std::mutex lifecycle_mu_;  // start() / stop()
  bool started_ = false;
  bool stopped_ = false;
  mutable std::mutex error_mu_;
  std::uint64_t exceptions_ = 0;
  std::string last_exception_;
};

}  // namespace lmcache
