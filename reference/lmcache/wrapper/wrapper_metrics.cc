#include "lmcache/wrapper/wrapper_metrics.h"

#include <cmath>

namespace lmcache {
namespace {

// 10 us .. ~10 s, roughly x2.5 per bucket: serde steps on KV chunks span this range.
prometheus::Histogram::BucketBoundaries step_buckets() {
  return {1e-5,   2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
          2.5e-2, 5e-2,   0.1,  0.25, 0.5,    1.0,  2.5,  5.0,    10.0};
}

prometheus::Labels with(const std::map<std::string, std::string>& base, const char* key,
                        const char* value) {
  prometheus::Labels out(base.begin(), base.end());
  out[key] = value;
  return out;
}

// Linear interpolation of quantile q inside the bucket that crosses it.
double bucket_quantile(const prometheus::ClientMetric::Histogram& h, double q) {
  if (h.sample_count == 0) return 0.0;
  double rank = q * static_cast<double>(h.sample_count);
  double prev_bound = 0.0;
  std::uint64_t prev_count = 0;
  for (const auto& b : h.bucket) {
    if (static_cast<double>(b.cumulative_count) >= rank) {
      if (std::isinf(b.upper_bound)) return prev_bound;
      std::uint64_t in_bucket = b.cumulative_count - prev_count;
      double frac = in_bucket == 0
                        ? 1.0
                        : (rank - static_cast<double>(prev_count)) / static_cast<double>(in_bucket);
      return prev_bound + (b.upper_bound - prev_bound) * frac;
    }
    prev_bound = b.upper_bound;
    prev_count = b.cumulative_count;
  }
  return prev_bound;
}

}  // namespace

const char* wrapper_step_name(WrapperStep step) {
  switch (step) {
    case WrapperStep::kSerialize:
      return "serialize";
    case WrapperStep::kInnerStore:
      return "inner_store";
    case WrapperStep::kInnerLoad:
      return "inner_load";
    case WrapperStep::kDeserialize:
      return "deserialize";
  }
  return "unknown";
}

WrapperMetrics::WrapperMetrics(std::shared_ptr<prometheus::Registry> registry,
                               const std::map<std::string, std::string>& labels)
    : registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()) {
  auto& durations = prometheus::BuildHistogram()
                        .Name("lmcache_serde_wrapper_step_duration_seconds")
                        .Help("Time a wrapped task spent in each step of the serde wrapper")
                        .Register(*registry_);
  auto& in_flight = prometheus::BuildGauge()
                        .Name("lmcache_serde_wrapper_tasks_in_flight")
                        .Help("Wrapped tasks currently in each phase")
                        .Register(*registry_);
  for (std::size_t i = 0; i < kWrapperStepCount; ++i) {
    const char* name = wrapper_step_name(static_cast<WrapperStep>(i));
    step_duration_[i] = &durations.Add(with(labels, "step", name), step_buckets());
    in_flight_[i] = &in_flight.Add(with(labels, "phase", name));
  }
  temp_bytes_ = &prometheus::BuildGauge()
                     .Name("lmcache_serde_wrapper_temp_bytes")
                     .Help("L1 bytes held by the wrapper's temporary serialization buffers")
                     .Register(*registry_)
                     .Add(prometheus::Labels(labels.begin(), labels.end()));
  lent_bytes_ = &prometheus::BuildGauge()
                     .Name("lmcache_serde_wrapper_lent_bytes")
                     .Help("Bytes of buffers the inner adapter lent, held by stores in flight")
                     .Register(*registry_)
                     .Add(prometheus::Labels(labels.begin(), labels.end()));
  auto& inline_steps = prometheus::BuildCounter()
                           .Name("lmcache_serde_wrapper_inline_steps_total")
                           .Help("Serde steps run inline instead of on the processor's workers")
                           .Register(*registry_);
  inline_serialize_ = &inline_steps.Add(with(labels, "step", "serialize"));
  inline_deserialize_ = &inline_steps.Add(with(labels, "step", "deserialize"));
  auto& tasks = prometheus::BuildCounter()
                    .Name("lmcache_serde_wrapper_tasks_total")
                    .Help("Wrapped tasks completed, by operation and outcome")
                    .Register(*registry_);
  for (int store = 0; store < 2; ++store) {
    for (int ok = 0; ok < 2; ++ok) {
      auto l = with(labels, "op", store ? "store" : "load");
      l["outcome"] = ok ? "success" : "failure";
      tasks_[store][ok] = &tasks.Add(l);
    }
  }
  auto miss = with(labels, "op", "load");
  miss["outcome"] = "miss";
  load_miss_ = &tasks.Add(miss);
}

