// File: lmcache/devices/device_info.h
//
// A description of the machine for benchmark and hardware reports: the CPU (model, logical
// cores, the SIMD targets the fp8 kernels were compiled for and which of them this CPU runs,
// memory) and, when the CUDA runtime sees GPUs, each GPU (name, SM count, memory, compute
// capability) with the driver and runtime versions. Gathering never throws: what cannot be
// read is reported as unknown (and, for CUDA, why).
//
// device_info_json() keys:
//   "device"       the detected device kind ("cpu", "cuda"), or "unknown" with
//   "device_error" the detection error (a bad LMCACHE_DEVICE)
//   "cpu": {"model", "logical_cores", "simd_targets" (supported and compiled, best first),
//           "simd_targets_compiled", "simd_best", "memory_total_bytes"}
//   "cuda": {"available", "reason" (when not available), "library", "driver_version",
//            "runtime_version" (CUDA's integer form, 12040 = 12.4; 0 when unknown),
//            "devices": [{"index", "name", "sm_count", "memory_total_bytes",
//                          "compute_capability" ("9.0")}]}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmcache::devices {

struct CpuInfo {
  std::string model;  // "model name" of /proc/cpuinfo, "unknown" when absent
  unsigned logical_cores = 0;
  std::vector<std::string> simd_targets;           // compiled in and supported, best first
  std::vector<std::string> simd_targets_compiled;  // compiled in, best first
  std::string simd_best;                           // simd_targets.front()
  std::uint64_t memory_total_bytes = 0;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  std::uint64_t memory_total_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct CudaInfo {
  bool available = false;
  std::string reason;   // why not available
  std::string library;  // the libcudart loaded, if any
  int driver_version = 0;
  int runtime_version = 0;
  std::vector<GpuInfo> gpus;
};

struct DeviceInfo {
  std::string device;        // device_kind_name(device_kind()), or "unknown"
  std::string device_error;  // why detection failed (empty when it did not)
  CpuInfo cpu;
  CudaInfo cuda;
};

// device_info()
//
// Gathers the description (reads /proc/cpuinfo; queries the CUDA runtime, which may take a
// moment on the first call as it creates a context per GPU).
DeviceInfo device_info();

// to_json()
//
// The keys listed in the file comment.
nlohmann::json to_json(const DeviceInfo& info);

// device_info_json()
//
// to_json(device_info()).
nlohmann::json device_info_json();

}  // namespace lmcache::devices
