// The "resp" L2 adapter type: its config, its registration, composition with the fp8 serde
// wrapper, and the bridge checks over a real redis-server.
#include "lmcache/resp/resp_adapter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/adapter_waits.h"
#include "lmcache/testing/bridge_checks.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/stored_objects.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::resp {
namespace {

using namespace std::chrono_literals;
using storage_testing::RedisServer;
using storage_testing::wait_load;
using storage_testing::wait_store;

TEST(RespAdapterConfig, ReadsLmcacheKeysAndDefaults) {
  RespAdapterConfig c = RespAdapterConfig::parse(
      {{"type", "resp"}, {"host", "redis.local"}, {"port", 6380}, {"password", "pw"}});
  EXPECT_EQ(c.connector.endpoint.host, "redis.local");
  EXPECT_EQ(c.connector.endpoint.port, 6380);
  EXPECT_EQ(c.connector.num_workers, 8u);
  EXPECT_EQ(c.connector.endpoint.username, "");
  EXPECT_EQ(c.connector.endpoint.password, "pw");
  EXPECT_EQ(c.connector.endpoint.io_timeout, 5000ms);
  EXPECT_EQ(c.bridge.type_name, "resp");
  EXPECT_EQ(c.bridge.max_capacity_bytes, 0u);
  EXPECT_EQ(c.bridge.breaker.threshold, 3u);
  EXPECT_EQ(c.bridge.breaker.cooldown, 5000ms);
  EXPECT_EQ(c.bridge.breaker.max_cooldown, 300000ms);
  EXPECT_EQ(c.connector.reads.io_depth, 0u);
  EXPECT_EQ(c.connector.reads.budget(), std::uint64_t{1536} << 20);
  c = RespAdapterConfig::parse({{"host", "h"},
                                {"port", 1},
                                {"num_workers", 2},
                                {"username", "u"},
                                {"max_capacity_gb", 2},
                                {"task_deadline_ms", 100},
                                {"key_namespace", "ns"},
                                {"connect_timeout_ms", 10},
                                {"io_timeout_ms", 20},
                                {"breaker_threshold", 5},
                                {"breaker_cooldown_ms", 30},
                                {"breaker_max_cooldown_ms", 40},
                                {"read_io_depth", 40},
                                {"read_max_bytes_in_flight", 1 << 30}});
  EXPECT_EQ(c.connector.reads.io_depth, 40u);
  EXPECT_EQ(c.connector.reads.budget(), std::uint64_t{1} << 30);
  EXPECT_EQ(c.bridge.breaker.threshold, 5u);
  EXPECT_EQ(c.bridge.breaker.cooldown, 30ms);
  EXPECT_EQ(c.bridge.breaker.max_cooldown, 40ms);
  EXPECT_EQ(c.connector.num_workers, 2u);
  EXPECT_EQ(c.bridge.max_capacity_bytes, 2ull << 30);
  EXPECT_EQ(c.bridge.task_deadline, 100ms);
  EXPECT_EQ(c.bridge.key_namespace, "ns");
  EXPECT_EQ(c.connector.endpoint.connect_timeout, 10ms);
  EXPECT_EQ(c.connector.endpoint.io_timeout, 20ms);
}

TEST(RespAdapterConfig, ErrorsNameTheKey) {
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>({{"hots", "h"}, {"port", 1}})
                .find("unknown key 'hots'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>({{"port", 1}}).find("'host'"),
            std::string::npos);
  EXPECT_NE(
      core_internal::parse_error<RespAdapterConfig>({{"host", ""}, {"port", 1}}).find("'host'"),
      std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>({{"host", "h"}}).find("'port'"),
            std::string::npos);
  EXPECT_NE(
      core_internal::parse_error<RespAdapterConfig>({{"host", "h"}, {"port", 0}}).find("'port'"),
      std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>({{"host", "h"}, {"port", 65536}})
                .find("'port'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>(
                {{"host", "h"}, {"port", 1}, {"num_workers", 0}})
                .find("'num_workers'"),
            std::string::npos);
  EXPECT_NE(
      core_internal::parse_error<RespAdapterConfig>({{"host", "h"}, {"port", 1}, {"password", 5}})
          .find("'password'"),
      std::string::npos);
  EXPECT_NE(
      core_internal::parse_error<RespAdapterConfig>({{"type", "fs"}, {"host", "h"}, {"port", 1}})
          .find("'type'"),
      std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>(
                {{"host", "h"}, {"port", 1}, {"max_capacity_gb", -1}})
                .find("max_capacity_gb"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<RespAdapterConfig>(Json::array()).find("JSON object"),
            std::string::npos);
  const Json base = {{"host", "h"}, {"port", 1}};
  auto with = [&](const char* key, Json v) {
    Json c = base;
    c[key] = std::move(v);
    return core_internal::parse_error<RespAdapterConfig>(c);
  };
  EXPECT_NE(with("breaker_threshold", -1).find("'breaker_threshold'"), std::string::npos);
  EXPECT_NE(with("read_io_depth", 1025).find("'read_io_depth'"), std::string::npos);
  EXPECT_NE(with("read_max_bytes_in_flight", -1).find("'read_max_bytes_in_flight'"),
            std::string::npos);
  EXPECT_NE(with("breaker_cooldown_ms", 0).find("'breaker_cooldown_ms'"), std::string::npos);
  EXPECT_NE(with("breaker_max_cooldown_ms", 10).find("'breaker_max_cooldown_ms'"),
            std::string::npos)
      << "below the default cooldown of 5000 ms";
}

TEST(RespAdapter, IsRegisteredUnderLmcachesName) {
  const auto types = registered_l2_adapter_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "resp"), types.end());
  register_resp_adapter_type();  // idempotent
  EXPECT_THROW(create_l2_adapter({{"type", "resp"}, {"host", "h"}, {"port", 1}, {"bogus", 1}}),
               std::invalid_argument);
}