void WrapperMetrics::leave(WrapperStep phase, std::chrono::steady_clock::duration took) {
  in_flight_[index(phase)]->Decrement();
  step_duration_[index(phase)]->Observe(std::chrono::duration<double>(took).count());
}

void WrapperMetrics::inline_step(WrapperStep step) {
  if (step == WrapperStep::kSerialize) inline_serialize_->Increment();
  if (step == WrapperStep::kDeserialize) inline_deserialize_->Increment();
}

std::uint64_t WrapperMetrics::lent_bytes() const {
  return static_cast<std::uint64_t>(std::llround(lent_bytes_->Value()));
}

std::uint64_t WrapperMetrics::inline_steps(WrapperStep step) const {
  if (step == WrapperStep::kSerialize) {
    return static_cast<std::uint64_t>(std::llround(inline_serialize_->Value()));
  }
  if (step == WrapperStep::kDeserialize) {
    return static_cast<std::uint64_t>(std::llround(inline_deserialize_->Value()));
  }
  return 0;
}

void WrapperMetrics::task_finished(bool is_store, bool success) {
  tasks_[is_store ? 1 : 0][success ? 1 : 0]->Increment();
}

std::int64_t WrapperMetrics::in_flight(WrapperStep phase) const {
  return static_cast<std::int64_t>(std::llround(in_flight_[index(phase)]->Value()));
}

std::uint64_t WrapperMetrics::temp_bytes() const {
  return static_cast<std::uint64_t>(std::llround(temp_bytes_->Value()));
}

Json WrapperMetrics::summary() const {
  Json in_flight = Json::object();
  Json steps = Json::object();
  for (std::size_t i = 0; i < kWrapperStepCount; ++i) {
    auto step = static_cast<WrapperStep>(i);
    in_flight[wrapper_step_name(step)] = this->in_flight(step);
    auto h = step_duration_[i]->Collect().histogram;
    double mean = h.sample_count ? h.sample_sum / static_cast<double>(h.sample_count) : 0.0;
    steps[wrapper_step_name(step)] = {{"count", h.sample_count},
                                      {"sum", h.sample_sum},
                                      {"mean", mean},
                                      {"p50", bucket_quantile(h, 0.5)},
                                      {"p99", bucket_quantile(h, 0.99)}};
  }
  auto count = [this](int store, int ok) {
    return static_cast<std::uint64_t>(std::llround(tasks_[store][ok]->Value()));
  };
  return {{"tasks_in_flight", in_flight},
          {"temp_bytes_held", temp_bytes()},
          {"lent_bytes_held", lent_bytes()},
          {"inline_steps",
           {{"serialize", inline_steps(WrapperStep::kSerialize)},
            {"deserialize", inline_steps(WrapperStep::kDeserialize)}}},
          {"tasks",
           {{"store_success", count(1, 1)},
            {"store_failure", count(1, 0)},
            {"load_success", count(0, 1)},
            {"load_failure", count(0, 0)},
            {"load_miss", static_cast<std::uint64_t>(std::llround(load_miss_->Value()))}}},
          {"step_latency_seconds", steps}};
}

}  // namespace lmcache
