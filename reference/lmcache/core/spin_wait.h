// File: lmcache/core/spin_wait.h
//
// AdaptiveSpinWaiter: how a thread that waits for completions one task at a time (a caller
// blocked on an adapter's store fd) waits on a machine where waking a sleeping thread is slow.
// On a VM an idle vCPU is descheduled by the host and waking it costs tens of µs, more than a
// short task's own hand-offs (bench/RESULTS.md). Re-checking the fd for a while before sleeping
// saves that wake-up when the event comes soon, and costs the CPU spent re-checking when it
// does not. The waiter spins only while spinning has been paying: it spins (up to max_spin)
// when its previous wait ended within twice max_spin, and sleeps at once after a longer one,
// so long tasks (a batch of 64 chunks) cost no CPU. It adapts back after one short wait, and
// spins on every kProbeEvery-th wait regardless: a wait that sleeps also pays the wake-up, so
// without the probe a machine whose wake-up alone exceeds twice max_spin would never spin
// again.
//
// Not thread-safe: one waiter per waiting thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace lmcache {

class AdaptiveSpinWaiter {
 public:
  // max_spin <= 0 never spins (every wait is wait_readable()).
  explicit AdaptiveSpinWaiter(std::chrono::microseconds max_spin);

  static constexpr std::uint64_t kProbeEvery = 8;

  // wait_readable()
  //
  // True when `fd` became readable within `timeout` (it does not consume the counter). Spins
  // first, as the class comment says, through wait_readable_spinning().
  bool wait_readable(int fd, std::chrono::milliseconds timeout);

  // spun() / waits() / waits_spun()
  //
  // The time spent re-checking so far (the CPU the spin cost), the waits so far, and how many
  // of them spun.
  std::chrono::nanoseconds spun() const { return spun_; }
  std::uint64_t waits() const { return waits_; }
  std::uint64_t waits_spun() const { return waits_spun_; }

  std::chrono::microseconds max_spin() const { return max_spin_; }

 private:
  const std::chrono::microseconds max_spin_;
  std::chrono::nanoseconds last_wait_{0};  // how long the previous wait took
  std::uint64_t since_spin_ = 0;           // waits since the last one that spun
  std::chrono::nanoseconds spun_{0};
  std::uint64_t waits_ = 0;
  std::uint64_t waits_spun_ = 0;
};

}  // namespace lmcache
