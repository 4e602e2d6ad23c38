#include "lmcache/l2/adapter_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache {
namespace {

using ::testing::HasSubstr;

using core_internal::invalid_argument_message;

// Registers `name` unless it already is (the registry is process-global, and
// --gtest_repeat runs each test again in the same process).
void ensure_registered(const std::string& name, L2AdapterFactory factory) {
  auto names = registered_l2_adapter_types();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    register_l2_adapter_type(name, std::move(factory));
  }
}

Json mock_config() {
  return Json{{"type", "mock"}, {"max_size_gb", 0.001}, {"mock_bandwidth_gb", 10}};
}

TEST(AdapterRegistry, MockIsRegisteredByDefault) {
  auto names = registered_l2_adapter_types();
  EXPECT_NE(std::find(names.begin(), names.end(), "mock"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(AdapterRegistry, CreatesMockFromJson) {
  L2AdapterPtr adapter = create_registered_l2_adapter(mock_config());
  ASSERT_NE(adapter, nullptr);
  auto* mock = dynamic_cast<MockL2Adapter*>(adapter.get());
  ASSERT_NE(mock, nullptr);
  EXPECT_EQ(mock->options().max_capacity_bytes,
            static_cast<std::uint64_t>(0.001 * 1024 * 1024 * 1024));
  EXPECT_EQ(mock->options().bandwidth_bytes_per_sec, 10ull * 1024 * 1024 * 1024);
  EXPECT_EQ(adapter->report_status()["type"], "MockL2Adapter");
  adapter->close();
}

TEST(AdapterRegistry, FactoryReceivesConfigWithoutType) {
  // Static: the factory outlives this test inside the global registry.
  static Json seen;
  static int calls = 0;
  calls = 0;
  ensure_registered("test_capture", [](const Json& cfg, const AdapterContext&) {
    seen = cfg;
    ++calls;
    return L2AdapterPtr(std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(1, 1)));
  });
  auto adapter = create_registered_l2_adapter(Json{{"type", "test_capture"}, {"foo", "bar"}});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, (Json{{"foo", "bar"}}));
  auto names = registered_l2_adapter_types();
  EXPECT_NE(std::find(names.begin(), names.end(), "test_capture"), names.end());
}

TEST(AdapterRegistry, DuplicateNameRejectedNamingIt) {
  auto factory = [](const Json&, const AdapterContext&) -> L2AdapterPtr { return nullptr; };
  std::string msg = invalid_argument_message([&] { register_l2_adapter_type("mock", factory); });
  EXPECT_THAT(msg, HasSubstr("already registered"));
  EXPECT_THAT(msg, HasSubstr("'mock'"));

  ensure_registered("test_dup", factory);
  msg = invalid_argument_message([&] { register_l2_adapter_type("test_dup", factory); });
  EXPECT_THAT(msg, HasSubstr("'test_dup'"));
}

TEST(AdapterRegistry, EmptyNameOrFactoryRejected) {
  EXPECT_THROW(register_l2_adapter_type(
                   "", [](const Json&, const AdapterContext&) -> L2AdapterPtr { return nullptr; }),
               std::invalid_argument);
  EXPECT_THROW(register_l2_adapter_type("test_empty_factory", L2AdapterFactory{}),
               std::invalid_argument);
}

TEST(AdapterRegistry, MissingTypeRejected) {
  std::string msg = invalid_argument_message([] {
    create_registered_l2_adapter(Json{{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}});
  });
  EXPECT_THAT(msg, HasSubstr("missing 'type'"));
}

TEST(AdapterRegistry, NonStringTypeRejected) {
  std::string msg = invalid_argument_message([] {
    create_registered_l2_adapter(Json{{"type", 3}});
  });
  EXPECT_THAT(msg, HasSubstr("'type' must be a string"));
}

TEST(AdapterRegistry, NonObjectConfigRejected) {
  std::string msg = invalid_argument_message([] {
    create_registered_l2_adapter(Json::array({1, 2}));
  });
  EXPECT_THAT(msg, HasSubstr("JSON object"));
  EXPECT_THROW(create_registered_l2_adapter(Json("mock")), std::invalid_argument);
}

TEST(AdapterRegistry, UnknownTypeListsRegisteredNames) {
  std::string msg = invalid_argument_message([] {
    create_registered_l2_adapter(Json{{"type", "nope"}});
  });
  EXPECT_THAT(msg, HasSubstr("Unknown L2 adapter type 'nope'"));
  EXPECT_THAT(msg, HasSubstr("mock"));
}

TEST(AdapterRegistry, SerdeKeyPointsToTheWrapperLibrary) {
  Json cfg = mock_config();
  cfg["serde"] = Json{{"type", "fp8"}};
  std::string msg = invalid_argument_message([&] { create_registered_l2_adapter(cfg); });
  EXPECT_THAT(msg, HasSubstr("'serde'"));
  EXPECT_THAT(msg, HasSubstr("create_l2_adapter"));
}

TEST(AdapterRegistry, FactoryErrorsPropagate) {
  Json cfg = mock_config();
  cfg["max_size_gb"] = -1;
  std::string msg = invalid_argument_message([&] { create_registered_l2_adapter(cfg); });
  EXPECT_THAT(msg, HasSubstr("max_size_gb must be a positive number"));

  cfg = mock_config();
  cfg["mock_bandwith_gb"] = 1;  // typo
  msg = invalid_argument_message([&] { create_registered_l2_adapter(cfg); });
  EXPECT_THAT(msg, HasSubstr("unknown key 'mock_bandwith_gb'"));
}

TEST(AdapterRegistry, NullFromFactoryIsALogicError) {
  ensure_registered("test_null",
                    [](const Json&, const AdapterContext&) -> L2AdapterPtr { return nullptr; });
  EXPECT_THROW(create_registered_l2_adapter(Json{{"type", "test_null"}}), std::logic_error);
}

TEST(AdapterRegistry, FactoryMayCreateItsInnerAdapterThroughTheRegistry) {
  // As a fault injector would: no deadlock, because factories run without the registry lock.
  ensure_registered("test_nested", [](const Json& cfg, const AdapterContext& ctx) {
    return create_registered_l2_adapter(cfg.at("inner"), ctx);
  });
  auto adapter = create_registered_l2_adapter(
      Json{{"type", "test_nested"},
           {"inner", {{"type", "mock"}, {"max_size_gb", 1}, {"mock_bandwidth_gb", 1}}}});
  ASSERT_NE(dynamic_cast<MockL2Adapter*>(adapter.get()), nullptr);
}

TEST(AdapterRegistryConcurrency, ConcurrentRegisterAndCreate) {
  constexpr int kThreads = 4;
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ensure_registered(
          "test_concurrent_" + std::to_string(t),
          [](const Json&, const AdapterContext&) -> L2AdapterPtr {
            return std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(0.001, 1));
          });
      for (int i = 0; i < 5; ++i) {
        auto a = create_registered_l2_adapter(mock_config());
        auto b =
            create_registered_l2_adapter(Json{{"type", "test_concurrent_" + std::to_string(t)}});
        if (a && b) created.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(created.load(), kThreads * 5);
  auto names = registered_l2_adapter_types();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_NE(std::find(names.begin(), names.end(), "test_concurrent_" + std::to_string(t)),
              names.end());
  }
}

}  // namespace
}  // namespace lmcache
