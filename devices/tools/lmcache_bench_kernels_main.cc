// File: devices/tools/lmcache_bench_kernels_main.cc
//
// lmcache-bench-kernels: encode and decode of 64 MiB of input per (dtype, format), for the scalar
// reference codec ("reference"), the SIMD backend on the best target ("auto") and on each
// target this CPU supports (Highway's names: AVX3, AVX2, SSE4, SSSE3, and SCALAR, its one-lane
// fallback), with 1 and 2 threads; and, in the same run, memcpy moving the same number of
// bytes (read + written) with the same thread count, the roofline every figure is compared
// with. Bytes per second always count bytes read + written. "InCache/" entries run the same
// kernels on 32 Ki elements that stay in L2 (CPU time): the compute ceiling without memory.
// After the run a summary prints each kernel's GB/s, its ratio to memcpy and its speedup over
// the reference.
//
// With a CUDA GPU it also times the device-to-device encode/decode kernels against a
// device-to-device copy (cudaMemcpyAsync) of the same traffic, registered once per traffic
// value. Each iteration is one batch of launches (about kCudaBatchMs of GPU time) between one
// pair of CUDA events on a stream and events made once per benchmark (cuda::LaunchTimer), so
// neither launch latency nor stream and event creation lands in the figure; the summary prints
// each kernel's GB/s beside the copy's. Without a usable GPU one "CudaD2D/unavailable" entry is
// skipped with the reason.
//
// Typical run (one core, as in BENCHMARKS.md):
//   taskset -c 0 lmcache-bench-kernels --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli_support.h"
#include "lmcache/devices/device_info.h"
#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"

namespace lmcache::fp8 {
namespace {

constexpr std::size_t kInputBytes = std::size_t{64} << 20;
// Small enough for L2 (512 KiB per core here) in every direction, large enough that the data
// pattern does not repeat within a branch predictor's history.
constexpr std::size_t kCachedElements = std::size_t{32} << 10;

// Page-backed buffers, touched before timing so no first-touch page fault is measured.
std::vector<std::byte> make_buffer(std::size_t bytes) { return std::vector<std::byte>(bytes); }

// Input of `dtype`: normally distributed values (a KV-cache-like spread, |x| mostly < 4, a few
// in the fp8 subnormal range), or, for codes, uniformly random bytes (every code, NaNs too).
const std::vector<std::byte>& input_for(DType dtype) {
  static std::map<DType, std::vector<std::byte>> cache;
  auto it = cache.find(dtype);
  if (it != cache.end()) return it->second;
  std::vector<std::byte> buf = make_buffer(kInputBytes);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::size_t n = kInputBytes / element_size(dtype);
  for (std::size_t i = 0; i < n; ++i) {
    const float x = normal(rng);
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    switch (dtype) {
      case DType::kFloat32:
        std::memcpy(buf.data() + 4 * i, &bits, 4);
        break;
      case DType::kBFloat16: {
        const auto b = static_cast<std::uint16_t>(bits >> 16);
        std::memcpy(buf.data() + 2 * i, &b, 2);
        break;
      }
      case DType::kFloat16: {
        const auto h = static_cast<_Float16>(x);
        std::memcpy(buf.data() + 2 * i, &h, 2);
        break;
      }
      default:
        buf[i] = static_cast<std::byte>(rng());
        break;
    }
  }
  return cache.emplace(dtype, std::move(buf)).first->second;
}

std::string target_label(std::int64_t target) {
  return target == 0 ? std::string("auto") : fp8_simd_target_name(target);
}

// memcpy of `bytes` split over `threads`, as the kernels split their work.
void parallel_memcpy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t threads) {
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t step = (bytes / threads) & ~std::size_t{4095};
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t + 1 < threads; ++t) {
    workers.emplace_back([=] { std::memcpy(dst + t * step, src + t * step, step); });
  }
  const std::size_t last = (threads - 1) * step;
  std::memcpy(dst + last, src + last, bytes - last);
  for (auto& w : workers) w.join();
}

void BM_Memcpy(benchmark::State& state, std::size_t traffic_bytes, std::size_t threads) {
  const std::size_t bytes = traffic_bytes / 2;
  auto src = make_buffer(bytes);
  auto dst = make_buffer(bytes);
  std::memset(src.data(), 1, bytes);
  for (auto _ : state) {
    parallel_memcpy(dst.data(), src.data(), bytes, threads);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * bytes));
}

