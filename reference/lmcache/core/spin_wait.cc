#include "lmcache/core/spin_wait.h"

#include "lmcache/core/event_notifier.h"

namespace lmcache {

AdaptiveSpinWaiter::AdaptiveSpinWaiter(std::chrono::microseconds max_spin)
    : max_spin_(max_spin.count() > 0 ? max_spin : std::chrono::microseconds(0)) {}

bool AdaptiveSpinWaiter::wait_readable(int fd, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const bool spin =
      max_spin_.count() > 0 && (last_wait_ <= 2 * max_spin_ || since_spin_ + 1 >= kProbeEvery);
  const Clock::time_point start = Clock::now();
  const bool ready =
      wait_readable_spinning(fd, spin ? max_spin_ : std::chrono::microseconds(0), timeout, &spun_);
  last_wait_ = Clock::now() - start;
  ++waits_;
  if (spin) {
    ++waits_spun_;
    since_spin_ = 0;
  } else {
    ++since_spin_;
  }
  return ready;
}

}  // namespace lmcache