TEST(RespAdapter, ComposesWithTheFp8SerdeThroughItsConfig) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);
  L2AdapterPtr a = create_l2_adapter({{"type", "resp"},
                                      {"host", server.host()},
                                      {"port", server.port()},
                                      {"num_workers", 2},
                                      {"serde", {{"type", "fp8"}}}},
                                     ctx);
  constexpr std::size_t kElems = 4096;
  const storage_testing::StoredSample sample = storage_testing::store_fp8_exact_sample(*a, kElems);
  ASSERT_TRUE(sample.stored && sample.stored->is_successful());
  EXPECT_EQ(sample.stored->bytes_transferred(), kElems) << "one fp8 byte per element went to Redis";
  EXPECT_EQ(server.command({"DBSIZE"}).integer, 1);

  EXPECT_EQ(storage_testing::loads_back(*a, sample.key, *sample.object), "");
  a->close();
}

// --- Real failures through the bridge --------------------------------------------------------

MemoryObjPtr bytes_obj(std::size_t n, std::uint8_t fill) {
  MemoryObjPtr o =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  std::memset(o->data(), fill, n);
  return o;
}

TEST(RespAdapter, SurvivesAServerRestart) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  // One worker: with two, the load after the restart may meet the other worker's dead
  // connection first, and a get that failed on a dead connection proves no miss.
  // No breaker: the three failures below would open it (ServerOutageOpensTheBreaker...).
  auto a = create_resp_adapter({{"host", server.host()},
                                {"port", server.port()},
                                {"num_workers", 1},
                                {"breaker_threshold", 0}});
  const ObjectKey k1(int_hash_to_bytes(1), "m", 0), k2(int_hash_to_bytes(2), "m", 0);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({k1}, {bytes_obj(1024, 1)}))->is_successful());
  server.kill();
  // In flight when the server is gone: fails cleanly, nothing hangs.
  EXPECT_FALSE(wait_store(*a, a->submit_store_task({k2}, {bytes_obj(1024, 2)}))->is_successful());
  EXPECT_EQ(wait_load(*a, a->submit_load_task({k1}, {bytes_obj(1024, 0)}))->to_string(), "0");
  EXPECT_EQ(a->get_usage().total_bytes_used, 1024u)
      << "a get that failed on a dead connection proves nothing about k1";
  server.restart();
  // Reconnected; the restart lost k1, and the usage follows once a load finds it missing.
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({k2}, {bytes_obj(1024, 2)}))->is_successful());
  MemoryObjPtr dst = bytes_obj(1024, 0);
  EXPECT_EQ(wait_load(*a, a->submit_load_task({k1, k2}, {bytes_obj(1024, 0), dst}))->to_string(),
            "01");
  EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[0]), 2);
  EXPECT_EQ(a->get_usage().total_bytes_used, 1024u);
  EXPECT_EQ(a->stats().reconciled_misses, 1u);
}