// `elements` = 0: the whole 64 MiB input; otherwise its first `elements` (a cache-resident
// size: the compute ceiling, free of memory bandwidth).
void BM_Encode(benchmark::State& state, DType dtype, Fp8Format format, KernelOptions opt,
               std::size_t elements) {
  const auto& all = input_for(dtype);
  const std::size_t n = elements != 0 ? elements : all.size() / element_size(dtype);
  const std::span<const std::byte> src(all.data(), n * element_size(dtype));
  std::vector<std::uint8_t> dst(n, 0);
  for (auto _ : state) {
    fp8_encode_fast(src, dtype, n, dst, format, Fp8Overflow::kNonSaturating, opt);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (src.size() + n)));
}

void BM_Decode(benchmark::State& state, DType dtype, Fp8Format format, KernelOptions opt,
               std::size_t elements) {
  const auto& raw = input_for(DType::kUInt8);
  const std::span<const std::uint8_t> src(reinterpret_cast<const std::uint8_t*>(raw.data()),
                                          elements != 0 ? elements : raw.size());
  auto dst = make_buffer(src.size() * element_size(dtype));
  for (auto _ : state) {
    fp8_decode_fast(src, src.size(), dst, dtype, format, opt);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * (src.size() + dst.size())));
}

// CUDA: device-to-device copy vs the device-to-device kernels, timed with CUDA events.

// GPU time per timed batch: long enough that the two event records and the gaps between
// launches are noise, short enough for Google Benchmark to take several batches.
constexpr double kCudaBatchMs = 20.0;

