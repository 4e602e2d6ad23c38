// AdapterConformance over the "resp" adapter against a private redis-server: the bridge over
// RespConnector, and the fp8 serde wrapper over it built from a config with a "serde" object.
// Every adapter a property builds gets its own key namespace, so each starts from an empty store;
// StoredDamageContained damages its namespace's values through a client of the server.
#include <atomic>
#include <memory>
#include <string>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/testing/storage_descriptors.h"
#include "lmcache/conformance/testing/stored_damage.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::resp {
namespace {

storage_testing::RedisServer* server = nullptr;

// Starts the server for the whole binary; without redis-server every test is skipped, naming why.
class RedisEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!storage_testing::RedisServer::find_executable()) {
      GTEST_SKIP() << "redis-server is not installed (Debian package redis-server; "
                      "scripts/install-deps.sh installs it)";
    }
    server_ = std::make_unique<storage_testing::RedisServer>();
    server = server_.get();
  }
  void TearDown() override {
    server = nullptr;
    server_.reset();
  }

 private:
  std::unique_ptr<storage_testing::RedisServer> server_;
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new RedisEnvironment);

Json config() {
  static std::atomic<int> next{0};
  return {{"type", "resp"},
          {"host", server->host()},
          {"port", server->port()},
          {"num_workers", 2},
          {"key_namespace", "conformance_" + std::to_string(next++)}};
}

// A config's adapter, with an L1 for a "serde" wrapper's temps.
L2AdapterPtr build(const Json& c) {
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);
  return create_l2_adapter(c, ctx);
}

L2AdapterPtr resp_fp8_wrapper() {
  Json c = config();
  c["serde"] = {{"type", "fp8"}};
  return build(c);
}

L2AdapterPtr resp_bridge() { return create_l2_adapter(config()); }

// `a` over damaged values too (AdapterConformance.StoredDamageContained): the same config, its
// namespace's values damaged through a client of the server.
conformance::AdapterUnderTest damageable(conformance::AdapterUnderTest a, bool fp8) {
  a.make_damageable = [fp8] {
    Json c = config();
    if (fp8) c["serde"] = {{"type", "fp8"}};
    return conformance::damageable_resp(c, &build)();
  };
  return a;
}

// The bridge over RespConnector, also pointed at the kit's hostile peers
// (AdapterConformance.HostilePeerFailsCleanly).
conformance::AdapterUnderTest resp_descriptor() {
  conformance::AdapterUnderTest a = conformance::bridge_descriptor("resp", &resp_bridge);
  a.make_over_resp_peer = [](std::uint16_t port) -> L2AdapterPtr {
    Json c = config();
    c["host"] = "127.0.0.1";
    c["port"] = port;
    return create_l2_adapter(c);
  };
  return damageable(a, false);
}

INSTANTIATE_TEST_SUITE_P(Resp, AdapterConformance,
                         ::testing::Values(resp_descriptor(),
                                           damageable(conformance::fp8_wrapped_descriptor(
                                                          "wrapper_resp_fp8", &resp_fp8_wrapper),
                                                      true)),
                         conformance::ParamName());

// WrapperConformance: the reference fp8 wrapper's properties with this adapter answering every
// inner store, lookup and load (the kit's mock only shadows it for the kit's own checks).
class RespWrapperProperties : public ::testing::TestWithParam<std::string> {};

TEST_P(RespWrapperProperties, HoldOverResp) {
  const conformance::Verdict v =
      conformance::run_wrapper_property_over(GetParam(), "resp", &resp_bridge);
  EXPECT_EQ(v.status, conformance::Status::kPass)
      << conformance::status_name(v.status) << ": " << v.message << " (RC_PARAMS=" << v.rc_params
      << ")";
}

INSTANTIATE_TEST_SUITE_P(Fp8, RespWrapperProperties,
                         ::testing::ValuesIn(conformance::wrapper_property_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace lmcache::resp
