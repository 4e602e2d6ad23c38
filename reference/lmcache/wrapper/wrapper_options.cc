#include "lmcache/wrapper/wrapper_options.h"

#include <string_view>

namespace lmcache {
namespace {

constexpr std::int64_t kMaxConfigBytes = std::int64_t{1} << 40;
constexpr double kMaxHandoffCostUs = 1e6;
constexpr std::int64_t kMaxPollTimeoutMs = 60'000;

// A threshold key: an integer in [0, kMaxConfigBytes] or "auto" (std::nullopt: adaptive).
std::optional<std::size_t> read_threshold(ConfigReader& r, std::string_view key,
                                          std::optional<std::size_t> fallback) {
  const Json* value = r.raw(key);
  if (value == nullptr) return fallback;
  if (value->is_string()) {
    if (value->get<std::string>() == "auto") return std::nullopt;
    r.error("'" + std::string(key) + "' must be a byte count or \"auto\", got " + value->dump());
  }
  return static_cast<std::size_t>(r.get_int(key, std::nullopt, 0, kMaxConfigBytes));
}

}  // namespace

SerdeWrapperOptions wrapper_options_from_json(const Json& config, SerdeWrapperOptions base) {
  ConfigReader r(config, "serde_wrapper config");
  base.inline_serialize_max_bytes =
      read_threshold(r, "inline_serialize_max_bytes", base.inline_serialize_max_bytes);
  base.inline_deserialize_max_bytes =
      read_threshold(r, "inline_deserialize_max_bytes", base.inline_deserialize_max_bytes);
  if (const Json* cost = r.raw("handoff_cost_us"); cost != nullptr) {
    if (cost->is_string()) {
      if (cost->get<std::string>() != "measure") {
        r.error("'handoff_cost_us' must be a number of µs or \"measure\", got " + cost->dump());
      }
      base.handoff_cost.reset();
    } else {
      const double us = r.get_number("handoff_cost_us");
      if (!(us >= 0 && us <= kMaxHandoffCostUs)) {
        r.error("'handoff_cost_us' must be in [0, 1e6], got " + cost->dump());
      }
      base.handoff_cost = std::chrono::nanoseconds(static_cast<std::int64_t>(us * 1000));
    }
  }
  base.finish_on_submit = r.get_bool("finish_on_submit", base.finish_on_submit);
  base.poll_timeout = std::chrono::milliseconds(
      r.get_int("poll_timeout_ms", base.poll_timeout.count(), 1, kMaxPollTimeoutMs));
  r.finish();
  return base;
}

}  // namespace lmcache
