// The codec/ and roofline/ suites (see suites.h), and the helpers every suite shares.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/roofline.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"

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

using fp8::Fp8Backend;
using fp8::KernelOptions;

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
    fp8::fp8_encode_fast(kv_values(DType::kBFloat16, 2 * count), DType::kBFloat16, count, codes,
                         format, Fp8Overflow::kNonSaturating, {.threads = 2});
  }
  return {codes.data(), count};
}

// Bytes a codec call reads + writes for `size` bytes of wide data: the traffic convention.
std::uint64_t codec_traffic(DType dtype, std::uint64_t size) {
  return size + size / element_size(dtype);
}

// The longest the roofline of one codec row samples: a fraction of the kernel's own timed
// time, so the roofline costs at most half as much as the row it bounds.
double roofline_cap_seconds(bool quick) { return quick ? 0.01 : 0.1; }
constexpr int kRooflineMinSamples = 5;

// The standalone roofline/ rows: the copy a codec call over `elements` elements with `threads`
// would be measured against (fp8::fp8_roofline_copy: the kernels' own thread split), one
// memcpy per range (impl "memcpy") or in 2 KiB pieces ("memcpy_2k"). The codec rows measure
// their own roofline on their own buffers; these rows put the copy itself on the plots.
void register_memcpy(std::uint64_t traffic, std::size_t threads, std::size_t elements,
                     bool chunked) {
  BenchLabels l;
  l.suite = "roofline";
  l.op = "memcpy";
  l.impl = chunked ? "memcpy_2k" : "memcpy";
  l.size_bytes = traffic / 2;  // bytes copied; read + written = traffic
  l.threads = threads;
  register_labeled(l,
                   [traffic, threads, elements, chunked](benchmark::State& st) {
                     const std::size_t bytes = traffic / 2;
                     std::vector<std::byte> src(bytes, std::byte{1});
                     std::vector<std::byte> dst(bytes);
                     const fp8::KernelOptions split{.threads = threads};
                     const std::size_t piece = chunked ? 2048 : 0;
                     for (auto _ : st) {
                       fp8::fp8_roofline_copy(dst, src, elements, split, piece);
                       benchmark::DoNotOptimize(dst.data());
                       benchmark::ClobberMemory();
                     }
                     st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * 2 * bytes));
                     st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * bytes));
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// Sets the roofline counters of a codec row whose kernel ran at `rate` bytes/s.
void set_roofline_counters(benchmark::State& st, const RateStats& roof, double rate) {
  st.counters[kRooflineRatioCounter] = roof.median > 0 ? rate / roof.median : 0.0;
  st.counters[kRooflineRateCounter] = roof.median;
  st.counters[kRooflineSpreadCounter] = roof.spread();
}

// impl "scalar": lmcache::fp8_encode / fp8_decode, the reference codec the fp8 serde calls.
// impl "simd":   lmcache::fp8::fp8_encode_fast / fp8_decode_fast on the best SIMD target.
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
  register_labeled(
      l,
      [=](benchmark::State& st) {
        const std::size_t n = size / element_size(dtype);
        const std::uint64_t traffic = codec_traffic(dtype, size);
        // The roofline copies traffic / 2 bytes from the kernel's input allocation into its
        // output allocation (both at least that large; the kernel uses their first bytes), so
        // it runs on the very pages the kernel just touched.
        const std::size_t copy_bytes = traffic / 2;
        const KernelOptions opt{.threads = threads, .backend = Fp8Backend::kSimd, .simd_target = 0};
        std::span<const std::byte> wide_in;
        std::span<const std::uint8_t> codes_in;
        std::vector<std::uint8_t> codes_out;
        std::vector<std::byte> wide_out;
        std::span<const std::byte> copy_src;
        std::span<std::byte> copy_dst;
        if (encode) {
          wide_in = kv_values(dtype, size);
          codes_out.assign(std::max<std::size_t>(n, copy_bytes), 0);
          copy_src = wide_in.first(copy_bytes);
          copy_dst = std::as_writable_bytes(std::span<std::uint8_t>(codes_out));
        } else {
          codes_in = kv_codes(format, std::max<std::size_t>(n, copy_bytes));
          wide_out.assign(size, std::byte{0});
          copy_src = std::as_bytes(codes_in).first(copy_bytes);
          copy_dst = wide_out;
        }
        const std::span<const std::uint8_t> codes_in_n = encode ? codes_in : codes_in.first(n);
        const std::span<std::uint8_t> codes_out_n =
            encode ? std::span<std::uint8_t>(codes_out).first(n) : std::span<std::uint8_t>();
        const auto t0 = std::chrono::steady_clock::now();
        for (auto _ : st) {
          if (encode && scalar) {
            fp8_encode(wide_in, dtype, n, codes_out_n, format, Fp8Overflow::kNonSaturating);
          } else if (encode) {
            fp8::fp8_encode_fast(wide_in, dtype, n, codes_out_n, format,
                                 Fp8Overflow::kNonSaturating, opt);
          } else if (scalar) {
            fp8_decode(codes_in_n, n, wide_out, dtype, format);
          } else {
            fp8::fp8_decode_fast(codes_in_n, n, wide_out, dtype, format, opt);
          }
          benchmark::DoNotOptimize(encode ? static_cast<void*>(codes_out.data())
                                          : static_cast<void*>(wide_out.data()));
          benchmark::ClobberMemory();
        }
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * traffic));
        st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * n));
        // Measured after every call Google Benchmark makes (the counters of its last call are
        // reported) on warm buffers with the same threads, for half the kernel's timed time
        // (capped), but at least kRooflineMinSamples samples of each copy variant.
        const RateStats roof =
            measure_roofline(copy_dst, copy_src, n,
                             {.threads = threads,
                              .min_seconds = std::min(elapsed / 2, roofline_cap_seconds(quick)),
                              .min_samples = kRooflineMinSamples});
        set_roofline_counters(st, roof,
                              static_cast<double>(st.iterations()) * static_cast<double>(traffic) /
                                  std::max(elapsed, 1e-12));
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// ---------------------------------------------------------------------------------------------
// CUDA: the device-resident kernels against a device-to-device copy of the same traffic. Each
// iteration is one batch of launches (about kCudaBatchMs of GPU time) between one pair of CUDA
// events, on a stream and events made once per benchmark (fp8::cuda::LaunchTimer), so
// launch latency and stream or event creation stay out of the figures, small sizes included.

