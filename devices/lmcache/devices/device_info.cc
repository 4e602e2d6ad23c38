// File: lmcache/devices/device_info.cc
#include "lmcache/devices/device_info.h"

#include <unistd.h>

#include <exception>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hwy/targets.h"
#include "lmcache/devices/device.h"
#include "lmcache/devices/internal/cuda_runtime_shim.h"

namespace lmcache::devices {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string("unknown") : line.substr(start);
  }
  return "unknown";
}

std::uint64_t memory_total_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

// Target bits in a mask, best (lowest bit) first, as names. This translation unit is compiled
// with the same Highway target policy as the fp8 kernels, so HWY_TARGETS is their list.
std::vector<std::string> target_names(std::int64_t mask) {
  std::vector<std::string> names;
  for (std::int64_t m = mask; m != 0; m &= m - 1) names.emplace_back(hwy::TargetName(m & -m));
  return names;
}

CpuInfo gather_cpu() {
  CpuInfo cpu;
  cpu.model = cpu_model();
  cpu.logical_cores = std::thread::hardware_concurrency();
  cpu.simd_targets = target_names(hwy::SupportedTargets() & HWY_TARGETS);
  cpu.simd_targets_compiled = target_names(HWY_TARGETS);
  cpu.simd_best = cpu.simd_targets.empty() ? std::string("unknown") : cpu.simd_targets.front();
  cpu.memory_total_bytes = memory_total_bytes();
  return cpu;
}

CudaInfo gather_cuda() {
  CudaInfo cuda;
  const int count = devices_internal::cuda_gpu_count(&cuda.reason);
  const devices_internal::CudaRuntimeApi* api = devices_internal::cuda_runtime_api();
  if (api != nullptr) {
    cuda.library = api->library;
    api->driver_get_version(&cuda.driver_version);
    api->runtime_get_version(&cuda.runtime_version);
  }
  if (count == 0) return cuda;
  cuda.available = true;
  cuda.reason.clear();

  int previous = 0;
  const bool restore = api->get_device(&previous) == devices_internal::kCudaSuccess;
  for (int i = 0; i < count; ++i) {
    GpuInfo gpu;
    gpu.index = i;
    api->device_get_attribute(&gpu.sm_count, devices_internal::kAttrMultiProcessorCount, i);
    api->device_get_attribute(&gpu.compute_capability_major,
                              devices_internal::kAttrComputeCapabilityMajor, i);
    api->device_get_attribute(&gpu.compute_capability_minor,
                              devices_internal::kAttrComputeCapabilityMinor, i);
    // cudaDeviceProp begins with char name[256] in every CUDA version; the buffer is larger
    // than any version's struct.
    std::vector<char> prop(16384);
    if (api->get_device_properties(prop.data(), i) == devices_internal::kCudaSuccess) {
      prop[255] = '\0';
      gpu.name = prop.data();
    } else {
      gpu.name = "unknown";
    }
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (api->set_device(i) == devices_internal::kCudaSuccess &&
        api->mem_get_info(&free_bytes, &total_bytes) == devices_internal::kCudaSuccess) {
      gpu.memory_total_bytes = total_bytes;
    }
    cuda.gpus.push_back(std::move(gpu));
  }
  if (restore) api->set_device(previous);
  return cuda;
}

}  // namespace

DeviceInfo device_info() {
  DeviceInfo info;
  try {
    info.device = std::string(device_kind_name(device_kind()));
  } catch (const std::exception& e) {
    info.device = "unknown";
    info.device_error = e.what();
  }
  info.cpu = gather_cpu();
  info.cuda = gather_cuda();
  return info;
}

nlohmann::json to_json(const DeviceInfo& info) {
  nlohmann::json j;
  j["device"] = info.device;
  if (!info.device_error.empty()) j["device_error"] = info.device_error;
  j["cpu"] = {{"model", info.cpu.model},
              {"logical_cores", info.cpu.logical_cores},
              {"simd_targets", info.cpu.simd_targets},
              {"simd_targets_compiled", info.cpu.simd_targets_compiled},
              {"simd_best", info.cpu.simd_best},
              {"memory_total_bytes", info.cpu.memory_total_bytes}};
  nlohmann::json cuda = {{"available", info.cuda.available},
                         {"library", info.cuda.library},
                         {"driver_version", info.cuda.driver_version},
                         {"runtime_version", info.cuda.runtime_version},
                         {"devices", nlohmann::json::array()}};
  if (!info.cuda.available) cuda["reason"] = info.cuda.reason;
  for (const GpuInfo& gpu : info.cuda.gpus) {
    cuda["devices"].push_back(
        {{"index", gpu.index},
         {"name", gpu.name},
         {"sm_count", gpu.sm_count},
         {"memory_total_bytes", gpu.memory_total_bytes},
         {"compute_capability", std::to_string(gpu.compute_capability_major) + "." +
                                    std::to_string(gpu.compute_capability_minor)}});
  }
  j["cuda"] = std::move(cuda);
  return j;
}

nlohmann::json device_info_json() { return to_json(device_info()); }

}  // namespace lmcache::devices
