// File: lmcache/fp8/internal/cuda_runtime_real.cc
//
// The real CudaRuntime (built only with CUDA): each call forwards to the CUDA runtime function
// of the same name, and the kernels to fp8_kernels_cuda.cu's launchers.
#include <cuda_runtime.h>

#include <string>

#include "lmcache/fp8/internal/cuda_runtime.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_launch.h"

#ifndef LMCACHE_CUDA_ARCHITECTURES
#error "LMCACHE_CUDA_ARCHITECTURES (the CUDA_ARCHITECTURES of the kernels) must be defined"
#endif

namespace lmcache::fp8_internal {
namespace {

static_assert(kCudaSuccess == cudaSuccess);
static_assert(kCudaErrorInvalidValue == cudaErrorInvalidValue);
static_assert(kCudaErrorMemoryAllocation == cudaErrorMemoryAllocation);
static_assert(kCudaErrorInsufficientDriver == cudaErrorInsufficientDriver);
static_assert(kCudaErrorInvalidDeviceFunction == cudaErrorInvalidDeviceFunction);
static_assert(kCudaErrorNoDevice == cudaErrorNoDevice);
static_assert(kCudaErrorNoKernelImageForDevice == cudaErrorNoKernelImageForDevice);
static_assert(kCudaErrorNotReady == cudaErrorNotReady);
static_assert(kCudaErrorIllegalAddress == cudaErrorIllegalAddress);
static_assert(kCudaErrorLaunchOutOfResources == cudaErrorLaunchOutOfResources);
static_assert(kCudaErrorMisalignedAddress == cudaErrorMisalignedAddress);
static_assert(kCudaErrorLaunchFailure == cudaErrorLaunchFailure);
// The codes is_sticky_cuda_error() lists.
static_assert(cudaErrorECCUncorrectable == 214 && cudaErrorContained == 226 &&
              cudaErrorIllegalAddress == 700 && cudaErrorLaunchTimeout == 702 &&
              cudaErrorAssert == 710 && cudaErrorHardwareStackError == 714 &&
              cudaErrorIllegalInstruction == 715 && cudaErrorMisalignedAddress == 716 &&
              cudaErrorInvalidAddressSpace == 717 && cudaErrorInvalidPc == 718 &&
              cudaErrorLaunchFailure == 719 && cudaErrorTensorMemoryLeak == 721 &&
              cudaErrorExternalDevice == 911);
static_assert(static_cast<int>(CopyKind::kHostToDevice) == cudaMemcpyHostToDevice);
static_assert(static_cast<int>(CopyKind::kDeviceToHost) == cudaMemcpyDeviceToHost);
static_assert(static_cast<int>(CopyKind::kDeviceToDevice) == cudaMemcpyDeviceToDevice);

int code(cudaError_t e) { return static_cast<int>(e); }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
cudaMemcpyKind as_kind(CopyKind k) { return static_cast<cudaMemcpyKind>(k); }

class RealCudaRuntime final : public CudaRuntime {
 public:
  std::string error_text(int error) override {
    const auto e = static_cast<cudaError_t>(error);
    return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + " = " +
           std::to_string(error) + ")";
  }
  int get_last_error() override { return code(cudaGetLastError()); }

  int get_device_count(int* count) override { return code(cudaGetDeviceCount(count)); }
  int get_device(int* device) override { return code(cudaGetDevice(device)); }
  int set_device(int device) override { return code(cudaSetDevice(device)); }
  int compute_capability(int device, int* major, int* minor) override {
    const cudaError_t e = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
    if (e != cudaSuccess) return code(e);
    return code(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device));
  }
  int mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) override {
    return code(cudaMemGetInfo(free_bytes, total_bytes));
  }
  int device_synchronize() override { return code(cudaDeviceSynchronize()); }

  int malloc_device(void** ptr, std::size_t bytes) override { return code(cudaMalloc(ptr, bytes)); }
  int free_device(void* ptr) override { return code(cudaFree(ptr)); }
  int malloc_pinned(void** ptr, std::size_t bytes) override {
    return code(cudaHostAlloc(ptr, bytes, cudaHostAllocDefault));
  }
  int free_pinned(void* ptr) override { return code(cudaFreeHost(ptr)); }
  int memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) override {
    return code(cudaMemcpy(dst, src, bytes, as_kind(kind)));
  }
  int memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                   void* stream) override {
    return code(cudaMemcpyAsync(dst, src, bytes, as_kind(kind), as_stream(stream)));
  }

  int stream_create(void** stream) override {
    cudaStream_t s = nullptr;
    const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return code(e);
  }
  int stream_destroy(void* stream) override { return code(cudaStreamDestroy(as_stream(stream))); }
  int stream_synchronize(void* stream) override {
    return code(cudaStreamSynchronize(as_stream(stream)));
  }
  int event_create(void** event) override {
    cudaEvent_t e = nullptr;
    const cudaError_t err = cudaEventCreate(&e);
    *event = e;
    return code(err);
  }
  int event_destroy(void* event) override { return code(cudaEventDestroy(as_event(event))); }
  int event_record(void* event, void* stream) override {
    return code(cudaEventRecord(as_event(event), as_stream(stream)));
  }
  int event_synchronize(void* event) override {
    return code(cudaEventSynchronize(as_event(event)));
  }
  int event_elapsed_ms(float* ms, void* start, void* stop) override {
    return code(cudaEventElapsedTime(ms, as_event(start), as_event(stop)));
  }

  int kernel_image_status() override { return fp8_internal::kernel_image_status(); }
  int launch_encode(const void* d_src, WideKind src_kind, std::size_t count, std::uint8_t* d_dst,
                    Fp8Format format, Fp8Overflow overflow, bool vectorized,
                    void* stream) override {
    return fp8_internal::launch_encode(d_src, src_kind, count, d_dst, format, overflow, vectorized,
                                       stream);
  }
  int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst, WideKind dst_kind,
                    Fp8Format format, bool vectorized, void* stream) override {
    return fp8_internal::launch_decode(d_src, count, d_dst, dst_kind, format, vectorized, stream);
  }

  std::string kernel_architectures() override { return LMCACHE_CUDA_ARCHITECTURES; }
};

}  // namespace

CudaRuntime* real_cuda_runtime() {
  static RealCudaRuntime* runtime = new RealCudaRuntime;  // never destroyed, like the runtime
  return runtime;
}

}  // namespace lmcache::fp8_internal
