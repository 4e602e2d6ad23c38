#include "lmcache/core/handoff_probe.h"

#include <algorithm>
#include <exception>
#include <vector>

namespace lmcache {

using Clock = std::chrono::steady_clock;

HandoffPinger::HandoffPinger() {
  partner_ = std::thread([this] {
    while (!stop_.load(std::memory_order_acquire)) {
      // Polls with a bound so that the destructor's stop flag is seen without a ping.
      if (!wait_readable(ping_.fd(), std::chrono::milliseconds(100))) continue;
      ping_.consume();
      pong_.notify();
    }
  });
}

HandoffPinger::~HandoffPinger() {
  stop_.store(true, std::memory_order_release);
  ping_.notify();
  partner_.join();
}

std::optional<std::chrono::nanoseconds> HandoffPinger::round_trip(
    std::chrono::milliseconds timeout) {
  pong_.consume();  // a pong that came after an earlier call gave up
  const Clock::time_point started = Clock::now();
  ping_.notify();
  if (!wait_readable(pong_.fd(), timeout)) return std::nullopt;
  const Clock::duration took = Clock::now() - started;
  pong_.consume();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(took);
}

std::chrono::nanoseconds measure_handoff_cost(std::size_t round_trips,
                                              std::chrono::milliseconds timeout) {
  round_trips = std::max<std::size_t>(round_trips, 1);
  HandoffPinger pinger;
  std::vector<std::chrono::nanoseconds> took;
  took.reserve(round_trips);
  for (std::size_t i = 0; i < round_trips; ++i) {
    took.push_back(pinger.round_trip(timeout).value_or(timeout));
  }
  const auto middle = took.begin() + static_cast<std::ptrdiff_t>(took.size() / 2);
  std::nth_element(took.begin(), middle, took.end());
  return *middle;
}

std::chrono::nanoseconds machine_handoff_cost() {
  static constexpr std::chrono::milliseconds kBound{100};
  static const std::chrono::nanoseconds cost = [] {
    try {
      return measure_handoff_cost(kMachineProbeRoundTrips, kBound);
    } catch (const std::exception&) {
      return std::chrono::nanoseconds(kBound);
    }
  }();
  return cost;
}

}  // namespace lmcache
