// File: lmcache/fp8/fp8_kernels_cuda.h
//
// The CUDA fp8 backend: device-pointer encode/decode kernels (byte-identical with the scalar
// reference, sharing fp8_bits.h with the CPU kernels), and the small memory, stream and timing
// surface that tests and benchmarks need without including the CUDA headers. Built when the
// project is configured with CUDA (LMCACHE_ENABLE_CUDA, on by default when nvcc is found);
// otherwise fp8_cuda_available() is false and everything that needs a GPU throws
// std::runtime_error saying so.
//
// Host buffers go through fp8_encode_fast() / fp8_decode_fast() with backend kCuda, which
// stage them in pinned memory and pipeline async copies and kernels on two streams.
//
// `stream` parameters are a cudaStream_t passed as void* (nullptr = the legacy default stream).
//
// Errors. A failed CUDA call is thrown as std::runtime_error naming the call and the CUDA
// error, and its error is cleared from the thread's CUDA error state, so it never resurfaces
// as the failure of a later call; a kernel launch is judged by its own launch error alone.
// After a sticky error (a device-side fault such as an illegal address: the CUDA context is
// then unusable until the process restarts) every later call throws, naming that first error,
// and fp8_cuda_available() turns false. Errors of kernels that fault on the GPU surface at the
// next call that waits for them (synchronize(), a copy, the host pipeline), as in CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "lmcache/core/dtype.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::fp8 {

// fp8_cuda_built()
//
// Whether this build contains the CUDA kernels.
bool fp8_cuda_built();

// fp8_cuda_available()
//
// Whether the CUDA kernels are built, the CUDA runtime sees a GPU, and the kernels have an
// image that loads on the current GPU (checked once with cudaFuncGetAttributes: a GPU whose
// architecture this build's fat binary does not cover is not available, instead of failing
// every launch with "no kernel image"). False after a sticky CUDA error. Cheap after the first
// call (cached).
bool fp8_cuda_available();

// fp8_cuda_unavailable_reason()
//
// Empty when fp8_cuda_available(); otherwise why not, in words: not built, no runtime or
// driver or GPU, no kernel image for the GPU's compute capability (with the architectures this
// build covers), or the sticky error that made the CUDA context unusable.
std::string fp8_cuda_unavailable_reason();

// fp8_encode_cuda_device()
//
// Enqueues the encode of `count` elements of `src_dtype` at device pointer `d_src` into the
// device bytes `d_dst[0..count)` on `stream`, and returns without waiting. Both pointers must
// be device memory (a host pointer faults on the GPU: a sticky error); `d_src` must be aligned
// to its element size; the two ranges must not overlap (the kernels read and write through
// __restrict__ pointers). Throws std::invalid_argument, before anything is enqueued, with the
// reference codec's message for an invalid format, overflow or dtype or an element count whose
// byte size overflows, and for a null pointer (count > 0), a misaligned source or overlapping
// ranges; std::runtime_error when no GPU is usable or the launch fails (nothing enqueued).
void fp8_encode_cuda_device(const void* d_src, DType src_dtype, std::size_t count,
                            std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                            void* stream = nullptr);

// fp8_decode_cuda_device()
//
// Enqueues the decode of `count` codes at `d_src` into `d_dst` as `dst_dtype`; as above, with
// the destination aligned to its element size.
void fp8_decode_cuda_device(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                            DType dst_dtype, Fp8Format format, void* stream = nullptr);

namespace cuda {

// DeviceBuffer
//
// Move-only owner of `size` bytes of device memory (cudaMalloc) on the current device.
// Throws std::runtime_error when no GPU is usable or the allocation fails (out of memory,
// naming the size); nothing is held then.
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

// Stream
//
// Owner of one non-blocking CUDA stream (cudaStreamNonBlocking: it neither waits for nor is
// waited for by the legacy default stream). The destructor does not wait: queued work still
// completes.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void* get() const { return stream_; }

 private:
  void* stream_ = nullptr;
};

// memory_info()
//
// Free and total bytes of the current GPU (cudaMemGetInfo).
struct MemoryInfo {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
};
MemoryInfo memory_info();

// copy_to_device() / copy_to_host()
//
// Wait for all work queued on the device, on every stream (non-blocking ones included, which
// a plain cudaMemcpy would not wait for), then copy `bytes` and return when the copy is done.
// Host sides may be pageable.
void copy_to_device(void* d_dst, const void* h_src, std::size_t bytes);
void copy_to_host(void* h_dst, const void* d_src, std::size_t bytes);

// copy_device_to_device()
//
// Enqueues a copy of `bytes` on `stream` and returns without waiting.
void copy_device_to_device(void* d_dst, const void* d_src, std::size_t bytes,
                           void* stream = nullptr);

// synchronize()
//
// Waits for all work on `stream` (nullptr: the whole device) and throws the first error of
// that work.
void synchronize(void* stream = nullptr);

// LaunchTimer
//
// GPU time of a batch of launches, for benchmarks: owns one non-blocking stream and two CUDA
// events, made once and reused by every measurement, so neither their creation nor a single
// launch's latency lands inside the figure.
class LaunchTimer {
 public:
  LaunchTimer();
  ~LaunchTimer();
  LaunchTimer(const LaunchTimer&) = delete;
  LaunchTimer& operator=(const LaunchTimer&) = delete;

  // The stream every launch must be queued on.
  void* stream() const { return stream_.get(); }

  // ms_per_launch()
  //
  // Records the start event, calls `launch(stream())` `launches` times (each call queues one
  // unit of work, e.g. one kernel), records the stop event, waits for it, and returns the GPU
  // time between the two events divided by `launches`. Throws std::invalid_argument for
  // launches < 1, std::runtime_error for a CUDA error.
  double ms_per_launch(int launches, const std::function<void(void* stream)>& launch);

  // launches_for()
  //
  // How many launches of `launch` make a batch of at least `window_ms` of GPU time (from one
  // timed launch, which also warms up), between 1 and 65536.
  int launches_for(double window_ms, const std::function<void(void* stream)>& launch);

 private:
  Stream stream_;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

}  // namespace cuda
}  // namespace lmcache::fp8
