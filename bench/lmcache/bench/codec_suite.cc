// The codec/ and roofline/ suites (see suites.h), and the helpers every suite shares.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/devices/fp8_kernels.h"
#include "lmcache/devices/fp8_kernels_cuda.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::bench {

// ---------------------------------------------------------------------------------------------
// Shared helpers

std::vector<std::size_t> default_threads(bool quick) {
  const std::size_t cpus = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  if (quick || cpus == 1) return {1};
  return {1, cpus};
}

std::span<const std::byte> kv_values(DType dtype, std::size_t bytes) {
  static std::map<DType, std::vector<std::byte>> cache;
  std::vector<std::byte>& buf = cache[dtype];
  if (buf.size() < bytes) {
    buf.assign(bytes, std::byte{0});
    fill_kv_values(buf, dtype, /*seed=*/1);
  }
  return {buf.data(), bytes};
}

namespace {

// glibc memcpy in pieces of this many bytes: small enough to stay on glibc's vector loop.
constexpr std::size_t kCopyPiece = 2048;

void copy_range(std::byte* dst, const std::byte* src, std::size_t bytes, bool chunked) {
  if (!chunked) {
    std::memcpy(dst, src, bytes);
    return;
  }
  for (std::size_t o = 0; o < bytes; o += kCopyPiece) {
    std::memcpy(dst + o, src + o, std::min(kCopyPiece, bytes - o));
  }
}

}  // namespace

