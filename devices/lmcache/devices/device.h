// File: lmcache/devices/device.h
//
// Device detection and the device surface of docs/devices.md. The process's
// device is detected once (`cuda` when the CUDA runtime sees a GPU, else `cpu`) and may be
// forced with the environment variable LMCACHE_DEVICE (cpu | cuda | xpu | hpu). `xpu` and
// `hpu` are recognised names without a backend in this project, so forcing them is an error,
// like forcing `cuda` on a machine without a usable GPU, or naming an unknown device.
//
// Middle-layer code asks `device()` for the process's Device and uses only this interface; the
// per-device implementations sit below one routing point, make_device(). On a CPU-only host
// the device is a StubCpuDevice: every operation is a no-op or a constant and
// is_available() is false, so code that gates on availability takes its degraded path.
//
// CUDA is reached through a dlopen'ed runtime (cuda_runtime_shim.h): this library links no
// CUDA library in any build.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace lmcache::devices {

enum class DeviceKind : std::uint8_t { kCpu, kCuda, kXpu, kHpu };

// The environment variable that overrides detection.
inline constexpr const char* kDeviceEnvVar = "LMCACHE_DEVICE";

// device_kind_name()
//
// "cpu", "cuda", "xpu", "hpu" ("invalid" for a value outside the enum).
std::string_view device_kind_name(DeviceKind kind);

// parse_device_kind()
//
// Inverse of device_kind_name() (exact, lower case); nullopt for any other string.
std::optional<DeviceKind> parse_device_kind(std::string_view name);

// detect_device_kind()
//
// The detection rule, given the override's value (nullopt or empty: not set):
//   - not set: kCuda when the CUDA runtime sees a GPU, else kCpu;
//   - "cpu": kCpu;  "cuda": kCuda, or std::runtime_error naming the reason when no GPU is
//     usable;
//   - "xpu" / "hpu": std::runtime_error (recognised, but no backend in this build);
//   - anything else: std::invalid_argument naming the value and the accepted ones.
// Queries the CUDA runtime on each call (tests use it; callers use device_kind()).
DeviceKind detect_device_kind(std::optional<std::string_view> override_value);

// device_kind()
//
// detect_device_kind() applied to LMCACHE_DEVICE, once per process (later calls return the
// cached result; a throwing detection is retried on the next call).
DeviceKind device_kind();

// Device
//
// The small device surface the middle layer uses (a subset of torch.cuda's). Indices are
// device ordinals of the kind.
class Device {
 public:
  virtual ~Device() = default;

  virtual DeviceKind kind() const = 0;
  // "cpu", "cuda": the device type name, as torch_device_type.
  virtual std::string_view name() const = 0;
  // Whether a real accelerator backs this device.
  virtual bool is_available() const = 0;
  // Waits for all work queued on the current device.
  virtual void synchronize() = 0;
  // Makes `index` the current device; std::out_of_range when not in [0, device_count()).
  virtual void set_device(int index) = 0;
  virtual int current_device() const = 0;
  virtual int device_count() const = 0;
  // Releases cached, unused device memory back to the system (where the backend caches any).
  virtual void empty_cache() = 0;
};

// StubCpuDevice
//
// The CPU-only stand-in: no-ops and constants, is_available() == false, device_count() == 0,
// current_device() == 0, set_device() accepts any index and does nothing.
class StubCpuDevice final : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  std::string_view name() const override { return "cpu"; }
  bool is_available() const override { return false; }
  void synchronize() override {}
  void set_device(int) override {}
  int current_device() const override { return 0; }
  int device_count() const override { return 0; }
  void empty_cache() override {}
};

// make_device()
//
// The routing point from a device kind to its implementation: kCpu -> StubCpuDevice, kCuda ->
// the CUDA runtime device (std::runtime_error when no GPU is usable), kXpu / kHpu ->
// std::runtime_error (no backend here). Adding hardware means adding a case here.
std::unique_ptr<Device> make_device(DeviceKind kind);

// device()
//
// The process's Device: make_device(device_kind()), created once.
Device& device();

}  // namespace lmcache::devices
