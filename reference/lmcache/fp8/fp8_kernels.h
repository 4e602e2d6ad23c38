// File: lmcache/fp8/fp8_kernels.h
//
// Fast fp8 encode/decode of host buffers: the same contract and the same bytes as the scalar
// reference codec (lmcache/fp8/fp8_codec.h), faster. Three CPU-visible backends sit behind
// one routing point (KernelOptions::backend):
//   - scalar: the reference codec itself (the oracle);
//   - simd:   Highway kernels compiled for every x86 target (SSSE3, SSE4, AVX2, AVX-512) and
//             chosen at run time for the CPU (dynamic dispatch), scalar fallback included;
//   - cuda:   host -> pinned staging -> GPU -> host, when the CUDA kernels are built and a GPU
//             is present (see fp8_kernels_cuda.h for device-pointer entry points).
// `auto` picks simd: for pageable host memory the PCIe round trip of the cuda path costs more
// than a CPU pass.
//
// Every backend is byte-identical to the reference on every input, NaN bit patterns included
// (docs/fp8.md §4), and the result does not depend on `threads`.
//
// Example (what the fp8 serde does per group):
//   lmcache::fp8::fp8_encode_fast(src.group_bytes(g), dtype, n, out, format, overflow,
//                                 {.threads = 2});
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/core/dtype.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::fp8 {

enum class Fp8Backend : std::uint8_t { kAuto, kScalar, kSimd, kCuda };

// fp8_backend_name()
//
// "auto", "scalar", "simd", "cuda" ("invalid" for a value outside the enum).
std::string_view fp8_backend_name(Fp8Backend backend);

// parse_fp8_backend()
//
// Inverse of fp8_backend_name(); nullopt for any other string.
std::optional<Fp8Backend> parse_fp8_backend(std::string_view name);

struct KernelOptions {
  // Upper bound on the threads one call uses, >= 1; 1 = the caller's thread only. A call of
  // at least 2 * kMinElementsPerThread elements with threads > 1 is split into contiguous
  // ranges of at least kMinElementsPerThread elements (about four per thread, at most 2^18
  // elements each), which the
  // caller's thread and up to threads - 1 workers of the process-wide lmcache::compute_pool()
  // (one worker per usable CPU, less one; lmcache/core/thread_pool.h) claim one at a time;
  // every range no worker has started runs on the caller's thread, and the call returns when
  // all have run. No thread is started per call, and the call never waits for a worker to
  // wake up, so threads = 2 costs little more than threads = 1 where a second CPU does not
  // help. Ignored by the cuda backend.
  std::size_t threads = 1;
  Fp8Backend backend = Fp8Backend::kAuto;
  // simd backend only: one Highway target bit (HWY_AVX2, HWY_SSE4, ...; see fp8_simd_targets())
  // to force instead of the best one the CPU supports (0). For tests and benchmarks.
  std::int64_t simd_target = 0;
};

// Ranges smaller than this are not split further across threads (handing a range to a worker
// would cost more than the work).
inline constexpr std::size_t kMinElementsPerThread = std::size_t{1} << 16;

// fp8_encode_fast()
//
// Encodes `count` elements of `src_dtype` (float32, float16 or bfloat16) from `src` into
// `dst[0..count)`, exactly as lmcache::fp8_encode() does; bytes of `dst` past `count` are left
// alone. Buffers may be unaligned and must not overlap. Throws std::invalid_argument, with the
// reference codec's message and before anything is written, for an invalid format, overflow
// or dtype and for short buffers; also for threads == 0, an invalid backend or an unusable
// simd_target. Throws std::runtime_error when the cuda backend is requested but not built or
// no GPU is usable. Cost: one pass over the data; memory-bound on one core for large buffers.
void fp8_encode_fast(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                     std::span<std::uint8_t> dst, Fp8Format format, Fp8Overflow overflow,
                     const KernelOptions& options = {});

// fp8_decode_fast()
//
// Decodes `count` codes from `src` into `dst` as `dst_dtype` (float32, float16 or bfloat16),
// exactly as lmcache::fp8_decode() does. Same buffer rules, errors and cost as
// fp8_encode_fast().
void fp8_decode_fast(std::span<const std::uint8_t> src, std::size_t count, std::span<std::byte> dst,
                     DType dst_dtype, Fp8Format format, const KernelOptions& options = {});

// fp8_roofline_copy()
//
// The memory roofline of a kernel call: copies src into dst[0, src.size()) (non-overlapping)
// split across threads exactly as fp8_encode_fast() / fp8_decode_fast() split a call over
// `elements` elements with `options.threads` (same ranges, each scaled to bytes: a range of k
// elements copies about k * src.size() / elements bytes; the same compute_pool() workers). Each
// range is copied with memcpy in pieces of at most `piece_bytes` bytes (0: one memcpy per range). A
// benchmark that divides a kernel's throughput by this copy's, on the same buffers, sees the
// conversion's cost alone: whatever thread model the kernels use, the copy uses it too.
// options.backend and simd_target are ignored. Throws std::invalid_argument for threads == 0, dst
// shorter than src, or elements == 0 with a non-empty src.
void fp8_roofline_copy(std::span<std::byte> dst, std::span<const std::byte> src,
                       std::size_t elements, const KernelOptions& options,
                       std::size_t piece_bytes = 0);

// fp8_resolve_backend()
//
// The backend a call with `options` runs on (kAuto resolved). Throws std::invalid_argument for
// a value outside the enum, std::runtime_error for kCuda when it is not built or no GPU is
// usable.
Fp8Backend fp8_resolve_backend(const KernelOptions& options);

// fp8_simd_targets()
//
// The Highway targets compiled into the simd backend that this CPU supports, best first, as
// target bits usable in KernelOptions::simd_target.
std::vector<std::int64_t> fp8_simd_targets();

// fp8_simd_target_name()
//
// Highway's name of a target bit: "AVX3", "AVX2", "SSE4", "SSSE3", "SCALAR", "EMU128", ...
std::string fp8_simd_target_name(std::int64_t target);

// fp8_active_simd_target()
//
// The target bit a simd call with `options` would run on now: options.simd_target when set
// (validated), otherwise the best supported target (honours hwy::SetSupportedTargetsForTest).
std::int64_t fp8_active_simd_target(const KernelOptions& options = {});

}  // namespace lmcache::fp8