constexpr double kCudaBatchMs = 5.0;

// Times `launch` (one kernel or copy moving `traffic` bytes read + written, `items` elements)
// in batches; returns the rate over all of them in bytes/s.
double time_cuda_batches(benchmark::State& st, fp8::cuda::LaunchTimer& timer, std::uint64_t traffic,
                         std::uint64_t items, const std::function<void(void*)>& launch) {
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
                       fp8::cuda::DeviceBuffer a(bytes);
                       fp8::cuda::DeviceBuffer b(bytes);
                       fp8::cuda::LaunchTimer timer;
                       time_cuda_batches(st, timer, 2 * bytes, bytes, [&](void* s) {
                         fp8::cuda::copy_device_to_device(b.data(), a.data(), bytes, s);
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
  register_labeled(l,
                   [=](benchmark::State& st) {
                     const std::size_t n = size / element_size(dtype);
                     const std::uint64_t traffic = codec_traffic(dtype, size);
                     try {
                       // The codes buffer holds at least traffic / 2 bytes: the roofline copy runs
                       // between the kernel's own two buffers (the kernel uses the first n codes).
                       fp8::cuda::DeviceBuffer wide(size);
                       fp8::cuda::DeviceBuffer codes(std::max<std::size_t>(n, traffic / 2));
                       if (encode) {
                         fp8::cuda::copy_to_device(wide.data(), kv_values(dtype, size).data(),
                                                   size);
                       } else {
                         fp8::cuda::copy_to_device(codes.data(), kv_codes(format, n).data(), n);
                       }
                       fp8::cuda::LaunchTimer timer;
                       auto* code_ptr = static_cast<std::uint8_t*>(codes.data());
                       const double rate = time_cuda_batches(st, timer, traffic, n, [&](void* s) {
                         if (encode) {
                           fp8::fp8_encode_cuda_device(wide.data(), dtype, n, code_ptr, format,
                                                       Fp8Overflow::kNonSaturating, s);
                         } else {
                           fp8::fp8_decode_cuda_device(code_ptr, n, wide.data(), dtype, format, s);
                         }
                       });
                       // The roofline: a device copy of the same traffic from the kernel's input
                       // buffer to its output buffer, timed like the kernel (batches of launches
                       // between one event pair on the same stream), after it, with its spread.
                       void* copy_dst = encode ? codes.data() : wide.data();
                       const void* copy_src = encode ? wide.data() : codes.data();
                       const auto copy = [&](void* s) {
                         fp8::cuda::copy_device_to_device(copy_dst, copy_src, traffic / 2, s);
                       };
                       const int copies = timer.launches_for(kCudaBatchMs, copy);
                       std::vector<double> rates;
                       for (int i = 0; i < kRooflineMinSamples * 2; ++i) {
                         rates.push_back(static_cast<double>(traffic) /
                                         std::max(timer.ms_per_launch(copies, copy) / 1e3, 1e-12));
                       }
                       set_roofline_counters(st, rate_stats(std::move(rates)), rate);
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
