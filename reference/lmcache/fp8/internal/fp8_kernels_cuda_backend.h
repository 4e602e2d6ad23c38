// File: lmcache/fp8/internal/fp8_kernels_cuda_backend.h
//
// Internal: the host-to-host entry points of the CUDA backend (backend kCuda of
// fp8_encode_fast / fp8_decode_fast) and the test hook that swaps the CUDA runtime it calls.
// Defined in fp8_kernels_cuda.cc, which is built in every configuration: without CUDA the
// backend has no runtime and reports itself unavailable.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmcache/core/dtype.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::fp8_internal {

class CudaRuntime;
class CudaBackend;

// Elements per chunk of the pinned staging pipeline (16 MiB of float32). Each of its two slots
// holds a pinned input and output buffer and a device input and output buffer of
// kStagingChunkElements * 4 bytes: 64 MiB pinned + 64 MiB device in all.
inline constexpr std::size_t kStagingChunkElements = std::size_t{4} << 20;

// encode_host() / decode_host()
//
// Host to host through the GPU; the caller validated the arguments (fp8_check_*_args) and
// count > 0. Synchronous: on return `dst` is written and nothing the call queued still runs.
// Serialised by an internal mutex, because the staging buffers are shared; they are allocated
// on first use, on the then-current device, all or nothing (a failed allocation leaves nothing
// behind and the next call tries again), and kept for the process's lifetime. Throws
// std::runtime_error when no GPU is usable or a CUDA call fails; `dst` is then unspecified.
void encode_host(const std::byte* src, DType src_dtype, std::size_t count, std::uint8_t* dst,
                 Fp8Format format, Fp8Overflow overflow);
void decode_host(const std::uint8_t* src, std::size_t count, std::byte* dst, DType dst_dtype,
                 Fp8Format format);

// ScopedCudaRuntimeOverride
//
// For tests: while alive, the CUDA backend (every function of fp8_kernels_cuda.h and the
// kCuda backend of fp8_kernels.h) calls `runtime` instead of the real one, with fresh state
// (availability, sticky error, staging, whose chunks hold `staging_chunk_elements` elements:
// tests shrink them to reach many chunks with little data; >= 1, else std::invalid_argument).
// The destructor frees the staging made through it and
// restores the previous runtime. Objects made under the override (DeviceBuffer, Stream,
// LaunchTimer) must be destroyed before it. Not thread-safe against backend calls in flight
// while it is created or destroyed; nesting is allowed.
class ScopedCudaRuntimeOverride {
 public:
  explicit ScopedCudaRuntimeOverride(CudaRuntime& runtime,
                                     std::size_t staging_chunk_elements = kStagingChunkElements);
  ~ScopedCudaRuntimeOverride();
  ScopedCudaRuntimeOverride(const ScopedCudaRuntimeOverride&) = delete;
  ScopedCudaRuntimeOverride& operator=(const ScopedCudaRuntimeOverride&) = delete;

 private:
  CudaBackend* backend_ = nullptr;
  CudaBackend* previous_ = nullptr;
};

}  // namespace lmcache::fp8_internal
