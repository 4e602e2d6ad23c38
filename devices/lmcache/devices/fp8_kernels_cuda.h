// File: lmcache/devices/fp8_kernels_cuda.h
//
// The CUDA fp8 backend: device-pointer encode/decode kernels (byte-identical with the scalar
// reference, sharing fp8_bits.h with the CPU kernels), and the small memory and timing surface
// that tests and benchmarks need without including the CUDA headers. Built when the project is
// configured with CUDA (LMCACHE_ENABLE_CUDA, on by default when nvcc is found); otherwise every
// function below except the two queries throws std::runtime_error saying so.
//
// Host buffers go through fp8_encode_fast() / fp8_decode_fast() with backend kCuda, which
// stage them in pinned memory (cudaHostAlloc) and pipeline async copies and kernels on two
// streams.
//
// `stream` parameters are a cudaStream_t passed as void* (nullptr = the legacy default stream).
// CUDA errors are thrown as std::runtime_error naming the call and the CUDA error string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "lmcache/core/dtype.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::devices {

// fp8_cuda_built()
//
// Whether this build contains the CUDA kernels.
bool fp8_cuda_built();

// fp8_cuda_available()
//
// Whether the CUDA kernels are built and the CUDA runtime sees at least one GPU. Cheap after
// the first call (cached).
bool fp8_cuda_available();

// fp8_encode_cuda_device()
//
// Enqueues the encode of `count` elements of `src_dtype` at device pointer `d_src` into the
// device bytes `d_dst[0..count)` on `stream`, and returns without waiting. Both pointers must
// be device memory aligned to their element size. Throws std::invalid_argument (nothing
// enqueued) for an invalid format, overflow, dtype or alignment.
void fp8_encode_cuda_device(const void* d_src, DType src_dtype, std::size_t count,
                            std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                            void* stream = nullptr);

// fp8_decode_cuda_device()
//
// Enqueues the decode of `count` codes at `d_src` into `d_dst` as `dst_dtype`; as above.
void fp8_decode_cuda_device(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                            DType dst_dtype, Fp8Format format, void* stream = nullptr);

namespace cuda {

// DeviceBuffer
//
// Move-only owner of `size` bytes of device memory (cudaMalloc) on the current device.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// copy_to_device() / copy_to_host() / copy_device_to_device()
//
// Synchronous copies of `bytes` (host sides may be pageable); device_to_device is enqueued on
// `stream` and returns without waiting.
void copy_to_device(void* d_dst, const void* h_src, std::size_t bytes);
void copy_to_host(void* h_dst, const void* d_src, std::size_t bytes);
void copy_device_to_device(void* d_dst, const void* d_src, std::size_t bytes,
                           void* stream = nullptr);

// synchronize()
//
// Waits for all work on `stream` (nullptr: the whole device).
void synchronize(void* stream = nullptr);

// time_ms()
//
// Runs `work(stream)` between two CUDA events recorded on a private stream, waits, and returns
// the elapsed GPU time in milliseconds (for benchmarks with manual timing).
double time_ms(const std::function<void(void* stream)>& work);

}  // namespace cuda

}  // namespace lmcache::devices
