// File: lmcache/devices/device_info_test.cc
//
// device_info() / device_info_json(): the documented keys, with plausible values for this
// machine.
#include "lmcache/devices/device_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hwy/targets.h"

namespace lmcache::devices {
namespace {

using ::testing::Contains;

TEST(DeviceInfo, JsonHasTheDocumentedKeys) {
  const nlohmann::json j = device_info_json();
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"device", "cpu", "cuda"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.contains("device_error"), j["device"] == "unknown");

  const auto& cpu = j["cpu"];
  for (const char* key : {"model", "logical_cores", "simd_targets", "simd_targets_compiled",
                          "simd_best", "memory_total_bytes"}) {
    EXPECT_TRUE(cpu.contains(key)) << "cpu." << key;
  }
  EXPECT_TRUE(cpu["model"].is_string());
  EXPECT_GE(cpu["logical_cores"].get<unsigned>(), 1u);
  EXPECT_GT(cpu["memory_total_bytes"].get<std::uint64_t>(), 0u);
  ASSERT_TRUE(cpu["simd_targets"].is_array());
  ASSERT_FALSE(cpu["simd_targets"].empty());
  EXPECT_EQ(cpu["simd_best"], cpu["simd_targets"][0]);
  for (const auto& t : cpu["simd_targets"]) {
    EXPECT_THAT(cpu["simd_targets_compiled"], Contains(t));
  }

  const auto& cuda = j["cuda"];
  for (const char* key : {"available", "library", "driver_version", "runtime_version", "devices"}) {
    EXPECT_TRUE(cuda.contains(key)) << "cuda." << key;
  }
  ASSERT_TRUE(cuda["devices"].is_array());
  if (cuda["available"].get<bool>()) {
    ASSERT_FALSE(cuda["devices"].empty());
    for (const auto& gpu : cuda["devices"]) {
      for (const char* key :
           {"index", "name", "sm_count", "memory_total_bytes", "compute_capability"}) {
        EXPECT_TRUE(gpu.contains(key)) << "cuda.devices[]." << key;
      }
      EXPECT_GT(gpu["sm_count"].get<int>(), 0);
    }
  } else {
    EXPECT_TRUE(cuda["devices"].empty());
    EXPECT_FALSE(cuda["reason"].get<std::string>().empty());
  }
}

TEST(DeviceInfo, SimdTargetsAreHighwaysForThisCpu) {
  const DeviceInfo info = device_info();
  std::vector<std::string> want;
  for (std::int64_t t : hwy::SupportedAndGeneratedTargets()) want.emplace_back(hwy::TargetName(t));
  EXPECT_EQ(info.cpu.simd_targets, want);
  EXPECT_NE(info.cpu.model, "");
}

TEST(DeviceInfo, ToJsonReportsADetectionError) {
  DeviceInfo info;
  info.device = "unknown";
  info.device_error = "LMCACHE_DEVICE: unknown device 'tpu'";
  info.cuda.reason = "no GPU";
  info.cuda.gpus.push_back({0, "NVIDIA H200", 132, 150ull << 30, 9, 0});
  const nlohmann::json j = to_json(info);
  EXPECT_EQ(j["device_error"], info.device_error);
  EXPECT_EQ(j["cuda"]["devices"][0]["compute_capability"], "9.0");
  EXPECT_EQ(j["cuda"]["devices"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(j["cuda"]["devices"][0]["sm_count"], 132);
}

}  // namespace
}  // namespace lmcache::devices
