// File: lmcache/devices/internal/fp8_kernels_cuda_launch.h
//
// Internal: the kernel launchers compiled by nvcc (fp8_kernels_cuda.cu), called by the host
// code in fp8_kernels_cuda.cc. They check nothing: callers validate dtypes, enums and
// alignment first. Each returns the cudaError_t of the launch (as int; 0 = success).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::devices::fp8_cuda_internal {

// Source / destination element kinds, as in fp8_kernels_simd.h.
enum WideKind : int { kWideF32 = 0, kWideF16 = 1, kWideBF16 = 2 };

// `vectorized`: the caller checked that the wide pointer is aligned to 4 elements and the code
// pointer to 4 bytes, so each thread can move 4 elements with one load and one store.
int launch_encode(const void* d_src, WideKind src_kind, std::size_t count, std::uint8_t* d_dst,
                  Fp8Format format, Fp8Overflow overflow, bool vectorized, void* stream);
int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst, WideKind dst_kind,
                  Fp8Format format, bool vectorized, void* stream);

}  // namespace lmcache::devices::fp8_cuda_internal
