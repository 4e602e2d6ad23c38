// File: lmcache/devices/device.cc
#include "lmcache/devices/device.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "lmcache/devices/internal/cuda_runtime_shim.h"

namespace lmcache::devices {
namespace {

constexpr DeviceKind kAllKinds[] = {DeviceKind::kCpu, DeviceKind::kCuda, DeviceKind::kXpu,
                                    DeviceKind::kHpu};

// The CUDA runtime device, through the dlopen'ed runtime.
class CudaDevice final : public Device {
 public:
  CudaDevice(const devices_internal::CudaRuntimeApi& api, int count) : api_(api), count_(count) {}

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  std::string_view name() const override { return "cuda"; }
  bool is_available() const override { return true; }
  void synchronize() override { check(api_.device_synchronize(), "cudaDeviceSynchronize"); }
  void set_device(int index) override {
    if (index < 0 || index >= count_) {
      throw std::out_of_range("cuda set_device: index " + std::to_string(index) +
                              " out of range [0, " + std::to_string(count_) + ")");
    }
    check(api_.set_device(index), "cudaSetDevice");
  }
  int current_device() const override {
    int index = 0;
    check(api_.get_device(&index), "cudaGetDevice");
    return index;
  }
  int device_count() const override { return count_; }
  // The runtime API has no caching allocator; the closest equivalent is trimming the current
  // device's default memory pool (cudaMallocAsync), when the runtime has one.
  void empty_cache() override {
    if (api_.device_get_default_mem_pool == nullptr || api_.mem_pool_trim_to == nullptr) return;
    void* pool = nullptr;
    if (api_.device_get_default_mem_pool(&pool, current_device()) !=
        devices_internal::kCudaSuccess) {
      return;  // no pool support on this device: nothing cached
    }
    check(api_.mem_pool_trim_to(pool, 0), "cudaMemPoolTrimTo");
  }

 private:
  void check(int err, const char* call) const {
    if (err != devices_internal::kCudaSuccess) {
      throw std::runtime_error(std::string(call) + " failed: " + api_.error_string(err));
    }
  }

  const devices_internal::CudaRuntimeApi& api_;
  int count_;
};

[[noreturn]] void throw_no_backend(DeviceKind kind) {
  throw std::runtime_error("device '" + std::string(device_kind_name(kind)) +
                           "' is recognised but has no backend in this build");
}

}  // namespace

std::string_view device_kind_name(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kCuda:
      return "cuda";
    case DeviceKind::kXpu:
      return "xpu";
    case DeviceKind::kHpu:
      return "hpu";
  }
  return "invalid";
}

std::optional<DeviceKind> parse_device_kind(std::string_view name) {
  for (DeviceKind k : kAllKinds) {
    if (name == device_kind_name(k)) return k;
  }
  return std::nullopt;
}

DeviceKind detect_device_kind(std::optional<std::string_view> override_value) {
  if (!override_value.has_value() || override_value->empty()) {
    return devices_internal::cuda_gpu_count() > 0 ? DeviceKind::kCuda : DeviceKind::kCpu;
  }
  const std::optional<DeviceKind> kind = parse_device_kind(*override_value);
  if (!kind.has_value()) {
    throw std::invalid_argument(std::string(kDeviceEnvVar) + ": unknown device '" +
                                std::string(*override_value) +
                                "' (expected cpu, cuda, xpu or hpu)");
  }
  switch (*kind) {
    case DeviceKind::kCpu:
      return DeviceKind::kCpu;
    case DeviceKind::kCuda: {
      std::string why;
      if (devices_internal::cuda_gpu_count(&why) == 0) {
        throw std::runtime_error(std::string(kDeviceEnvVar) +
                                 "=cuda, but no CUDA GPU is usable: " + why);
      }
      return DeviceKind::kCuda;
    }
    default:
      throw std::runtime_error(std::string(kDeviceEnvVar) + "=" + std::string(*override_value) +
                               ": recognised device, but this build has no " +
                               std::string(*override_value) + " backend");
  }
}

DeviceKind device_kind() {
  static const DeviceKind kind = [] {
    const char* value = std::getenv(kDeviceEnvVar);
    return detect_device_kind(value != nullptr ? std::optional<std::string_view>(value)
                                               : std::nullopt);
  }();
  return kind;
}

std::unique_ptr<Device> make_device(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return std::make_unique<StubCpuDevice>();
    case DeviceKind::kCuda: {
      std::string why;
      const int count = devices_internal::cuda_gpu_count(&why);
      if (count == 0) throw std::runtime_error("cuda device unavailable: " + why);
      return std::make_unique<CudaDevice>(*devices_internal::cuda_runtime_api(), count);
    }
    case DeviceKind::kXpu:
    case DeviceKind::kHpu:
      throw_no_backend(kind);
  }
  throw std::invalid_argument("make_device: invalid device kind value " +
                              std::to_string(static_cast<int>(kind)));
}

Device& device() {
  static const std::unique_ptr<Device> instance = make_device(device_kind());
  return *instance;
}

}  // namespace lmcache::devices
