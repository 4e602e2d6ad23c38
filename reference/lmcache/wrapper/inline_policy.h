// File: lmcache/wrapper/inline_policy.h
//
// InlinePolicy: which serde steps a SerdeL2AdapterWrapper runs on the thread at hand (the
// submitter's for a serialize, the one that takes the inner's result for a deserialize) instead
// of handing them to a serde worker (docs/wrapper.md, "Inline serde steps and adaptive
// defaults").
//
// A step handed to a worker leaves the submitter free but pays about kHandoffsSaved thread
// hand-offs on its way (to the worker, back to the wrapper's loop, the loop's wake-up for the
// inner's result, the caller's wake-up); run inline it pays its serde time only. Each direction
// has a byte threshold: fixed by the caller, or adaptive. An adaptive threshold is the step
// size at which those hand-offs would still add kMaxHandoffShare of the step's serde time:
//
//   max_bytes = kHandoffsSaved * handoff_cost * bytes_per_second / kMaxHandoffShare,
//
// clamped to [kMinAdaptiveBytes, kMaxAdaptiveBytes]. So on a machine where waking a thread is
// slow (a VM: tens of µs) larger steps run inline than where it is fast, and steps so large that
// their hand-offs hardly count keep the submitter free. bytes_per_second starts at
// kPriorBytesPerSecond and follows the direction's steps, an exponential moving average of
// their measured rates: an inline step's time is its serde time (observe()); a submitted step's
// time less kHandoffsToWorkerAndBack hand-offs estimates it (observe_submitted()). Learning from
// both keeps a threshold from sticking below the task size when the prior was too low or a
// preempted step made the average drop.
//
// Thread-safe: every member may be called from any thread. A rate update that races another
// may be lost; the average only steers a threshold, and every threshold gives correct results.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>

#include "lmcache/core/config.h"

namespace lmcache {

class InlinePolicy {
 public:
  enum class Step { kSerialize, kDeserialize };

  static constexpr int kHandoffsSaved = 4;
  // The hand-offs inside a submitted step's measured time (to the worker and back).
  static constexpr int kHandoffsToWorkerAndBack = 2;
  // A tenth: the rest of the wrapper's path (temps, the inner adapter) spends the rest of a
  // 20 % budget over the bare codec (bench/RESULTS.md).
  static constexpr double kMaxHandoffShare = 0.1;
  // A guess below the reference fp8 codec on one core (bench/RESULTS.md); both paths correct it.
  static constexpr double kPriorBytesPerSecond = 4e9;
  // Weight of one inline step in the moving average of the rate.
  static constexpr double kRateWeight = 0.25;
  // Steps smaller than this teach the average nothing (their time is mostly fixed costs).
  static constexpr std::size_t kMinObservedBytes = std::size_t{4} << 10;
  static constexpr std::size_t kMinAdaptiveBytes = std::size_t{64} << 10;
  static constexpr std::size_t kMaxAdaptiveBytes = std::size_t{256} << 20;

  // InlinePolicy()
  //
  // A threshold given (0: never inline, N: steps of at most N bytes) is fixed; std::nullopt
  // makes that direction adaptive, weighed against `handoff_cost` (negative counts as 0).
  InlinePolicy(std::optional<std::size_t> serialize_max_bytes,
               std::optional<std::size_t> deserialize_max_bytes,
               std::chrono::nanoseconds handoff_cost);

  // adaptive_max_bytes()
  //
  // The formula above, for a hand-off cost and a rate (non-finite or negative rates count as
  // 0, and the result is then kMinAdaptiveBytes).
  static std::size_t adaptive_max_bytes(std::chrono::nanoseconds handoff_cost,
                                        double bytes_per_second);

  // runs_inline()
  //
  // True when a step of `bytes` (a store's object bytes; a load's loaded serialized bytes)
  // runs inline: bytes <= max_bytes(step).
  bool runs_inline(Step step, std::size_t bytes) const { return bytes <= max_bytes(step); }

  // max_bytes()
  //
  // The direction's threshold now: the fixed one, or the adaptive one at the current rate.
  std::size_t max_bytes(Step step) const;

  // observe()
  //
  // An inline step of `bytes` took `took`: for an adaptive direction, moves its rate towards
  // bytes / took. Ignored for a fixed direction, below kMinObservedBytes, or when `took` <= 0.
  void observe(Step step, std::size_t bytes, std::chrono::nanoseconds took);

  // observe_submitted()
  //
  // A submitted step of `bytes` took `took` from its submit to its result: observe() with
  // `took` less kHandoffsToWorkerAndBack hand-off costs (ignored when nothing is left).
  void observe_submitted(Step step, std::size_t bytes, std::chrono::nanoseconds took);

  bool adaptive(Step step) const { return !direction(step).fixed.has_value(); }
  double bytes_per_second(Step step) const;
  std::chrono::nanoseconds handoff_cost() const { return handoff_cost_; }

  // summary()
  //
  // {"handoff_cost_us", "serialize": {"adaptive", "max_bytes", "bytes_per_second"},
  //  "deserialize": {...}} (bytes_per_second only for an adaptive direction).
  Json summary() const;

 private:
  struct Direction {
    std::optional<std::size_t> fixed;
    std::atomic<double> bytes_per_second{kPriorBytesPerSecond};
  };
  const Direction& direction(Step step) const {
    return directions_[step == Step::kSerialize ? 0 : 1];
  }
  Direction& direction(Step step) { return directions_[step == Step::kSerialize ? 0 : 1]; }

  std::chrono::nanoseconds handoff_cost_;
  std::array<Direction, 2> directions_;
};

}  // namespace lmcache
