// File: lmcache/devices/internal/cuda_runtime_shim.h
//
// Internal: the handful of CUDA runtime functions device detection and the CUDA Device need,
// loaded with dlopen("libcudart.so...") at first use. Detection therefore works the same in
// every build: a CPU-only build (no nvcc) links no CUDA library, and a machine without the
// runtime or without a GPU simply reports "cpu". Only stable C entry points are used
// (attributes by number, no struct layouts beyond the leading `name` of cudaDeviceProp).
#pragma once

#include <cstddef>
#include <string>

namespace lmcache::devices_internal {

// cudaError_t values the shim interprets.
inline constexpr int kCudaSuccess = 0;

// cudaDeviceAttr values (stable since CUDA 5).
inline constexpr int kAttrMultiProcessorCount = 16;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;

struct CudaRuntimeApi {
  std::string library;  // the name dlopen() accepted
  int (*get_device_count)(int* count) = nullptr;
  int (*set_device)(int device) = nullptr;
  int (*get_device)(int* device) = nullptr;
  int (*device_synchronize)() = nullptr;
  int (*device_get_attribute)(int* value, int attr, int device) = nullptr;
  int (*mem_get_info)(std::size_t* free_bytes, std::size_t* total_bytes) = nullptr;
  int (*driver_get_version)(int* version) = nullptr;
  int (*runtime_get_version)(int* version) = nullptr;
  // cudaGetDeviceProperties_v2 (CUDA >= 12) or cudaGetDeviceProperties; only the leading
  // char name[256] of the struct is read.
  int (*get_device_properties)(void* prop, int device) = nullptr;
  const char* (*get_error_string)(int error) = nullptr;
  // Optional (CUDA >= 11.2): nullptr when absent.
  int (*device_get_default_mem_pool)(void** pool, int device) = nullptr;
  int (*mem_pool_trim_to)(void* pool, std::size_t min_bytes_to_keep) = nullptr;

  // error_string()
  //
  // "cudaErrorX (code N)"-style text for an error code.
  std::string error_string(int error) const;
};

// cuda_runtime_api()
//
// The loaded runtime, or nullptr when no libcudart could be loaded or a required symbol is
// missing; `why_not` (optional) then receives the reason. Loaded once per process and never
// unloaded. Thread-safe.
const CudaRuntimeApi* cuda_runtime_api(std::string* why_not = nullptr);

// cuda_gpu_count()
//
// The number of GPUs the CUDA runtime sees (0 without runtime, driver or GPU); `why_not`
// receives the reason when it is 0. Thread-safe; queries the runtime on every call.
int cuda_gpu_count(std::string* why_not = nullptr);

}  // namespace lmcache::devices_internal
