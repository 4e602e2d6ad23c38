// File: lmcache/devices/device_test.cc
//
// Device detection (the rule, the environment override, detect-once), the stub CPU device and
// the routing point. detect_device_kind() takes the override's value as a parameter, so these
// cases do not depend on what device_kind() cached at its first call.
#include "lmcache/devices/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "lmcache/devices/internal/cuda_runtime_shim.h"

namespace lmcache::devices {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

bool gpu_present() { return devices_internal::cuda_gpu_count() > 0; }

// Sets LMCACHE_DEVICE for one scope and restores what was there before.
class ScopedDeviceEnv {
 public:
  explicit ScopedDeviceEnv(const char* value) {
    if (const char* old = std::getenv(kDeviceEnvVar)) saved_ = old;
    if (value != nullptr) {
      setenv(kDeviceEnvVar, value, 1);
    } else {
      unsetenv(kDeviceEnvVar);
    }
  }
  ~ScopedDeviceEnv() {
    if (saved_) {
      setenv(kDeviceEnvVar, saved_->c_str(), 1);
    } else {
      unsetenv(kDeviceEnvVar);
    }
  }
  ScopedDeviceEnv(const ScopedDeviceEnv&) = delete;
  ScopedDeviceEnv& operator=(const ScopedDeviceEnv&) = delete;

