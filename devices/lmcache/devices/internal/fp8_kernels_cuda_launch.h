// File: lmcache/devices/internal/fp8_kernels_cuda_launch.h
//
// Internal: the kernel launchers compiled by nvcc (fp8_kernels_cuda.cu), called by the host
// code in fp8_kernels_cuda.cc. They check nothing: callers validate dtypes, enums and
// alignment first. Each returns the cudaError_t of the launch (as int; 0 = success).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmcache/core/dtype.h"
#include "lmcache/devices/internal/fp8_wide_kind.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::devices_internal {

// `vectorized`: the caller checked that the wide pointer is aligned to 4 elements and the code
// pointer to 4 bytes, so each thread can move 4 elements with one load and one store.
int launch_encode(const void* d_src, WideKind src_kind, std::size_t count, std::uint8_t* d_dst,
                  Fp8Format format, Fp8Overflow overflow, bool vectorized, void* stream);
int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst, WideKind dst_kind,
                  Fp8Format format, bool vectorized, void* stream);

// encode_host() / decode_host()
//
// Host-to-host through the GPU (backend kCuda of fp8_encode_fast / fp8_decode_fast, which
// validate the arguments first). Synchronous; serialised by an internal mutex because the
// pinned staging buffers are shared and kept for the process's lifetime. Defined in
// fp8_kernels_cuda.cc (or its CPU-only stub, which throws).
void encode_host(const std::byte* src, DType src_dtype, std::size_t count, std::uint8_t* dst,
                 Fp8Format format, Fp8Overflow overflow);
void decode_host(const std::uint8_t* src, std::size_t count, std::byte* dst, DType dst_dtype,
                 Fp8Format format);

}  // namespace lmcache::devices_internal
