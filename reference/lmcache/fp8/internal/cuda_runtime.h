// File: lmcache/fp8/internal/cuda_runtime.h
//
// Internal: the CUDA runtime as the fp8 backend's host code (fp8_kernels_cuda.cc) sees it —
// the calls it makes, behind an interface, so that tests put a fake in its place
// (testing/fake_cuda_runtime.h) and drive out-of-memory, failed launches, partial allocation
// and sticky errors on a machine without a GPU. The real implementation
// (cuda_runtime_real.cc, compiled only with CUDA) forwards each call to the CUDA runtime of the
// same name; a build without CUDA has none.
//
// Conventions are the CUDA runtime's, so the host code can be written once against both:
//   - every call returns a cudaError_t value as int (0 = success);
//   - a failed call also records its error as the calling thread's "last error", which
//     get_last_error() returns and clears; a sticky error (is_sticky_cuda_error()) corrupts the
//     context: every later call fails with it and it is never cleared;
//   - work on a stream runs asynchronously, in order, and may run only when something waits
//     for it; streams made here are non-blocking (cudaStreamNonBlocking: they do not wait for
//     the legacy default stream, and the legacy stream's synchronous copies do not wait for
//     them); stream nullptr is the legacy default stream.
// Streams and events are opaque handles (cudaStream_t / cudaEvent_t).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_launch.h"

namespace lmcache::fp8_internal {

// cudaError_t values the host code and the fake refer to (checked against the CUDA headers in
// cuda_runtime_real.cc).
inline constexpr int kCudaSuccess = 0;
inline constexpr int kCudaErrorInvalidValue = 1;
inline constexpr int kCudaErrorMemoryAllocation = 2;
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorInvalidDeviceFunction = 98;
inline constexpr int kCudaErrorNoDevice = 100;
inline constexpr int kCudaErrorNoKernelImageForDevice = 209;
inline constexpr int kCudaErrorNotReady = 600;
inline constexpr int kCudaErrorIllegalAddress = 700;
inline constexpr int kCudaErrorLaunchOutOfResources = 701;
inline constexpr int kCudaErrorMisalignedAddress = 716;
inline constexpr int kCudaErrorLaunchFailure = 719;

// is_sticky_cuda_error()
//
// Whether `error` is one the CUDA headers document as leaving the process in an inconsistent
// state ("any further CUDA work will return the same error; to continue using CUDA, the
// process must be terminated and relaunched"): device-side faults (illegal address or
// instruction, misaligned address, device assert, launch failure or timeout, hardware stack
// error, ...), uncorrectable ECC errors and contained or external-device errors.
inline bool is_sticky_cuda_error(int error) {
  switch (error) {
    case 214:  // cudaErrorECCUncorrectable
    case 226:  // cudaErrorContained
    case 700:  // cudaErrorIllegalAddress
    case 702:  // cudaErrorLaunchTimeout
    case 710:  // cudaErrorAssert
    case 714:  // cudaErrorHardwareStackError
    case 715:  // cudaErrorIllegalInstruction
    case 716:  // cudaErrorMisalignedAddress
    case 717:  // cudaErrorInvalidAddressSpace
    case 718:  // cudaErrorInvalidPc
    case 719:  // cudaErrorLaunchFailure
    case 721:  // cudaErrorTensorMemoryLeak
    case 911:  // cudaErrorExternalDevice
      return true;
    default:
      return false;
  }
}

// Direction of a copy, with cudaMemcpyKind's values.
enum class CopyKind : int { kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3 };

class CudaRuntime {
 public:
  virtual ~CudaRuntime() = default;

  // "out of memory (cudaErrorMemoryAllocation = 2)": the runtime's text and name of `error`.
  virtual std::string error_text(int error) = 0;
  // cudaGetLastError: the thread's last error, cleared unless it is sticky.
  virtual int get_last_error() = 0;

  // Devices.
  virtual int get_device_count(int* count) = 0;
  virtual int get_device(int* device) = 0;
  virtual int set_device(int device) = 0;
  // Compute capability major.minor of `device` (cudaDeviceGetAttribute).
  virtual int compute_capability(int device, int* major, int* minor) = 0;
  virtual int mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) = 0;
  virtual int device_synchronize() = 0;

  // Memory: device (cudaMalloc) and page-locked host memory (cudaHostAlloc).
  virtual int malloc_device(void** ptr, std::size_t bytes) = 0;
  virtual int free_device(void* ptr) = 0;
  virtual int malloc_pinned(void** ptr, std::size_t bytes) = 0;
  virtual int free_pinned(void* ptr) = 0;
  // cudaMemcpy: synchronous with respect to the host and the legacy default stream only.
  virtual int memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) = 0;
  virtual int memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                           void* stream) = 0;

  // Streams (non-blocking) and events (with timing).
  virtual int stream_create(void** stream) = 0;
  virtual int stream_destroy(void* stream) = 0;
  virtual int stream_synchronize(void* stream) = 0;
  virtual int event_create(void** event) = 0;
  virtual int event_destroy(void* event) = 0;
  virtual int event_record(void* event, void* stream) = 0;
  virtual int event_synchronize(void* event) = 0;
  virtual int event_elapsed_ms(float* ms, void* start, void* stop) = 0;

  // The fp8 kernels (fp8_kernels_cuda_launch.h): each returns its launch's own error.
  virtual int kernel_image_status() = 0;
  virtual int launch_encode(const void* d_src, WideKind src_kind, std::size_t count,
                            std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                            bool vectorized, void* stream) = 0;
  virtual int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                            WideKind dst_kind, Fp8Format format, bool vectorized, void* stream) = 0;

  // The GPU architectures the kernels were compiled for ("80-real;...;120"), for messages.
  virtual std::string kernel_architectures() = 0;
};

// real_cuda_runtime()
//
// The process's CUDA runtime (never destroyed), or nullptr in a build without CUDA.
CudaRuntime* real_cuda_runtime();

}  // namespace lmcache::fp8_internal