TEST(RespAdapter, ServerOutageOpensTheBreakerAndAProbeAfterTheRestartClosesIt) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  auto a = create_resp_adapter({{"host", server.host()},
                                {"port", server.port()},
                                {"num_workers", 1},
                                {"breaker_cooldown_ms", 200}});
  EXPECT_EQ(a->report_status()["connection_disabled"], false);
  EXPECT_EQ(a->options().breaker.threshold, 3u) << "resp has a breaker by default";
  const ObjectKey k(int_hash_to_bytes(7), "m", 0);
  server.kill();
  // Each failed store counts its set and its cleanup delete: the breaker opens within three.
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(wait_store(*a, a->submit_store_task({k}, {bytes_obj(64, 1)}))->is_successful());
  }
  Json status = a->report_status();
  EXPECT_EQ(status["connection_disabled"], true) << status.dump();
  EXPECT_GE(status["connection_failures"].get<int>(), 3) << status.dump();
  EXPECT_GT(status["breaker_retry_in_seconds"].get<double>(), 0.0) << status.dump();
  const std::uint64_t connects_while_open = a->report_status()["connector"]["connection_failures"];
  // While open, requests fail at once without trying the dead server.
  EXPECT_FALSE(wait_store(*a, a->submit_store_task({k}, {bytes_obj(64, 1)}))->is_successful());
  EXPECT_EQ(wait_load(*a, a->submit_load_task({k}, {bytes_obj(64, 0)}))->to_string(), "0");
  const Json after = a->report_status();
  if (after["connection_disabled"] == true && after["breaker_retry_in_seconds"] > 0.0) {
    EXPECT_EQ(after["connector"]["connection_failures"], connects_while_open)
        << "the open breaker let a request reach the dead server";
    EXPECT_GE(a->stats().breaker_refused, 2u);
  }
  server.restart();
  // The first store after the cooldown is the probe; it reaches the restarted server.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (a->breaker_state().retry_in_seconds > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({k}, {bytes_obj(64, 5)}))->is_successful());
  status = a->report_status();
  EXPECT_EQ(status["connection_disabled"], false) << status.dump();
  EXPECT_EQ(status["connection_failures"], 0) << status.dump();
  EXPECT_GE(status["breaker_trips"].get<int>(), 1) << status.dump();
  MemoryObjPtr dst = bytes_obj(64, 0);
  EXPECT_EQ(wait_load(*a, a->submit_load_task({k}, {dst}))->to_string(), "1");
  EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[0]), 5);
}

TEST(RespAdapter, DeadlineFailsTasksOnAPausedServerAndCloseIsPrompt) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  // The connection would wait an hour for the paused server: the bridge's deadline decides.
  auto a = create_resp_adapter({{"host", server.host()},
                                {"port", server.port()},
                                {"num_workers", 1},
                                {"io_timeout_ms", 3600000},
                                {"task_deadline_ms", 2000}});
  const ObjectKey k(int_hash_to_bytes(1), "m", 0);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({k}, {bytes_obj(64, 1)}))->is_successful());
  server.pause();
  EXPECT_FALSE(wait_store(*a, a->submit_store_task({k}, {bytes_obj(64, 2)}))->is_successful());
  EXPECT_EQ(wait_load(*a, a->submit_load_task({k}, {bytes_obj(64, 0)}))->to_string(), "0");
  EXPECT_TRUE(a->is_tombstoned(k)) << "a store failed by its deadline hides its keys";
  EXPECT_GE(a->stats().deadline_failures, 1u);
  a->close();  // shuts the blocked connection down
  server.resume();
}

// --- The bridge checks over redis-server ----------------------------------------------------

class RespBridgeChecks : public ::testing::TestWithParam<storage_testing::BridgeCheck> {};

TEST_P(RespBridgeChecks, Hold) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  storage_testing::BridgeRig rig;
  rig.name = "resp";
  rig.make_connector = [&server]() -> bridge::ErasedConnectorPtr {
    RespConnectorOptions o;
    o.endpoint = server.endpoint();
    o.num_workers = 2;
    // Loads through a read pool of their own (LMCache's read_io_depth), with a budget of two
    // 4 KiB objects, so that the checks' loads also run there.
    o.reads.io_depth = 3;
    o.reads.max_bytes_in_flight = 8192;
    return bridge::erase_connector(std::make_unique<RespConnector>(o));
  };
  rig.options.key_namespace = "bridge_checks";
  EXPECT_EQ(GetParam().run(rig), "");
}

INSTANTIATE_TEST_SUITE_P(All, RespBridgeChecks,
                         ::testing::ValuesIn(storage_testing::all_bridge_checks()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lmcache::resp
