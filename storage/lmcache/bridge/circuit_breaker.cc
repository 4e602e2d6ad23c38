#include "lmcache/bridge/circuit_breaker.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string>

namespace lmcache::bridge {

CircuitBreaker::CircuitBreaker(CircuitBreakerOptions options)
    : options_(options), cooldown_(options.cooldown) {
  if (options_.cooldown.count() <= 0) {
    throw std::invalid_argument("CircuitBreaker: cooldown must be > 0 ms, got " +
                                std::to_string(options_.cooldown.count()));
  }
  if (options_.max_cooldown < options_.cooldown) {
    throw std::invalid_argument(
        "CircuitBreaker: max_cooldown (" + std::to_string(options_.max_cooldown.count()) +
        " ms) is below cooldown (" + std::to_string(options_.cooldown.count()) + " ms)");
  }
}

CircuitBreaker::Admission CircuitBreaker::admit(Clock::time_point now) {
  if (!enabled() || !open_) return {true, false, generation_};
  if (probe_out_ || now < retry_at_) {
    ++refused_;
    return {false, false, 0};
  }
  probe_out_ = true;
  probe_ticket_ = ++generation_;
  return {true, true, probe_ticket_};
}

void CircuitBreaker::record(const Admission& admission, bool connection_failure,
                            Clock::time_point now) {
  if (!enabled() || !admission.pass) return;
  if (open_) {
    if (!probe_out_ || admission.ticket != probe_ticket_) return;  // admitted before the trip
    probe_out_ = false;
    if (connection_failure) {
      trip(now);
    } else {
      reset();
    }
    return;
  }
  if (admission.ticket != generation_) return;  // from before the last trip or recovery
  if (!connection_failure) {
    reset();
  } else if (++failures_ >= options_.threshold) {
    trip(now);
  }
}

void CircuitBreaker::trip(Clock::time_point now) {
  // The first trip waits `cooldown`; each failed probe doubles the wait, up to max_cooldown.
  if (open_) cooldown_ = std::min(cooldown_ * 2, options_.max_cooldown);
  open_ = true;
  retry_at_ = now + cooldown_;
  ++generation_;
  ++trips_;
}

void CircuitBreaker::reset() {
  if (open_) ++generation_;
  open_ = false;
  failures_ = 0;
  cooldown_ = options_.cooldown;
}

CircuitBreakerState CircuitBreaker::state(Clock::time_point now) const {
  CircuitBreakerState s;
  s.open = open_;
  s.consecutive_failures = failures_;
  s.probe_out = probe_out_;
  s.trips = trips_;
  s.refused = refused_;
  if (open_ && now < retry_at_) {
    s.retry_in_seconds = std::chrono::duration<double>(retry_at_ - now).count();
  }
  return s;
}

bool is_connection_error(std::string_view error) {
  std::string lower(error);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // "connector" names the component ("RespConnector: ...", "connector submit threw: ..."), not
  // a connection: it says nothing either way.
  static constexpr std::string_view kComponent = "connector";
  for (std::size_t at = lower.find(kComponent); at != std::string::npos;
       at = lower.find(kComponent, at)) {
    lower.erase(at, kComponent.size());
  }
  static constexpr std::array<std::string_view, 10> kMarkers = {
      "connect",   "refused",     "reset",       "timed out", "timeout",
      "no answer", "broken pipe", "unreachable", "resolve",   "eof"};
  return std::any_of(kMarkers.begin(), kMarkers.end(),
                     [&](std::string_view m) { return lower.find(m) != std::string::npos; });
}

}  // namespace lmcache::bridge