// Runs `body` with a LaunchTimer; skips with the reason when no GPU is usable or a CUDA call
// fails (out of memory, say).
void run_cuda_batches(benchmark::State& state,
                      const std::function<void(cuda::LaunchTimer&)>& body) {
  if (!fp8_cuda_available()) {
    state.SkipWithError(("CUDA: " + fp8_cuda_unavailable_reason()).c_str());
    return;
  }
  try {
    cuda::LaunchTimer timer;
    body(timer);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

// Times batches of `launch` (each queues one kernel or copy moving `traffic` bytes read +
// written) and reports GB/s over them.
void time_batches(benchmark::State& state, cuda::LaunchTimer& timer, std::size_t traffic,
                  const std::function<void(void* stream)>& launch) {
  const int launches = timer.launches_for(kCudaBatchMs, launch);
  for (auto _ : state) {
    state.SetIterationTime(timer.ms_per_launch(launches, launch) * launches / 1e3);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * launches *
                          static_cast<std::int64_t>(traffic));
  state.counters["launches_per_batch"] = launches;
}

void BM_CudaCopy(benchmark::State& state, std::size_t traffic_bytes) {
  run_cuda_batches(state, [&](cuda::LaunchTimer& timer) {
    const std::size_t bytes = traffic_bytes / 2;
    cuda::DeviceBuffer a(bytes);
    cuda::DeviceBuffer b(bytes);
    time_batches(state, timer, 2 * bytes,
                 [&](void* s) { cuda::copy_device_to_device(b.data(), a.data(), bytes, s); });
  });
}

void BM_CudaKernel(benchmark::State& state, bool encode, DType dtype, Fp8Format format) {
  const std::size_t n = encode ? kInputBytes / element_size(dtype) : kInputBytes;
  const std::size_t traffic = n + n * element_size(dtype);
  run_cuda_batches(state, [&](cuda::LaunchTimer& timer) {
    cuda::DeviceBuffer wide(n * element_size(dtype));
    cuda::DeviceBuffer codes(n);
    const auto& host = input_for(encode ? dtype : DType::kUInt8);
    cuda::copy_to_device(encode ? wide.data() : codes.data(), host.data(), kInputBytes);
    auto* code_ptr = static_cast<std::uint8_t*>(codes.data());
    time_batches(state, timer, traffic, [&](void* s) {
      if (encode) {
        fp8_encode_cuda_device(wide.data(), dtype, n, code_ptr, format, Fp8Overflow::kNonSaturating,
                               s);
      } else {
        fp8_decode_cuda_device(code_ptr, n, wide.data(), dtype, format, s);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Registration and the summary.

struct Key {
  std::string direction;  // "encode" / "decode"
  std::string dtype;
  std::string format;
  std::size_t threads;
  auto tie() const { return std::tie(direction, dtype, format, threads); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Entry {
  std::string name;
  Key key;
  std::string backend;  // "reference" (the scalar codec), "auto", or a SIMD target name
  std::size_t traffic;
};

std::vector<Entry>& entries() {
  static std::vector<Entry> e;
  return e;
}

// The CUDA kernels, each compared with the device copy of its traffic.
struct CudaEntry {
  std::string name;
  std::size_t traffic;
};

std::vector<CudaEntry>& cuda_entries() {
  static std::vector<CudaEntry> e;
  return e;
}

std::string cuda_copy_name(std::size_t traffic) {
  return "CudaD2D/copy/traffic_MiB:" + std::to_string(traffic >> 20);
}

void register_all() {
  const std::vector<std::int64_t> targets = fp8_simd_targets();
  std::vector<std::pair<std::size_t, std::size_t>> memcpy_sizes;  // (traffic, threads)
  for (bool encode : {true, false}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const std::size_t elem = element_size(dtype);
      const std::size_t n = encode ? kInputBytes / elem : kInputBytes;
      const std::size_t traffic = encode ? kInputBytes + n : kInputBytes + n * elem;
      for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
        for (std::size_t threads : {1, 2}) {
          std::vector<std::pair<std::string, KernelOptions>> variants;
          variants.push_back({"reference", {threads, Fp8Backend::kScalar, 0}});
          variants.push_back({"auto", {threads, Fp8Backend::kSimd, 0}});
          for (std::int64_t t : targets) {
            variants.push_back({target_label(t), {threads, Fp8Backend::kSimd, t}});
          }
          for (const auto& [label, opt] : variants) {
            const std::string name = std::string(encode ? "Encode/" : "Decode/") +
                                     std::string(dtype_name(dtype)) + "/" +
                                     std::string(fp8_format_name(format)) + "/" + label +
                                     "/threads:" + std::to_string(threads);
            if (encode) {
              benchmark::RegisterBenchmark(name.c_str(), BM_Encode, dtype, format, opt, 0)
                  ->Unit(benchmark::kMillisecond)
                  ->UseRealTime();
            } else {
              benchmark::RegisterBenchmark(name.c_str(), BM_Decode, dtype, format, opt, 0)
                  ->Unit(benchmark::kMillisecond)
                  ->UseRealTime();
            }
            if (threads == 1) {
              // The same kernel on 32 Ki elements that stay in L2: its compute ceiling.
              const std::string cached = "InCache/" + name;
              if (encode) {
                benchmark::RegisterBenchmark(cached.c_str(), BM_Encode, dtype, format, opt,
                                             kCachedElements)
                    ->Unit(benchmark::kMicrosecond);
              } else {
                benchmark::RegisterBenchmark(cached.c_str(), BM_Decode, dtype, format, opt,
                                             kCachedElements)
                    ->Unit(benchmark::kMicrosecond);
              }
            }
            entries().push_back({name,
                                 {encode ? "encode" : "decode", std::string(dtype_name(dtype)),
                                  std::string(fp8_format_name(format)), threads},
                                 label,
                                 traffic});
          }
          memcpy_sizes.emplace_back(traffic, threads);
        }
      }
    }
  }
  std::sort(memcpy_sizes.begin(), memcpy_sizes.end());
  memcpy_sizes.erase(std::unique(memcpy_sizes.begin(), memcpy_sizes.end()), memcpy_sizes.end());
  for (const auto& [traffic, threads] : memcpy_sizes) {
    const std::string name = "Memcpy/traffic_MiB:" + std::to_string(traffic >> 20) +
                             "/threads:" + std::to_string(threads);
    benchmark::RegisterBenchmark(name.c_str(), BM_Memcpy, traffic, threads)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }

  if (fp8_cuda_available()) {
    std::set<std::size_t> copy_traffics;  // one roofline per traffic value (float16 and
                                          // bfloat16 share theirs)
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const std::size_t elem = element_size(dtype);
      for (bool encode : {true, false}) {
        const std::size_t n = encode ? kInputBytes / elem : kInputBytes;
        const std::size_t traffic = n + n * elem;
        copy_traffics.insert(traffic);
        for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
          const std::string name = std::string("CudaD2D/") + (encode ? "encode/" : "decode/") +
                                   std::string(dtype_name(dtype)) + "/" +
                                   std::string(fp8_format_name(format));
          benchmark::RegisterBenchmark(name.c_str(), BM_CudaKernel, encode, dtype, format)
              ->UseManualTime()
              ->Unit(benchmark::kMicrosecond);
          cuda_entries().push_back({name, traffic});
        }
      }
    }
    for (std::size_t traffic : copy_traffics) {
      benchmark::RegisterBenchmark(cuda_copy_name(traffic).c_str(), BM_CudaCopy, traffic)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  } else {
    benchmark::RegisterBenchmark("CudaD2D/unavailable", BM_CudaCopy, kInputBytes);
  }
}

// Collects bytes/s per benchmark name while the console reporter prints as usual.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration) continue;
      const auto it = r.counters.find("bytes_per_second");
      if (it != r.counters.end()) rate_[base_name(r.benchmark_name())] = it->second.value;
    }
  }

  // The registered name, without the "/real_time" / "/manual_time" suffix of the timing mode.
  static std::string base_name(std::string name) {
    for (const std::string suffix : {"/real_time", "/manual_time"}) {
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        name.resize(name.size() - suffix.size());
      }
    }
    return name;
  }

  void PrintSummary() const {
    std::printf(
        "\nSummary: GB/s (bytes read + written, 1e9), ratio to memcpy of the same "
        "traffic and threads, speedup over the scalar reference\n");
    std::printf("%-44s %9s %9s %9s\n", "kernel", "GB/s", "/memcpy", "x ref");
    std::map<Key, double> scalar;
    for (const Entry& e : entries()) {
      if (e.backend == "reference" && rate_.count(e.name)) scalar[e.key] = rate_.at(e.name);
    }
    for (const Entry& e : entries()) {
      if (!rate_.count(e.name)) continue;
      const double rate = rate_.at(e.name);
      const std::string memcpy_name = "Memcpy/traffic_MiB:" + std::to_string(e.traffic >> 20) +
                                      "/threads:" + std::to_string(e.key.threads);
      const double mc = rate_.count(memcpy_name) ? rate_.at(memcpy_name) : 0;
      const double sc = scalar.count(e.key) ? scalar.at(e.key) : 0;
      std::printf("%-44s %9.2f %9.2f %9.1f\n", e.name.c_str(), rate / 1e9, mc > 0 ? rate / mc : 0.0,
                  sc > 0 ? rate / sc : 0.0);
    }
    for (const auto& [name, rate] : rate_) {
      if (name.rfind("Memcpy/", 0) == 0) std::printf("%-44s %9.2f\n", name.c_str(), rate / 1e9);
    }
    if (cuda_entries().empty()) return;
    std::printf(
        "\nCUDA: GB/s (bytes read + written, 1e9) and ratio to a device-to-device copy "
        "of the same traffic\n");
    std::printf("%-44s %9s %9s\n", "kernel", "GB/s", "/copy");
    for (const CudaEntry& e : cuda_entries()) {
      if (!rate_.count(e.name)) continue;
      const std::string copy = cuda_copy_name(e.traffic);
      const double cp = rate_.count(copy) ? rate_.at(copy) : 0;
      std::printf("%-44s %9.2f %9.2f\n", e.name.c_str(), rate_.at(e.name) / 1e9,
                  cp > 0 ? rate_.at(e.name) / cp : 0.0);
    }
    for (const auto& [name, rate] : rate_) {
      if (name.rfind("CudaD2D/copy/", 0) == 0) {
        std::printf("%-44s %9.2f\n", name.c_str(), rate / 1e9);
      }
    }
  }

 private:
  std::map<std::string, double> rate_;
};

void add_context() {
  const devices::DeviceInfo info = devices::device_info();
  benchmark::AddCustomContext("cpu_model", info.cpu.model);
  std::string targets;
  for (const auto& t : info.cpu.simd_targets) targets += (targets.empty() ? "" : ",") + t;
  benchmark::AddCustomContext("simd_targets", targets);
  benchmark::AddCustomContext("device", info.device);
  benchmark::AddCustomContext("cuda", info.cuda.available ? info.cuda.gpus.front().name
                                                          : "unavailable: " + info.cuda.reason);
  benchmark::AddCustomContext("fp8_cuda_kernels", fp8_cuda_available()
                                                      ? std::string("usable")
                                                      : fp8_cuda_unavailable_reason());
}

}  // namespace
}  // namespace lmcache::fp8

// Exit status: 0 when benchmarks ran; 2 for an argument Google Benchmark does not know, or a
// --benchmark_filter that does not compile or matches nothing; 1 when something failed (named).
int main(int argc, char** argv) {
  return lmcache::cli::guarded_main("lmcache-bench-kernels", [&] {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return lmcache::cli::kExitUsage;
    lmcache::fp8::add_context();
    lmcache::fp8::register_all();
    lmcache::fp8::SummaryReporter reporter;
    // Google Benchmark reports a filter that does not compile on stderr and runs nothing.
    const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    if (ran == 0) {
      std::fprintf(stderr,
                   "lmcache-bench-kernels: no benchmark matches --benchmark_filter (see "
                   "--benchmark_list_tests)\n");
      return lmcache::cli::kExitUsage;
    }
    reporter.PrintSummary();
    return 0;
  });
}
