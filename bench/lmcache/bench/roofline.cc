#include "lmcache/bench/roofline.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "lmcache/fp8/fp8_kernels.h"

namespace lmcache::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Each sample lasts about this long: long enough that the clock's own cost is negligible for
// tiny copies, short enough that a 50 ms budget yields hundreds of samples.
constexpr double kSampleSeconds = 200e-6;
// glibc memcpy in pieces of this many bytes stays on its vector loop (see roofline.h).
constexpr std::size_t kCopyPiece = 2048;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A pass repeated enough times per sample to last ~kSampleSeconds; warmed up once.
class Sampler {
 public:
  Sampler(std::function<void()> pass, double bytes_per_pass)
      : pass_(std::move(pass)), bytes_per_pass_(bytes_per_pass) {
    const auto t0 = Clock::now();
    pass_();  // warm-up: page faults, caches, the thread start-up path
    const double once = std::max(seconds_since(t0), 1e-9);
    reps_ = static_cast<std::size_t>(std::clamp(kSampleSeconds / once, 1.0, 1e6));
  }

  // One sample, in bytes per second.
  double sample() {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < reps_; ++i) pass_();
    const double s = std::max(seconds_since(t0), 1e-12);
    return bytes_per_pass_ * static_cast<double>(reps_) / s;
  }

 private:
  std::function<void()> pass_;
  double bytes_per_pass_;
  std::size_t reps_ = 1;
};

// The q-quantile of sorted values, linear interpolation between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

double RateStats::spread() const { return median > 0 ? (q3 - q1) / median : 0.0; }

RateStats rate_stats(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("rate_stats: no samples");
  std::sort(samples.begin(), samples.end());
  return {.median = quantile(samples, 0.5),
          .q1 = quantile(samples, 0.25),
          .q3 = quantile(samples, 0.75),
          .samples = samples.size()};
}

std::vector<double> measure_rates(const std::function<void()>& pass, double bytes_per_pass,
                                  double min_seconds, int min_samples) {
  Sampler sampler(pass, bytes_per_pass);
  std::vector<double> rates;
  const auto start = Clock::now();
  while (static_cast<int>(rates.size()) < min_samples || seconds_since(start) < min_seconds) {
    rates.push_back(sampler.sample());
  }
  return rates;
}

RateStats measure_roofline(std::span<std::byte> dst, std::span<const std::byte> src,
                           std::size_t elements, const RooflineOptions& options) {
  const fp8::KernelOptions split{.threads = options.threads};
  // Validates the arguments (and throws) before any timing.
  fp8::fp8_roofline_copy(dst, src, elements, split);
  const double traffic = 2.0 * static_cast<double>(src.size());
  std::array<Sampler, 2> variants = {
      Sampler([&] { fp8::fp8_roofline_copy(dst, src, elements, split); }, traffic),
      Sampler([&] { fp8::fp8_roofline_copy(dst, src, elements, split, kCopyPiece); }, traffic)};
  std::array<std::vector<double>, 2> rates;
  const auto start = Clock::now();
  // Alternating sample by sample, so that both variants see the same machine load.
  while (static_cast<int>(rates[0].size()) < options.min_samples ||
         seconds_since(start) < options.min_seconds) {
    for (std::size_t v = 0; v < variants.size(); ++v) rates[v].push_back(variants[v].sample());
  }
  RateStats best = rate_stats(std::move(rates[0]));
  RateStats pieces = rate_stats(std::move(rates[1]));
  return pieces.median > best.median ? pieces : best;
}

}  // namespace lmcache::bench
