// File: lmcache/fp8/fp8_kernels.cc
//
// Validation, the backend routing point and the thread split. Arguments are checked by the
// reference codec's own fp8_check_*_args, so a failing fast call throws what the reference would
// have thrown, before anything is written.
#include "lmcache/fp8/fp8_kernels.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "lmcache/core/thread_pool.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_backend.h"
#include "lmcache/fp8/internal/fp8_kernels_simd.h"

namespace lmcache::fp8 {
namespace {

// Ranges per thread a split call aims for, and the most elements one range takes: a worker
// that starts late still finds ranges left, and one that is descheduled mid-range holds the
// call up for a small range only (256 Ki elements: 0.25-1 MiB, 20-100 µs of work).
constexpr std::size_t kRangesPerThread = 4;
constexpr std::size_t kMaxRange = std::size_t{1} << 18;

void check_threads(const KernelOptions& options) {
  if (options.threads == 0) {
    throw std::invalid_argument("fp8 kernels: threads must be >= 1 (got 0)");
  }
}

int wide_index(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return fp8_internal::kWideF16;
    case DType::kBFloat16:
      return fp8_internal::kWideBF16;
    default:  // kFloat32; the others were rejected by validation
      return fp8_internal::kWideF32;
  }
}

// Runs body(begin, end) over [0, count) in contiguous ranges (see KernelOptions::threads): one
// range on the calling thread when the call is too small to split or may use one thread;
// otherwise ranges of kMinElementsPerThread to kMaxRange elements, about kRangesPerThread per
// thread, claimed by the caller and up to threads - 1 workers of the process-wide
// compute_pool(). The caller runs every range no worker has started (ThreadPool::run_parts),
// so the call never waits for a worker to wake up: it costs at most a futex wake and a
// shared_ptr over threads = 1, and a worker that arrives in time takes half the ranges.
template <class Body>
void run_split(std::size_t count, std::size_t threads, const Body& body) {
  ThreadPool* pool = threads > 1 && count >= 2 * kMinElementsPerThread ? compute_pool() : nullptr;
  if (pool == nullptr) {
    body(std::size_t{0}, count);
    return;
  }
  const std::size_t usable = std::min(threads, pool->num_threads() + 1);
  // Boundaries on multiples of 64 elements keep every range's output cache-line sized.
  const std::size_t wanted = (count / (usable * kRangesPerThread) + 63) & ~std::size_t{63};
  const std::size_t step =
      std::clamp(wanted, kMinElementsPerThread, std::max(kMinElementsPerThread, kMaxRange));
  const std::size_t parts = (count + step - 1) / step;
  pool->run_parts(parts, [&](std::size_t p) {
    const std::size_t begin = p * step;
    body(begin, std::min(count, begin + step));
  });
}

}  // namespace

std::string_view fp8_backend_name(Fp8Backend backend) {
  switch (backend) {
    case Fp8Backend::kAuto:
      return "auto";
    case Fp8Backend::kScalar:
      return "scalar";
    case Fp8Backend::kSimd:
      return "simd";
    case Fp8Backend::kCuda:
      return "cuda";
  }
  return "invalid";
}

std::optional<Fp8Backend> parse_fp8_backend(std::string_view name) {
  for (Fp8Backend b :
       {Fp8Backend::kAuto, Fp8Backend::kScalar, Fp8Backend::kSimd, Fp8Backend::kCuda}) {
    if (name == fp8_backend_name(b)) return b;
  }
  return std::nullopt;
}

// The routing point: every per-device decision is made here and nowhere else.
Fp8Backend fp8_resolve_backend(const KernelOptions& options) {
  switch (options.backend) {
    case Fp8Backend::kAuto:
      return Fp8Backend::kSimd;
    case Fp8Backend::kScalar:
    case Fp8Backend::kSimd:
      return options.backend;
    case Fp8Backend::kCuda:
      if (const std::string why = fp8_cuda_unavailable_reason(); !why.empty()) {
        throw std::runtime_error("fp8 kernels: backend cuda requested, but " + why);
      }
      return options.backend;
  }
  throw std::invalid_argument("fp8 kernels: invalid backend value " +
                              std::to_string(static_cast<int>(options.backend)));
}

std::vector<std::int64_t> fp8_simd_targets() { return fp8_internal::simd_targets(); }

std::string fp8_simd_target_name(std::int64_t target) { return hwy::TargetName(target); }

std::int64_t fp8_active_simd_target(const KernelOptions& options) {
  return fp8_internal::simd_kernels(options.simd_target).target;
}

