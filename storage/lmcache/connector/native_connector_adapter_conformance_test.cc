// AdapterConformance over the bridge: the in-memory connector in its current and legacy shapes,
// and the fp8 serde wrapper over the bridge.
#include <memory>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/connector/native_connector_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/testing/memory_connector.h"
#include "lmcache/testing/storage_descriptors.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::connector {
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
    ::testing::Values(storage_testing::bridge_descriptor("bridge_memory", &bridge_over_memory),
                      storage_testing::bridge_descriptor("bridge_legacy_memory",
                                                         &bridge_over_legacy_memory),
                      storage_testing::fp8_wrapped_descriptor("wrapper_bridge_memory_fp8",
                                                              &fp8_wrapper_over_bridge)),
    conformance::ParamName());

}  // namespace
}  // namespace lmcache::connector
