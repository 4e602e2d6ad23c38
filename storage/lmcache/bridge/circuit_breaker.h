// File: lmcache/bridge/circuit_breaker.h
//
// CircuitBreaker: the state machine that keeps a remote store that stopped answering from
// costing every request a connection timeout, the design LMCache gives its S3 and Bigtable
// adapters (docs/l2-adapter.md, "Circuit breaker"; storage/README.md says how the bridge uses it):
//
//   closed   requests pass. `threshold` connection-class failures in a row open it; any
//            outcome that is not a connection-class failure (the store answered) resets the count
//            and the cooldown.
//   open     requests are refused until the retry time (now + cooldown at the trip). The first
//            request admitted at or after it is the probe; the others are still refused while it
//            is out. The probe's success closes the breaker; its connection-class failure opens
//            it again with the cooldown doubled (at most max_cooldown). Outcomes of requests
//            admitted before the trip are ignored (there is no half-open state).
//
// The caller supplies the time, so the machine is tested without waiting. Not thread-safe: the
// bridge calls it under its own lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

namespace lmcache::bridge {

// CircuitBreakerOptions
//
// threshold 0 turns the breaker off (every request passes, nothing is counted).
struct CircuitBreakerOptions {
  std::uint32_t threshold = 0;
  std::chrono::milliseconds cooldown{5000};
  std::chrono::milliseconds max_cooldown{300000};

  static constexpr std::uint32_t kDefaultRemoteThreshold = 3;
};

// CircuitBreakerState
//
// A snapshot for report_status() and tests.
struct CircuitBreakerState {
  bool open = false;  // connection_disabled
  std::uint32_t consecutive_failures = 0;
  double retry_in_seconds = 0;  // 0 when closed or when the probe may go now
  bool probe_out = false;
  std::uint64_t trips = 0;    // times it opened (a failed probe counts)
  std::uint64_t refused = 0;  // requests refused while open
};

class CircuitBreaker {
 public:
  using Clock = std::chrono::steady_clock;

  // What admit() decided. `ticket` goes back to record() with the request's outcome.
  struct Admission {
    bool pass = true;
    bool probe = false;
    std::uint64_t ticket = 0;
  };

  // Throws std::invalid_argument for a cooldown <= 0 or a max_cooldown below it.
  explicit CircuitBreaker(CircuitBreakerOptions options);

  // admit()
  //
  // Whether a request may go to the store at `now`. A refused request must not reach the store
  // and must not be recorded.
  Admission admit(Clock::time_point now);

  // record()
  //
  // The outcome of an admitted request: `connection_failure` when it failed in a way that says
  // the store cannot be reached (is_connection_error(), or no answer within its deadline).
  // A request may be recorded several times (one per connector batch); a probe decides on its
  // first outcome.
  void record(const Admission& admission, bool connection_failure, Clock::time_point now);

  CircuitBreakerState state(Clock::time_point now) const;
  bool enabled() const { return options_.threshold > 0; }
  const CircuitBreakerOptions& options() const { return options_; }

 private:
  void trip(Clock::time_point now);
  void reset();

  const CircuitBreakerOptions options_;
  bool open_ = false;
  bool probe_out_ = false;
  std::uint32_t failures_ = 0;
  std::chrono::milliseconds cooldown_;
  Clock::time_point retry_at_{};
  std::uint64_t generation_ = 1;  // grows at every trip and probe: older tickets are ignored
  std::uint64_t probe_ticket_ = 0;
  std::uint64_t trips_ = 0;
  std::uint64_t refused_ = 0;
};

// is_connection_error()
//
// Whether a connector's error text describes a store that cannot be reached: it names a
// connection ("connect"), a refusal, a reset, a timeout ("timed out", "timeout", "no answer"), a
// broken pipe, an unreachable network or host, a host it cannot resolve, or an EOF
// (case-insensitive; the word "connector", which names a component, is not a connection).
// Protocol errors, refused commands,
// failed AUTH and per-key problems are not connection-class: the store answered.
bool is_connection_error(std::string_view error);

}  // namespace lmcache::bridge