void fp8_encode_fast(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                     std::span<std::uint8_t> dst, Fp8Format format, Fp8Overflow overflow,
                     const KernelOptions& options) {
  fp8_check_encode_args(src, src_dtype, count, dst, format, overflow);  // the reference's errors
  const std::size_t elem = element_size(src_dtype);
  check_threads(options);
  const Fp8Backend backend = fp8_resolve_backend(options);
  const fp8_internal::SimdKernels* kernels =
      backend == Fp8Backend::kSimd ? &fp8_internal::simd_kernels(options.simd_target) : nullptr;
  if (count == 0) return;

  const std::byte* in = src.data();
  std::uint8_t* out = dst.data();
  switch (backend) {
    case Fp8Backend::kCuda:
      fp8_internal::encode_host(in, src_dtype, count, out, format, overflow);
      return;
    case Fp8Backend::kScalar:
      run_split(count, options.threads, [&](std::size_t b, std::size_t e) {
        fp8_encode(std::span<const std::byte>(in + b * elem, (e - b) * elem), src_dtype, e - b,
                   std::span<std::uint8_t>(out + b, e - b), format, overflow);
      });
      return;
    default: {  // kSimd
      const fp8_internal::EncodeKernel kernel =
          kernels
              ->encode[wide_index(src_dtype)][static_cast<int>(format)][static_cast<int>(overflow)];
      run_split(count, options.threads,
                [&](std::size_t b, std::size_t e) { kernel(in + b * elem, e - b, out + b); });
      return;
    }
  }
}

void fp8_decode_fast(std::span<const std::uint8_t> src, std::size_t count, std::span<std::byte> dst,
                     DType dst_dtype, Fp8Format format, const KernelOptions& options) {
  fp8_check_decode_args(src, count, dst, dst_dtype, format);  // the reference's errors
  const std::size_t elem = element_size(dst_dtype);
  check_threads(options);
  const Fp8Backend backend = fp8_resolve_backend(options);
  const fp8_internal::SimdKernels* kernels =
      backend == Fp8Backend::kSimd ? &fp8_internal::simd_kernels(options.simd_target) : nullptr;
  if (count == 0) return;

  const std::uint8_t* in = src.data();
  std::byte* out = dst.data();
  switch (backend) {
    case Fp8Backend::kCuda:
      fp8_internal::decode_host(in, count, out, dst_dtype, format);
      return;
    case Fp8Backend::kScalar:
      run_split(count, options.threads, [&](std::size_t b, std::size_t e) {
        fp8_decode(std::span<const std::uint8_t>(in + b, e - b), e - b,
                   std::span<std::byte>(out + b * elem, (e - b) * elem), dst_dtype, format);
      });
      return;
    default: {  // kSimd
      const fp8_internal::DecodeKernel kernel =
          kernels->decode[wide_index(dst_dtype)][static_cast<int>(format)];
      run_split(count, options.threads,
                [&](std::size_t b, std::size_t e) { kernel(in + b, e - b, out + b * elem); });
      return;
    }
  }
}

void fp8_roofline_copy(std::span<std::byte> dst, std::span<const std::byte> src,
                       std::size_t elements, const KernelOptions& options,
                       std::size_t piece_bytes) {
  check_threads(options);
  if (dst.size() < src.size()) {
    throw std::invalid_argument("fp8_roofline_copy: dst holds " + std::to_string(dst.size()) +
                                " bytes, src " + std::to_string(src.size()));
  }
  if (src.empty()) return;
  if (elements == 0) {
    throw std::invalid_argument("fp8_roofline_copy: elements must be >= 1 for a non-empty copy");
  }
  const std::size_t bytes = src.size();
  // Element index -> byte offset, exact (the product can exceed 64 bits) and monotone, so the
  // scaled ranges tile [0, bytes) as the element ranges tile [0, elements).
  __extension__ using Wide = unsigned __int128;
  auto offset = [&](std::size_t element) {
    return static_cast<std::size_t>(static_cast<Wide>(element) * bytes / elements);
  };
  std::byte* out = dst.data();
  const std::byte* in = src.data();
  run_split(elements, options.threads, [&](std::size_t b, std::size_t e) {
    const std::size_t begin = offset(b);
    const std::size_t end = offset(e);
    if (piece_bytes == 0) {
      std::memcpy(out + begin, in + begin, end - begin);
      return;
    }
    for (std::size_t o = begin; o < end; o += piece_bytes) {
      std::memcpy(out + o, in + o, std::min(piece_bytes, end - o));
    }
  });
}

}  // namespace lmcache::fp8