 private:
  std::optional<std::string> saved_;
};

std::optional<std::string_view> env_value() {
  const char* v = std::getenv(kDeviceEnvVar);
  return v != nullptr ? std::optional<std::string_view>(v) : std::nullopt;
}

TEST(DeviceKind, NamesRoundTrip) {
  for (DeviceKind k : {DeviceKind::kCpu, DeviceKind::kCuda, DeviceKind::kXpu, DeviceKind::kHpu}) {
    EXPECT_EQ(parse_device_kind(device_kind_name(k)), k);
  }
  EXPECT_EQ(device_kind_name(DeviceKind::kHpu), "hpu");
  EXPECT_EQ(parse_device_kind("CUDA"), std::nullopt);  // exact, lower case
  EXPECT_EQ(parse_device_kind(""), std::nullopt);
  EXPECT_EQ(device_kind_name(static_cast<DeviceKind>(99)), "invalid");
}

TEST(DetectDevice, AutoIsCudaExactlyWhenTheRuntimeSeesAGpu) {
  const DeviceKind want = gpu_present() ? DeviceKind::kCuda : DeviceKind::kCpu;
  EXPECT_EQ(detect_device_kind(std::nullopt), want);
  EXPECT_EQ(detect_device_kind(""), want);  // set but empty = not set
}

TEST(DetectDevice, ForcedCpu) { EXPECT_EQ(detect_device_kind("cpu"), DeviceKind::kCpu); }

TEST(DetectDevice, ForcedCudaNeedsAGpu) {
  if (gpu_present()) {
    EXPECT_EQ(detect_device_kind("cuda"), DeviceKind::kCuda);
  } else {
    EXPECT_THAT([] { detect_device_kind("cuda"); },
                ThrowsMessage<std::runtime_error>(
                    AllOf(HasSubstr("LMCACHE_DEVICE=cuda"), HasSubstr("no CUDA GPU"))));
  }
}

TEST(DetectDevice, XpuAndHpuAreRecognisedButHaveNoBackend) {
  for (const char* name : {"xpu", "hpu"}) {
    EXPECT_THAT([&] { detect_device_kind(name); },
                ThrowsMessage<std::runtime_error>(
                    AllOf(HasSubstr(name), HasSubstr("recognised"), HasSubstr("no"))));
  }
}

TEST(DetectDevice, UnknownValueIsNamedInTheError) {
  for (const char* name : {"tpu", "CUDA", "cuda0", " cpu"}) {
    EXPECT_THAT([&] { detect_device_kind(name); },
                ThrowsMessage<std::invalid_argument>(AllOf(HasSubstr("LMCACHE_DEVICE"),
                                                           HasSubstr(std::string("'") + name + "'"),
                                                           HasSubstr("cpu, cuda, xpu or hpu"))));
  }
}

TEST(DetectDevice, EnvironmentOverride) {
  {
    ScopedDeviceEnv env("cpu");
    EXPECT_EQ(detect_device_kind(env_value()), DeviceKind::kCpu);
  }
  {
    ScopedDeviceEnv env("gpu");
    EXPECT_THAT([] { detect_device_kind(env_value()); },
                ThrowsMessage<std::invalid_argument>(HasSubstr("'gpu'")));
  }
  {
    ScopedDeviceEnv env("hpu");
    EXPECT_THROW(detect_device_kind(env_value()), std::runtime_error);
  }
  {
    ScopedDeviceEnv env(nullptr);
    EXPECT_EQ(env_value(), std::nullopt);
    EXPECT_EQ(detect_device_kind(env_value()),
              gpu_present() ? DeviceKind::kCuda : DeviceKind::kCpu);
  }
}

TEST(DetectDevice, DetectedOncePerProcess) {
  // Whatever the environment held at the first call, later changes do not move the answer.
  DeviceKind first;
  try {
    first = device_kind();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "LMCACHE_DEVICE in this environment is invalid: " << e.what();
  }
  ScopedDeviceEnv env(first == DeviceKind::kCpu ? "bogus" : "cpu");
  EXPECT_EQ(device_kind(), first);
  EXPECT_EQ(device().kind(), first);
  EXPECT_EQ(&device(), &device());
}

TEST(StubCpuDevice, EverythingIsANoOp) {
  StubCpuDevice dev;
  EXPECT_EQ(dev.kind(), DeviceKind::kCpu);
  EXPECT_EQ(dev.name(), "cpu");
  EXPECT_FALSE(dev.is_available());
  EXPECT_EQ(dev.device_count(), 0);
  EXPECT_EQ(dev.current_device(), 0);
  EXPECT_NO_THROW(dev.synchronize());
  EXPECT_NO_THROW(dev.set_device(3));
  EXPECT_EQ(dev.current_device(), 0);  // set_device changed nothing
  EXPECT_NO_THROW(dev.empty_cache());
}

TEST(MakeDevice, RoutesEachKind) {
  const auto cpu = make_device(DeviceKind::kCpu);
  ASSERT_NE(cpu, nullptr);
  EXPECT_NE(dynamic_cast<StubCpuDevice*>(cpu.get()), nullptr);
  EXPECT_FALSE(cpu->is_available());

  for (DeviceKind k : {DeviceKind::kXpu, DeviceKind::kHpu}) {
    EXPECT_THAT([&] { make_device(k); },
                ThrowsMessage<std::runtime_error>(HasSubstr(std::string(device_kind_name(k)))));
  }
  EXPECT_THROW(make_device(static_cast<DeviceKind>(42)), std::invalid_argument);

  if (gpu_present()) {
    const auto gpu = make_device(DeviceKind::kCuda);
    EXPECT_EQ(gpu->name(), "cuda");
    EXPECT_TRUE(gpu->is_available());
    EXPECT_GE(gpu->device_count(), 1);
    EXPECT_NO_THROW(gpu->set_device(0));
    EXPECT_EQ(gpu->current_device(), 0);
    EXPECT_NO_THROW(gpu->synchronize());
    EXPECT_NO_THROW(gpu->empty_cache());
    EXPECT_THROW(gpu->set_device(gpu->device_count()), std::out_of_range);
  } else {
    EXPECT_THROW(make_device(DeviceKind::kCuda), std::runtime_error);
  }
}

TEST(CudaShim, ReportsWhyThereIsNoGpu) {
  std::string why;
  const int count = devices_internal::cuda_gpu_count(&why);
  if (count == 0) {
    EXPECT_FALSE(why.empty());
  } else {
    EXPECT_NE(devices_internal::cuda_runtime_api(), nullptr);
  }
}

}  // namespace
}  // namespace lmcache::devices