void parallel_memcpy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t threads,
                     bool chunked) {
  const std::size_t step = threads <= 1 ? 0 : (bytes / threads) & ~std::size_t{4095};
  if (step == 0) {
    copy_range(dst, src, bytes, chunked);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  for (std::size_t t = 0; t + 1 < threads; ++t) {
    workers.emplace_back([=] { copy_range(dst + t * step, src + t * step, step, chunked); });
  }
  const std::size_t last = (threads - 1) * step;
  copy_range(dst + last, src + last, bytes - last, chunked);
  for (auto& w : workers) w.join();
}

double measure_rate(const std::function<void()>& pass, double bytes_per_pass, double min_seconds,
                    int min_passes) {
  using Clock = std::chrono::steady_clock;
  auto seconds_of = [&](std::size_t reps) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < reps; ++i) pass();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Warm-up (page faults, caches, thread start-up paths), then enough passes per sample that
  // the clock's own cost is negligible for tiny copies.
  const double once = std::max(seconds_of(1), 1e-9);
  constexpr double kSampleSeconds = 200e-6;
  const auto reps = static_cast<std::size_t>(std::clamp(kSampleSeconds / once, 1.0, 1e6));
  std::vector<double> rates;
  const auto start = Clock::now();
  while (static_cast<int>(rates.size()) < min_passes ||
         std::chrono::duration<double>(Clock::now() - start).count() < min_seconds) {
    const double s = seconds_of(reps);
    rates.push_back(bytes_per_pass * static_cast<double>(reps) / std::max(s, 1e-12));
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

std::size_t kernel_threads(std::size_t elements, std::size_t threads) {
  return std::min(threads, std::max<std::size_t>(1, elements / devices::kMinElementsPerThread));
}

namespace {

using devices::Fp8Backend;
using devices::KernelOptions;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3FN, Fp8Format::kE5M2};

std::vector<std::uint64_t> codec_sizes(const SuiteConfig& c) {
  if (!c.sizes.empty()) return c.sizes;
  if (c.quick) return {4ull << 10, 1ull << 20};
  std::vector<std::uint64_t> sizes;  // 4 KiB .. 256 MiB, powers of 4
  for (std::uint64_t s = 4ull << 10; s <= 256ull << 20; s *= 4) sizes.push_back(s);
  return sizes;
}

// fp8 codes of `format` for `count` elements: the reference encoding of bfloat16 KV data (a
// realistic code distribution, no NaN codes). Cached and grown like kv_values().
std::span<const std::uint8_t> kv_codes(Fp8Format format, std::size_t count) {
  static std::map<Fp8Format, std::vector<std::uint8_t>> cache;
  std::vector<std::uint8_t>& codes = cache[format];
  if (codes.size() < count) {
    codes.assign(count, 0);
    devices::fp8_encode_fast(kv_values(DType::kBFloat16, 2 * count), DType::kBFloat16, count, codes,
                             format, Fp8Overflow::kNonSaturating, {.threads = 2});
  }
  return {codes.data(), count};
}

// Bytes a codec call reads + writes for `size` bytes of wide data: the traffic convention.
std::uint64_t codec_traffic(DType dtype, std::uint64_t size) {
  return size + size / element_size(dtype);
}

double roofline_min_seconds(bool quick) { return quick ? 0.005 : 0.05; }

// ---------------------------------------------------------------------------------------------
// CPU

// The roofline rate of `traffic` bytes read + written: the faster of a plain and a chunked
// glibc memcpy (see parallel_memcpy()). `threads`: what the kernel really uses
// (kernel_threads()).
double measure_memcpy_rate(std::uint64_t traffic, std::size_t threads, bool quick) {
  const std::size_t bytes = traffic / 2;
  std::vector<std::byte> src(bytes, std::byte{1});
  std::vector<std::byte> dst(bytes);
  double best = 0;
  for (bool chunked : {false, true}) {
    best = std::max(
        best,
        measure_rate([&] { parallel_memcpy(dst.data(), src.data(), bytes, threads, chunked); },
                     static_cast<double>(2 * bytes), roofline_min_seconds(quick), 3));
  }
  return best;
}

// `threads` is the requested count (the label); the copy splits as a kernel call over
// `elements` elements would (kernel_threads()).
void register_memcpy(std::uint64_t traffic, std::size_t threads, std::size_t elements,
                     bool chunked) {
  BenchLabels l;
  l.suite = "roofline";
  l.op = "memcpy";
  l.impl = chunked ? "memcpy_2k" : "memcpy";
  l.size_bytes = traffic / 2;  // bytes copied; read + written = traffic
  l.threads = threads;
  const std::size_t split = kernel_threads(elements, threads);
  register_labeled(l,
                   [traffic, split, chunked](benchmark::State& st) {
                     const std::size_t threads = split;
                     const std::size_t bytes = traffic / 2;
                     std::vector<std::byte> src(bytes, std::byte{1});
                     std::vector<std::byte> dst(bytes);
                     for (auto _ : st) {
                       parallel_memcpy(dst.data(), src.data(), bytes, threads, chunked);
                       benchmark::DoNotOptimize(dst.data());
                       benchmark::ClobberMemory();
                     }
                     st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 2 * bytes));
                     st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * bytes));
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// impl "scalar": lmcache::fp8_encode / fp8_decode, the reference codec the fp8 serde calls.
// impl "simd":   lmcache::devices::fp8_encode_fast / fp8_decode_fast on the best SIMD target.
void register_cpu_codec(bool encode, DType dtype, Fp8Format format, std::uint64_t size,
                        std::size_t threads, bool scalar, bool quick) {
  BenchLabels l;
  l.suite = "codec";
  l.op = encode ? "encode" : "decode";
  l.impl = scalar ? "scalar" : "simd";
  l.serde = "fp8";
  l.dtype = std::string(dtype_name(dtype));
  l.format = std::string(fp8_format_name(format));
  l.size_bytes = size;
  l.threads = threads;
  // Measured on the instance's first call, right before its first timing, and reused by the
  // later calls Google Benchmark makes while it sizes the iteration count.
  auto roofline = std::make_shared<double>(0.0);
  register_labeled(
      l,
      [=](benchmark::State& st) {
        const std::size_t n = size / element_size(dtype);
        const std::uint64_t traffic = codec_traffic(dtype, size);
        const KernelOptions opt{.threads = threads, .backend = Fp8Backend::kSimd, .simd_target = 0};
        std::span<const std::byte> wide_in;
        std::span<const std::uint8_t> codes_in;
        std::vector<std::uint8_t> codes_out;
        std::vector<std::byte> wide_out;
        if (encode) {
          wide_in = kv_values(dtype, size);
          codes_out.assign(n, 0);
        } else {
          codes_in = kv_codes(format, n);
          wide_out.assign(size, std::byte{0});
        }
        if (*roofline == 0.0) {
          *roofline = measure_memcpy_rate(traffic, kernel_threads(n, threads), quick);
        }
        const auto t0 = std::chrono::steady_clock::now();
        for (auto _ : st) {
          if (encode && scalar) {
            fp8_encode(wide_in, dtype, n, codes_out, format, Fp8Overflow::kNonSaturating);
          } else if (encode) {
            devices::fp8_encode_fast(wide_in, dtype, n, codes_out, format,
                                     Fp8Overflow::kNonSaturating, opt);
          } else if (scalar) {
            fp8_decode(codes_in, n, wide_out, dtype, format);
          } else {
            devices::fp8_decode_fast(codes_in, n, wide_out, dtype, format, opt);
          }
          benchmark::DoNotOptimize(encode ? static_cast<void*>(codes_out.data())
                                          : static_cast<void*>(wide_out.data()));
          benchmark::ClobberMemory();
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto iters = static_cast<double>(st.iterations());
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * traffic));
        st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n));
        st.counters[kRooflineRatioCounter] =
            iters * static_cast<double>(traffic) / std::max(elapsed, 1e-9) / *roofline;
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// ---------------------------------------------------------------------------------------------
// CUDA: the device-resident kernels against a device-to-device copy of the same traffic. Each
// iteration is one batch of launches (about kCudaBatchMs of GPU time) between one pair of CUDA
// events, on a stream and events made once per benchmark (devices::cuda::LaunchTimer), so
// launch latency and stream or event creation stay out of the figures, small sizes included.

constexpr double kCudaBatchMs = 5.0;

// Times `launch` (one kernel or copy moving `traffic` bytes read + written, `items` elements)
// in batches; returns the rate over all of them in bytes/s.
double time_cuda_batches(benchmark::State& st, devices::cuda::LaunchTimer& timer,
                         std::uint64_t traffic, std::uint64_t items,
                         const std::function<void(void*)>& launch) {
  const int launches = timer.launches_for(kCudaBatchMs, launch);
  double total_s = 0;
  for (auto _ : st) {
    const double s = timer.ms_per_launch(launches, launch) * launches / 1e3;
    st.SetIterationTime(s);
    total_s += s;
  }
  const auto n = static_cast<std::int64_t>(st.iterations()) * launches;
  st.SetBytesProcessed(n * static_cast<std::int64_t>(traffic));
  st.SetItemsProcessed(n * static_cast<std::int64_t>(items));
  st.counters["launches_per_batch"] = launches;
  return static_cast<double>(n) * static_cast<double>(traffic) / std::max(total_s, 1e-12);
}

// The device copy's rate for `traffic` bytes read + written (the median of 5 batches), measured
// once per traffic value and shared by the codec rows' roofline ratios.
double cuda_copy_rate(std::uint64_t traffic) {
  static std::map<std::uint64_t, double> cache;  // benchmarks run on one thread
  if (const auto it = cache.find(traffic); it != cache.end()) return it->second;
  devices::cuda::DeviceBuffer a(traffic / 2);
  devices::cuda::DeviceBuffer b(traffic / 2);
  devices::cuda::LaunchTimer timer;
  const auto copy = [&](void* s) {
    devices::cuda::copy_device_to_device(b.data(), a.data(), traffic / 2, s);
  };
  const int launches = timer.launches_for(kCudaBatchMs, copy);
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    rates.push_back(static_cast<double>(traffic) / (timer.ms_per_launch(launches, copy) / 1e3));
  }
  std::sort(rates.begin(), rates.end());
  return cache[traffic] = rates[rates.size() / 2];
}

