// File: lmcache/core/handoff_probe.h
//
// What one thread hand-off costs on this machine: a round trip over two eventfds between two
// threads (notify -> the other wakes -> it notifies back -> this one wakes). Every task handed
// to a worker and signalled back pays about this; on a VM whose idle vCPUs the host deschedules
// it is tens of µs (bench/RESULTS.md), on bare metal a few. The wrapper's adaptive defaults
// weigh it against a serde step's own time (docs/wrapper.md); the benchmark row
// processor/latency/handoff times the same round trip.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <thread>

#include "lmcache/core/event_notifier.h"

namespace lmcache {

// HandoffPinger: a partner thread that answers every ping with a pong. Not thread-safe: one
// thread pings.
class HandoffPinger {
 public:
  // Starts the partner thread. Throws std::system_error when an eventfd or the thread cannot
  // be made.
  HandoffPinger();
  // Stops and joins the partner (within its 100 ms poll).
  ~HandoffPinger();
  HandoffPinger(const HandoffPinger&) = delete;
  HandoffPinger& operator=(const HandoffPinger&) = delete;

  // round_trip()
  //
  // One ping and its pong, timed; std::nullopt when no pong came within `timeout` (a late pong
  // is consumed by the next call, which then measures nothing of it: it waits for its own).
  std::optional<std::chrono::nanoseconds> round_trip(std::chrono::milliseconds timeout);

 private:
  EventNotifier ping_;
  EventNotifier pong_;
  std::atomic<bool> stop_{false};
  std::thread partner_;
};

// measure_handoff_cost()
//
// The median of `round_trips` (at least 1) round trips; a round trip that times out counts as
// `timeout`, so the answer is bounded by `round_trips * timeout` in time and by `timeout` in
// value. Throws what HandoffPinger() throws.
std::chrono::nanoseconds measure_handoff_cost(std::size_t round_trips,
                                              std::chrono::milliseconds timeout);

// machine_handoff_cost()
//
// measure_handoff_cost(kMachineProbeRoundTrips, 100 ms), measured on the first call in the
// process and remembered (later calls return at once; thread-safe). A machine that cannot start
// a thread answers the 100 ms bound.
inline constexpr std::size_t kMachineProbeRoundTrips = 33;
std::chrono::nanoseconds machine_handoff_cost();

}  // namespace lmcache
