// File: lmcache/devices/internal/cuda_runtime_shim.cc
#include "lmcache/devices/internal/cuda_runtime_shim.h"

#include <dlfcn.h>

#include <string>

namespace lmcache::devices_internal {
namespace {

// Tried in order: the development symlink, then the sonames of recent toolkits.
constexpr const char* kLibraryNames[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                         "libcudart.so.11.0", "libcudart.so.11"};

template <class Fn>
bool bind(void* handle, const char* symbol, Fn*& out) {
  out = reinterpret_cast<Fn*>(dlsym(handle, symbol));
  return out != nullptr;
}

struct Loaded {
  CudaRuntimeApi api;
  bool ok = false;
  std::string why_not;
};

Loaded load() {
  Loaded l;
  void* handle = nullptr;
  for (const char* name : kLibraryNames) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      l.api.library = name;
      break;
    }
  }
  if (handle == nullptr) {
    l.why_not = "the CUDA runtime library (libcudart.so) could not be loaded";
    return l;
  }
  CudaRuntimeApi& a = l.api;
  const char* missing = nullptr;
  if (!bind(handle, "cudaGetDeviceCount", a.get_device_count)) missing = "cudaGetDeviceCount";
  if (!bind(handle, "cudaSetDevice", a.set_device)) missing = "cudaSetDevice";
  if (!bind(handle, "cudaGetDevice", a.get_device)) missing = "cudaGetDevice";
  if (!bind(handle, "cudaDeviceSynchronize", a.device_synchronize)) {
    missing = "cudaDeviceSynchronize";
  }
  if (!bind(handle, "cudaDeviceGetAttribute", a.device_get_attribute)) {
    missing = "cudaDeviceGetAttribute";
  }
  if (!bind(handle, "cudaMemGetInfo", a.mem_get_info)) missing = "cudaMemGetInfo";
  if (!bind(handle, "cudaDriverGetVersion", a.driver_get_version)) {
    missing = "cudaDriverGetVersion";
  }
  if (!bind(handle, "cudaRuntimeGetVersion", a.runtime_get_version)) {
    missing = "cudaRuntimeGetVersion";
  }
  if (!bind(handle, "cudaGetDeviceProperties_v2", a.get_device_properties) &&
      !bind(handle, "cudaGetDeviceProperties", a.get_device_properties)) {
    missing = "cudaGetDeviceProperties";
  }
  if (!bind(handle, "cudaGetErrorString", a.get_error_string)) missing = "cudaGetErrorString";
  bind(handle, "cudaDeviceGetDefaultMemPool", a.device_get_default_mem_pool);
  bind(handle, "cudaMemPoolTrimTo", a.mem_pool_trim_to);
  if (missing != nullptr) {
    l.why_not = l.api.library + " lacks " + missing;
    return l;  // the handle stays open: harmless, and the library may be in use elsewhere
  }
  l.ok = true;
  return l;
}

}  // namespace

std::string CudaRuntimeApi::error_string(int error) const {
  const char* text = get_error_string != nullptr ? get_error_string(error) : nullptr;
  return std::string(text != nullptr ? text : "unknown CUDA error") + " (cudaError " +
         std::to_string(error) + ")";
}

const CudaRuntimeApi* cuda_runtime_api(std::string* why_not) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why_not != nullptr) *why_not = loaded.why_not;
    return nullptr;
  }
  return &loaded.api;
}

int cuda_gpu_count(std::string* why_not) {
  const CudaRuntimeApi* api = cuda_runtime_api(why_not);
  if (api == nullptr) return 0;
  int count = 0;
  const int err = api->get_device_count(&count);
  if (err != kCudaSuccess) {
    // Typically cudaErrorNoDevice or cudaErrorInsufficientDriver (no driver installed).
    if (why_not != nullptr) *why_not = "cudaGetDeviceCount failed: " + api->error_string(err);
    return 0;
  }
  if (count <= 0) {
    if (why_not != nullptr) *why_not = "the CUDA runtime sees no GPU";
    return 0;
  }
  return count;
}

}  // namespace lmcache::devices_internal
