// File: lmcache/core/stall_tolerant_deadline.h
//
// StallTolerantDeadline: the time limit of a wait on another thread's progress (a result, a
// notify, a released thread or lock) that does not count time in which nothing ran. A
// whole-machine stall (a paused VM, a host swapping, an oversubscribed CI runner) stops the
// waited-on thread and the waiter alike; a plain deadline then expires on its first check after
// the stall, and a check that must allow a correct implementation its time fails it for time it
// was never given. The waiter sees the stall as a long gap between two of its own checks, which
// it makes every few milliseconds: a gap above `max_gap` moves the deadline out by the gap, up to
// `max_extension` in all.
//
// Not thread-safe: one deadline per waiting thread.
#pragma once

#include <chrono>

namespace lmcache {

class StallTolerantDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A gap between two checks longer than this is a stall. Waiters that sleep at most a few
  // tens of milliseconds between checks never come near it on a machine that runs them.
  static constexpr Clock::duration kDefaultMaxGap = std::chrono::milliseconds(250);
  // The most the stalls may add in all. A gap is also what the waiter's own calls take between
  // two checks: without a cap, a waited-on implementation whose every call took longer than
  // max_gap would never let the deadline expire.
  static constexpr Clock::duration kDefaultMaxExtension = std::chrono::seconds(30);

  // Expires `budget` from now, plus the stalls the checks see (at most `max_extension`).
  explicit StallTolerantDeadline(Clock::duration budget, Clock::duration max_gap = kDefaultMaxGap,
                                 Clock::duration max_extension = kDefaultMaxExtension)
      : StallTolerantDeadline(Clock::now(), budget, max_gap, max_extension) {}

  // As above, from `start` (a test's fake clock).
  StallTolerantDeadline(Clock::time_point start, Clock::duration budget, Clock::duration max_gap,
                        Clock::duration max_extension = kDefaultMaxExtension)
      : end_(start + budget),
        last_check_(start),
        max_gap_(max_gap),
        extension_left_(max_extension) {}

  // expired()
  //
  // Whether the budget is spent at `now` (default: the clock's now); once true, it stays true.
  // Call it between the steps of a wait, checks at most `max_gap` apart; `now` must not go
  // backwards from the last call.
  bool expired(Clock::time_point now = Clock::now()) {
    if (expired_) return true;
    if (const Clock::duration gap = now - last_check_; gap > max_gap_) {
      const Clock::duration extension = gap < extension_left_ ? gap : extension_left_;
      end_ += extension;
      extension_left_ -= extension;
    }
    last_check_ = now;
    expired_ = now >= end_;
    return expired_;
  }

 private:
  Clock::time_point end_;
  Clock::time_point last_check_;
  Clock::duration max_gap_;
  Clock::duration extension_left_;
  bool expired_ = false;
};

}  // namespace lmcache
