#include "lmcache/bridge/native_connector_options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace lmcache::bridge {
namespace {

using namespace std::chrono_literals;

TEST(NativeConnectorAdapterOptions, ReadsAndChecksItsKeys) {
  Json config = {{"task_deadline_ms", 250}, {"key_namespace", "run-1"}, {"max_capacity_gb", 0.5}};
  ConfigReader reader(config, "test config");
  NativeConnectorAdapterOptions o = NativeConnectorAdapterOptions::from_config(reader, "x");
  EXPECT_EQ(o.task_deadline, 250ms);
  EXPECT_EQ(o.key_namespace, "run-1");
  EXPECT_EQ(o.max_capacity_bytes, std::uint64_t{1} << 29);
  EXPECT_EQ(o.type_name, "x");
  for (const Json& bad : {Json{{"task_deadline_ms", 0}}, Json{{"task_deadline_ms", "1"}},
                          Json{{"key_namespace", "a.b"}}, Json{{"max_capacity_gb", -1}},
                          Json{{"max_capacity_gb", true}}, Json{{"max_capacity_gb", 1e30}}}) {
    ConfigReader r(bad, "test config");
    try {
      NativeConnectorAdapterOptions::from_config(r, "x");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad.begin().key()), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace lmcache::bridge