void register_cuda_copy(std::uint64_t traffic) {
  BenchLabels l;
  l.suite = "roofline";
  l.op = "d2d_copy";
  l.impl = "cuda";
  l.device = "cuda";
  l.size_bytes = traffic / 2;
  l.threads = 1;
  register_labeled(l,
                   [traffic](benchmark::State& st) {
                     try {
                       const std::size_t bytes = traffic / 2;
                       devices::cuda::DeviceBuffer a(bytes);
                       devices::cuda::DeviceBuffer b(bytes);
                       devices::cuda::LaunchTimer timer;
                       time_cuda_batches(st, timer, 2 * bytes, bytes, [&](void* s) {
                         devices::cuda::copy_device_to_device(b.data(), a.data(), bytes, s);
                       });
                     } catch (const std::exception& e) {
                       st.SkipWithError(e.what());
                     }
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime();
}

void register_cuda_codec(bool encode, DType dtype, Fp8Format format, std::uint64_t size) {
  BenchLabels l;
  l.suite = "codec";
  l.op = encode ? "encode" : "decode";
  l.impl = "cuda";
  l.serde = "fp8";
  l.dtype = std::string(dtype_name(dtype));
  l.format = std::string(fp8_format_name(format));
  l.device = "cuda";
  l.size_bytes = size;
  l.threads = 1;
  register_labeled(
      l,
      [=](benchmark::State& st) {
        const std::size_t n = size / element_size(dtype);
        const std::uint64_t traffic = codec_traffic(dtype, size);
        try {
          devices::cuda::DeviceBuffer wide(size);
          devices::cuda::DeviceBuffer codes(n);
          if (encode) {
            devices::cuda::copy_to_device(wide.data(), kv_values(dtype, size).data(), size);
          } else {
            devices::cuda::copy_to_device(codes.data(), kv_codes(format, n).data(), n);
          }
          const double roofline = cuda_copy_rate(traffic);
          devices::cuda::LaunchTimer timer;
          auto* code_ptr = static_cast<std::uint8_t*>(codes.data());
          const double rate = time_cuda_batches(st, timer, traffic, n, [&](void* s) {
            if (encode) {
              devices::fp8_encode_cuda_device(wide.data(), dtype, n, code_ptr, format,
                                              Fp8Overflow::kNonSaturating, s);
            } else {
              devices::fp8_decode_cuda_device(code_ptr, n, wide.data(), dtype, format, s);
            }
          });
          st.counters[kRooflineRatioCounter] = rate / roofline;
        } catch (const std::exception& e) {
          st.SkipWithError(e.what());
        }
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime();
}

}  // namespace

void register_codec_suite(const SuiteConfig& c) {
  const std::vector<std::uint64_t> sizes = codec_sizes(c);
  const std::vector<std::size_t> threads = c.threads.empty() ? default_threads(c.quick) : c.threads;
  for (std::uint64_t size : sizes) {
    for (DType dtype : kDtypes) {
      if (size % element_size(dtype) != 0) {
        throw std::invalid_argument("--sizes: " + std::to_string(size) +
                                    " bytes is not a whole number of " +
                                    std::string(dtype_name(dtype)) + " elements");
      }
    }
  }
  if (c.cpu) {
    for (std::uint64_t size : sizes) {
      for (std::size_t t : threads) {
        // One roofline row per traffic value (float32 moves 1.25x its size, 16-bit types 1.5x).
        std::map<std::uint64_t, std::size_t> traffics;  // traffic -> elements
        for (DType dtype : kDtypes) {
          traffics[codec_traffic(dtype, size)] = size / element_size(dtype);
        }
        for (const auto& [traffic, elements] : traffics) {
          register_memcpy(traffic, t, elements, false);
          register_memcpy(traffic, t, elements, true);
        }
        for (bool encode : {true, false}) {
          for (DType dtype : kDtypes) {
            for (Fp8Format format : kFormats) {
              register_cpu_codec(encode, dtype, format, size, t, /*scalar=*/false, c.quick);
              // The reference codec runs single-threaded, as the fp8 serde calls it.
              if (t == 1) register_cpu_codec(encode, dtype, format, size, 1, true, c.quick);
            }
          }
        }
      }
    }
  }
  if (c.cuda) {
    for (std::uint64_t size : sizes) {
      std::set<std::uint64_t> traffics;
      for (DType dtype : kDtypes) traffics.insert(codec_traffic(dtype, size));
      for (std::uint64_t traffic : traffics) register_cuda_copy(traffic);
      for (bool encode : {true, false}) {
        for (DType dtype : kDtypes) {
          for (Fp8Format format : kFormats) register_cuda_codec(encode, dtype, format, size);
        }
      }
    }
  }
}

}  // namespace lmcache::bench
