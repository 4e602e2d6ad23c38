// File: lmcache/conformance/internal/waits.h
//
// Time limits shared by the asynchronous suites. Results are polled (never waited for through
// the fd, so that the fd's counter can be checked afterwards); the limits are generous because
// CI runs the suites under sanitizers on two slow cores, and a correct implementation never
// waits them out.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/stall_tolerant_deadline.h"

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types

using namespace std::chrono_literals;

// scaled()
//
// `base` times LMCACHE_CONFORMANCE_TIMEOUT_SCALE (a positive number, default 1): slower machines
// raise it; the self-tests lower it, because their mutants wait out every limit.
inline std::chrono::milliseconds scaled(std::chrono::milliseconds base) {
  static const double scale = [] {
    const char* s = std::getenv("LMCACHE_CONFORMANCE_TIMEOUT_SCALE");
    double v = s ? std::atof(s) : 1.0;
    return v > 0 ? v : 1.0;
  }();
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(base.count()) * scale));
}

// How long a task may take to complete.
inline std::chrono::milliseconds result_timeout() { return scaled(10s); }
// How long after its result is visible a task's notify may take to arrive.
inline std::chrono::milliseconds signal_grace() { return scaled(5s); }
// How long an eventually-consistent state (an unlock, a temp release, a joined thread) may take.
inline std::chrono::milliseconds settle_timeout() { return scaled(2s); }
// How long to watch for a notify that must not come (a double or cross notify).
inline constexpr std::chrono::milliseconds kSettle = 30ms;

// wait_deadline()
//
// The deadline of a wait that allows an implementation `budget`: whole-machine stalls the
// waiter sees (a paused VM, an oversubscribed CI machine) do not count, up to scaled(30 s) of
// them (lmcache/core/stall_tolerant_deadline.h). Check it every few milliseconds: a longer gap
// between two checks counts as a stall.
inline StallTolerantDeadline wait_deadline(std::chrono::milliseconds budget) {
  return StallTolerantDeadline(budget, StallTolerantDeadline::kDefaultMaxGap, scaled(30s));
}

// wait_signalled()
//
// Whether `fd` becomes readable within `budget` (a wait_deadline(): stalls excluded). Does not
// consume the counter.
inline bool wait_signalled(int fd, std::chrono::milliseconds budget) {
  auto deadline = wait_deadline(budget);
  while (!wait_readable(fd, 10ms)) {
    if (deadline.expired()) return false;
  }
  return true;
}

// poll_until()
//
// Calls `fn` (returning an optional) until it has a value or `timeout` passes, backing off from
// 50 us to 2 ms between calls.
template <class Fn>
auto poll_until(Fn&& fn, std::chrono::milliseconds timeout) -> decltype(fn()) {
  auto deadline = wait_deadline(timeout);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    if (auto v = fn()) return v;
    if (deadline.expired()) return fn();
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(2)) pause *= 2;
  }
}

// objects_still_held()
//
// Waits up to settle_timeout() for at most `allowed` of `handed` (caller objects given to an
// implementation, whose tasks have completed) to be alive, and returns how many are alive then.
inline std::size_t objects_still_held(const std::vector<std::weak_ptr<MemoryObj>>& handed,
                                      std::size_t allowed) {
  auto alive = [&] {
    return static_cast<std::size_t>(
        std::count_if(handed.begin(), handed.end(), [](const auto& w) { return !w.expired(); }));
  };
  const std::optional<std::size_t> settled = poll_until(
      [&]() -> std::optional<std::size_t> {
        const std::size_t n = alive();
        return n <= allowed ? std::optional<std::size_t>(n) : std::nullopt;
      },
      settle_timeout());
  return settled ? *settled : alive();
}

// ResultPacer
//
// Paces a loop that waits for results an fd signals while leaving the fd's count unread (so
// that it can be checked afterwards). wait() sleeps in poll() until the fd becomes readable or
// 2 ms pass; once the fd is readable with nothing new for the loop (a count left unread on
// purpose), poll() would return at once and the loop would spin, taking a core from the
// implementation it waits for, so it sleeps instead, 50 us doubling to 2 ms.
class ResultPacer {
 public:
  explicit ResultPacer(int fd) : fd_(fd) {}
  void wait() {
    if (!wait_readable(fd_, 0ms)) {
      wait_readable(fd_, 2ms);
      return;
    }
    std::this_thread::sleep_for(pause_);
    if (pause_ < 2ms) pause_ *= 2;
  }

 private:
  int fd_;
  std::chrono::microseconds pause_{50};
};

// collect_notifies()
//
// Drains `fd` until `expected` notifies in total have been read (starting from `already`) or
// `grace` passes, then watches kSettle more for extra ones. Returns the total read.
inline std::uint64_t collect_notifies(int fd, std::uint64_t expected, std::uint64_t already = 0,
                                      std::chrono::milliseconds grace = signal_grace()) {
  std::uint64_t total = already + consume_fd(fd);
  auto deadline = wait_deadline(grace);
  while (total < expected && !deadline.expired()) {
    wait_readable(fd, 10ms);
    total += consume_fd(fd);
  }
  std::this_thread::sleep_for(kSettle);
  total += consume_fd(fd);
  return total;
}

}  // namespace lmcache::conformance_internal
