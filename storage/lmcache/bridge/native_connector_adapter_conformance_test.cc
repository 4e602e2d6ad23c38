// AdapterConformance over the bridge: the in-memory connector in its current and legacy shapes,
// and the fp8 serde wrapper over the bridge; WrapperConformance with the bridge below the wrapper.
#include <iostream>
#include <memory>
#include <string>

#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/testing/storage_descriptors.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/testing/memory_connector.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::bridge {
namespace {

using storage_testing::LegacyMemoryConnector;
using storage_testing::MemoryConnector;

L2AdapterPtr bridge_over_memory() {
  return make_native_connector_adapter(std::make_unique<MemoryConnector>());
}

L2AdapterPtr bridge_over_legacy_memory() {
  return make_native_connector_adapter(std::make_unique<LegacyMemoryConnector>());
}

L2AdapterPtr fp8_wrapper_over_bridge() {
  auto serde = std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                     std::make_shared<Fp8Deserializer>());
  return std::make_unique<SerdeL2AdapterWrapper>(bridge_over_memory(), std::move(serde),
                                                 std::make_shared<L1Manager>(64u << 20));
}

INSTANTIATE_TEST_SUITE_P(
    Bridge, AdapterConformance,
    ::testing::Values(
        conformance::bridge_descriptor("bridge_memory", &bridge_over_memory),
        conformance::bridge_descriptor("bridge_legacy_memory", &bridge_over_legacy_memory),
        conformance::fp8_wrapped_descriptor("wrapper_bridge_memory_fp8", &fp8_wrapper_over_bridge)),
    conformance::ParamName());

}  // namespace
}  // namespace lmcache::bridge

namespace lmcache::bridge {
namespace {

// WrapperConformance with the bridge answering the wrapper's inner calls (the kit's mock only
// shadows it), and a corrupting connector below the bridge to show that this rig can fail.
class BridgeWrapperProperties : public ::testing::TestWithParam<std::string> {};

TEST_P(BridgeWrapperProperties, HoldOverTheBridge) {
  const conformance::Verdict v =
      conformance::run_wrapper_property_over(GetParam(), "bridge_memory", &bridge_over_memory);
  EXPECT_EQ(v.status, conformance::Status::kPass) << v.message;
}

INSTANTIATE_TEST_SUITE_P(Fp8, BridgeWrapperProperties,
                         ::testing::ValuesIn(conformance::wrapper_property_names()),
                         [](const auto& info) { return info.param; });

// Flips the first byte of every get destination after the (synchronous) memory connector has
// filled it: loads report success with wrong bytes.
class CorruptingGets final : public ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    const std::uint64_t id = ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      if (lens[i] > 0) *static_cast<unsigned char*>(bufs[i]) ^= 0xFF;
    }
    return id;
  }
};

TEST(BridgeWrapperPropertiesRig, CatchesACorruptingConnector) {
  const conformance::Verdict v =
      conformance::run_wrapper_property_over("StoreLoadRoundTrip", "corrupting_memory", [] {
        return std::make_unique<NativeConnectorL2Adapter>(
            std::make_unique<CorruptingGets>(erase_connector(std::make_unique<MemoryConnector>())),
            NativeConnectorAdapterOptions{});
      });
  EXPECT_EQ(v.status, conformance::Status::kFail) << "a corrupting connector passed";
  std::cout << "[ caught ] " << v.message << "\n";
}

}  // namespace
}  // namespace lmcache::bridge
