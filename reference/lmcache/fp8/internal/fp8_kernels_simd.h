// File: lmcache/fp8/internal/fp8_kernels_simd.h
//
// Internal: the table of Highway kernels one SIMD target provides, and how to get the table of
// a given target. fp8_kernels.cc (validation, threads, routing) is its only user outside tests
// and benchmarks; do not call the kernels directly, they check nothing.
//
// A kernel converts exactly `n` elements from `src` to `dst`; both may be unaligned. Per-target
// code lives in fp8_kernels-inl.h, compiled once per target by fp8_kernels_simd.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lmcache/fp8/internal/fp8_wide_kind.h"

namespace lmcache::fp8_internal {

using EncodeKernel = void (*)(const std::byte* src, std::size_t n, std::uint8_t* dst);
using DecodeKernel = void (*)(const std::uint8_t* src, std::size_t n, std::byte* dst);

// Decode kernels write outputs of at least this many bytes with non-temporal stores (they
// bypass the caches; see Decode() in fp8_kernels-inl.h). Per kernel call, i.e. per thread range.
inline constexpr std::size_t kStreamMinBytes = std::size_t{8} << 20;

struct SimdKernels {
  std::int64_t target;  // the Highway target bit these kernels were compiled for
  // encode[WideKind][format (Fp8Format value)][overflow (Fp8Overflow value)]
  EncodeKernel encode[kNumWide][2][2];
  // decode[WideKind][format]
  DecodeKernel decode[kNumWide][2];
};

// simd_targets()
//
// The Highway targets compiled into this library that the running CPU supports, best first
// (for example AVX2, SSE4, SSSE3, SCALAR). Honours hwy::SetSupportedTargetsForTest().
std::vector<std::int64_t> simd_targets();

// simd_kernels()
//
// The kernels of `target` (one target bit), or of the best supported target when `target` is 0
// (Highway's dynamic dispatch, so a test's hwy::SetSupportedTargetsForTest() mock applies).
// Throws std::invalid_argument naming the target when it is not one of simd_targets().
const SimdKernels& simd_kernels(std::int64_t target);

}  // namespace lmcache::fp8_internal
