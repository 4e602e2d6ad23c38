#include "lmcache/wrapper/inline_policy.h"

#include <algorithm>
#include <cmath>

namespace lmcache {

InlinePolicy::InlinePolicy(std::optional<std::size_t> serialize_max_bytes,
                           std::optional<std::size_t> deserialize_max_bytes,
                           std::chrono::nanoseconds handoff_cost)
    : handoff_cost_(std::max(handoff_cost, std::chrono::nanoseconds(0))) {
  directions_[0].fixed = serialize_max_bytes;
  directions_[1].fixed = deserialize_max_bytes;
}

std::size_t InlinePolicy::adaptive_max_bytes(std::chrono::nanoseconds handoff_cost,
                                             double bytes_per_second) {
  if (!std::isfinite(bytes_per_second) || bytes_per_second < 0) bytes_per_second = 0;
  const double seconds = std::max(std::chrono::duration<double>(handoff_cost).count(), 0.0);
  const double bytes = kHandoffsSaved * seconds * bytes_per_second / kMaxHandoffShare;
  // Clamped as a double first: the product may exceed what a size_t holds.
  const double clamped = std::clamp(bytes, static_cast<double>(kMinAdaptiveBytes),
                                    static_cast<double>(kMaxAdaptiveBytes));
  return static_cast<std::size_t>(clamped);
}

std::size_t InlinePolicy::max_bytes(Step step) const {
  const Direction& d = direction(step);
  if (d.fixed) return *d.fixed;
  return adaptive_max_bytes(handoff_cost_, d.bytes_per_second.load(std::memory_order_relaxed));
}

void InlinePolicy::observe(Step step, std::size_t bytes, std::chrono::nanoseconds took) {
  Direction& d = direction(step);
  if (d.fixed || bytes < kMinObservedBytes || took.count() <= 0) return;
  const double sample = static_cast<double>(bytes) / std::chrono::duration<double>(took).count();
  const double rate = d.bytes_per_second.load(std::memory_order_relaxed);
  d.bytes_per_second.store(rate + kRateWeight * (sample - rate), std::memory_order_relaxed);
}

void InlinePolicy::observe_submitted(Step step, std::size_t bytes, std::chrono::nanoseconds took) {
  observe(step, bytes, took - kHandoffsToWorkerAndBack * handoff_cost_);
}

double InlinePolicy::bytes_per_second(Step step) const {
  return direction(step).bytes_per_second.load(std::memory_order_relaxed);
}

Json InlinePolicy::summary() const {
  Json out;
  out["handoff_cost_us"] = std::chrono::duration<double, std::micro>(handoff_cost_).count();
  for (Step step : {Step::kSerialize, Step::kDeserialize}) {
    Json d;
    d["adaptive"] = adaptive(step);
    d["max_bytes"] = max_bytes(step);
    if (adaptive(step)) d["bytes_per_second"] = bytes_per_second(step);
    out[step == Step::kSerialize ? "serialize" : "deserialize"] = std::move(d);
  }
  return out;
}

}  // namespace lmcache
