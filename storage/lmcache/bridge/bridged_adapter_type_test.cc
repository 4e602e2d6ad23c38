// The shared part of every bridged adapter type: the config's common checks, construction over a
// connector, and registration once per type name.
#include "lmcache/bridge/bridged_adapter_type.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/memory_connector.h"

namespace lmcache::bridge {
namespace {

using core_internal::expect_invalid;
using storage_testing::MemoryConnector;
using storage_testing::MemoryStore;

TEST(BridgedAdapterType, ConfigKnowsItsOwnTheBridgesAndTheReadPoolsKeys) {
  const Json config = {
      {"type", "memtest"}, {"colour", "blue"}, {"task_deadline_ms", 50}, {"read_io_depth", 2}};
  ConfigReader reader = open_bridged_adapter_config(config, "memtest", {"colour"});
  EXPECT_EQ(reader.get_string("colour"), "blue");
  EXPECT_EQ(reader.context(), "memtest adapter config");
  // Without "type" too: the registry strips it.
  EXPECT_NO_THROW(open_bridged_adapter_config(Json{{"colour", "red"}}, "memtest", {"colour"}));
}

TEST(BridgedAdapterType, ConfigRefusesUnknownKeysFirstAndAnotherType) {
  expect_invalid(
      [] {
        open_bridged_adapter_config(Json{{"colur", 1}, {"type", "x"}}, "memtest", {"colour"});
      },
      {"memtest adapter config", "colur"});
  expect_invalid(
      [] {
        open_bridged_adapter_config(Json{{"type", "fs"}}, "memtest", {});
      },
      {"'type' must be \"memtest\"", "\"fs\""});
  expect_invalid(
      [] {
        open_bridged_adapter_config(Json{{"type", 7}}, "memtest", {});
      },
      {"'type' must be \"memtest\"", "7"});
}

TEST(BridgedAdapterType, MakesTheBridgeOverTheConnector) {
  auto store = std::make_shared<MemoryStore>();
  BridgedAdapterConfig<std::shared_ptr<MemoryStore>> config{store, {}};
  config.bridge.key_namespace = "ns";
  std::unique_ptr<NativeConnectorL2Adapter> adapter =
      make_bridged_adapter<MemoryConnector>(std::move(config));
  EXPECT_EQ(adapter->options().key_namespace, "ns");
  EXPECT_TRUE(adapter->report_status().at("is_healthy").get<bool>());
}

std::unique_ptr<NativeConnectorL2Adapter> make_memtest(const Json&) {
  return make_bridged_adapter<MemoryConnector>(
      BridgedAdapterConfig<std::shared_ptr<MemoryStore>>{std::make_shared<MemoryStore>(), {}});
}

TEST(BridgedAdapterType, RegistersOncePerNameFromAnyThread) {
  const std::string name = "bridged_adapter_type_test";
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { register_bridged_adapter_type(name, &make_memtest); });
  }
  for (auto& t : threads) t.join();
  register_bridged_adapter_type(name, &make_memtest);  // again: a no-op, not an error
  const auto names = registered_l2_adapter_types();
  EXPECT_EQ(std::count(names.begin(), names.end(), name), 1);
  L2AdapterPtr adapter = create_registered_l2_adapter(Json{{"type", name}});
  ASSERT_NE(adapter, nullptr);
  EXPECT_NE(dynamic_cast<NativeConnectorL2Adapter*>(adapter.get()), nullptr);
}

}  // namespace
}  // namespace lmcache::bridge
