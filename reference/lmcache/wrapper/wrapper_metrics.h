// File: lmcache/wrapper/wrapper_metrics.h
//
// WrapperMetrics: what a SerdeL2AdapterWrapper measures about itself, kept in a
// prometheus-cpp Registry the caller can collect (or serialize with prometheus::TextSerializer),
// and summarised as JSON for report_status().
//
//   lmcache_serde_wrapper_step_duration_seconds{step}   histogram; step = serialize,
//                                                        inner_store, inner_load, deserialize
//   lmcache_serde_wrapper_tasks_in_flight{phase}        gauge; phase = the same four names
//   lmcache_serde_wrapper_temp_bytes                    gauge; L1 bytes held by temps
//   lmcache_serde_wrapper_lent_bytes                    gauge; bytes of buffers the inner
//                                                        adapter lent, held by stores in flight
//   lmcache_serde_wrapper_inline_steps_total{step}      counter; serde steps run inline
//                                                        (step = serialize|deserialize) instead
//                                                        of on the processor's workers
//   lmcache_serde_wrapper_tasks_total{op, outcome}      counter; op = store|load,
//                                                        outcome = success|failure, and
//                                                        miss for a load that found no key
//
// Thread-safe (prometheus-cpp metrics are atomic).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "lmcache/core/config.h"

namespace lmcache {

enum class WrapperStep : std::uint8_t { kSerialize, kInnerStore, kInnerLoad, kDeserialize };
inline constexpr std::size_t kWrapperStepCount = 4;

// "serialize", "inner_store", "inner_load", "deserialize".
const char* wrapper_step_name(WrapperStep step);

class WrapperMetrics {
 public:
  // WrapperMetrics()
  //
  // Registers the families in `registry` (a fresh one when null). `labels` are added to every
  // series, so several wrappers can share one registry (e.g. {{"adapter", "mock0"}}).
  explicit WrapperMetrics(std::shared_ptr<prometheus::Registry> registry = nullptr,
                          const std::map<std::string, std::string>& labels = {});

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // A task entered / left `phase`.
  void enter(WrapperStep phase) { in_flight_[index(phase)]->Increment(); }
  void leave(WrapperStep phase, std::chrono::steady_clock::duration took);

  void temp_bytes_reserved(std::uint64_t bytes) {
    temp_bytes_->Increment(static_cast<double>(bytes));
  }
  void temp_bytes_released(std::uint64_t bytes) {
    temp_bytes_->Decrement(static_cast<double>(bytes));
  }

  void lent_bytes_acquired(std::uint64_t bytes) {
    lent_bytes_->Increment(static_cast<double>(bytes));
  }
  void lent_bytes_released(std::uint64_t bytes) {
    lent_bytes_->Decrement(static_cast<double>(bytes));
  }

  // A serde step (kSerialize or kDeserialize) ran inline.
  void inline_step(WrapperStep step);

  void task_finished(bool is_store, bool success);
  // A load completed without error and found none of its keys (outcome="miss"; not a failure).
  void load_missed() { load_miss_->Increment(); }

  // Current in-flight count of a phase, temp bytes held, lent bytes held, and the serde steps
  // of `step` run inline so far.
  std::int64_t in_flight(WrapperStep phase) const;
  std::uint64_t temp_bytes() const;
  std::uint64_t lent_bytes() const;
  std::uint64_t inline_steps(WrapperStep step) const;

  // summary()
  //
  // {"tasks_in_flight": {phase: n}, "temp_bytes_held": n, "lent_bytes_held": n,
  //  "inline_steps": {"serialize": n, "deserialize": n}, "tasks": {"store_success": n, ...,
  //  "load_miss": n}}, "step_latency_seconds": {step: {"count", "sum", "mean", "p50", "p99"}}}.
  //  Percentiles are
  // interpolated inside histogram buckets, so they are estimates.
  Json summary() const;

 private:
  static std::size_t index(WrapperStep s) { return static_cast<std::size_t>(s); }

  std::shared_ptr<prometheus::Registry> registry_;
  std::array<prometheus::Histogram*, kWrapperStepCount> step_duration_{};
  std::array<prometheus::Gauge*, kWrapperStepCount> in_flight_{};
  prometheus::Gauge* temp_bytes_ = nullptr;
  prometheus::Gauge* lent_bytes_ = nullptr;
  prometheus::Counter* inline_serialize_ = nullptr;
  prometheus::Counter* inline_deserialize_ = nullptr;
  // [is_store][success]
  std::array<std::array<prometheus::Counter*, 2>, 2> tasks_{};
  prometheus::Counter* load_miss_ = nullptr;
};

}  // namespace lmcache
