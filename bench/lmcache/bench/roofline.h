// File: lmcache/bench/roofline.h
//
// The memory roofline of a codec row, measured like the kernel it bounds: a copy of the row's
// traffic on the row's own buffers (warm, right after the kernel's timed loop), split across
// threads by the kernels' own split (fp8::fp8_roofline_copy), in many short samples whose
// spread is reported with the median. A roofline whose samples disagree by more than a stated
// bound is flagged by the report instead of being divided by silently (reports/README.md).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

namespace lmcache::bench {

// RateStats: the distribution of rate samples (bytes per second).
struct RateStats {
  double median = 0;
  double q1 = 0;  // first quartile (linear interpolation between order statistics)
  double q3 = 0;  // third quartile
  std::size_t samples = 0;

  // spread()
  //
  // The relative interquartile range, (q3 - q1) / median: 0 for identical samples, 0.1 when
  // the middle half of the samples spans 10 % of the median. 0 when the median is 0.
  double spread() const;
};

// rate_stats()
//
// Median and quartiles of `samples` (numpy's default "linear" quantiles). Throws
// std::invalid_argument when `samples` is empty.
RateStats rate_stats(std::vector<double> samples);

// measure_rates()
//
// Runs `pass` (which moves `bytes_per_pass` bytes) once to warm up, then in samples of enough
// passes to last ~200 us (so the clock's cost does not count for tiny copies) until there are
// at least `min_samples` samples and `min_seconds` have passed; returns each sample's bytes
// per second, in the order measured.
std::vector<double> measure_rates(const std::function<void()>& pass, double bytes_per_pass,
                                  double min_seconds, int min_samples);

// RooflineOptions: how long measure_roofline() samples.
struct RooflineOptions {
  std::size_t threads = 1;  // the kernel call's KernelOptions::threads
  double min_seconds = 0.05;
  int min_samples = 5;  // per copy variant
};

// measure_roofline()
//
// The roofline of a kernel call over `elements` elements that reads and writes
// 2 * src.size() bytes in all: copies src into dst (dst.size() >= src.size(), no overlap) with
// fp8::fp8_roofline_copy, both as one memcpy per thread range and in 2 KiB pieces (glibc
// 2.36 switches to `rep movsb` from 4 KiB up to the L2 size on AMD CPUs, which runs at ~6 GB/s
// for some sizes and page offsets on the development VM; 2 KiB pieces stay on its vector
// loop), the two variants alternating sample by sample for `options`' time. Returns the
// statistics, in bytes read + written per second, of the variant with the higher median.
// Throws std::invalid_argument for bad buffers or options.threads == 0.
RateStats measure_roofline(std::span<std::byte> dst, std::span<const std::byte> src,
                           std::size_t elements, const RooflineOptions& options);

}  // namespace lmcache::bench
