#include "lmcache/conformance/wrapper_as_adapter.h"

#include <memory>
#include <stdexcept>

#include "lmcache/conformance/buffers.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::conformance {

namespace {

constexpr std::uint64_t kMockCapacityBytes = 1ull << 30;
// 1 TiB/s: a few MiB move in microseconds, so the simulated bandwidth never slows a suite.
constexpr std::uint64_t kMockBandwidth = 1ull << 40;
constexpr std::size_t kL1Bytes = std::size_t{256} << 20;

}  // namespace

AdapterUnderTest adapter_of_wrapper(const WrapperUnderTest& wrapper) {
  if (!wrapper.make) {
    throw std::invalid_argument("adapter_of_wrapper: wrapper '" + wrapper.name +
                                "' has an empty factory");
  }
  AdapterUnderTest a;
  a.name = wrapper.name;
  a.make = [make = wrapper.make, decorate = wrapper.decorate_inner]() -> L2AdapterPtr {
    L2AdapterPtr inner =
        std::make_unique<MockL2Adapter>(MockL2AdapterOptions{kMockCapacityBytes, kMockBandwidth});
    // The descriptor's own inner stack (a live adapter shadowed by the mock), as its wrapper
    // properties run over.
    if (decorate) inner = decorate(std::move(inner));
    auto serde = std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                       std::make_shared<Fp8Deserializer>());
    return make(std::move(inner), std::move(serde), std::make_shared<L1Manager>(kL1Bytes));
  };
  // Lookup locks happen in the inner mock, whose status the wrapper passes through.
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  // The inner mock holds one fp8 code per element.
  a.stored_bytes = [](const MemoryLayoutDesc& layout) -> std::uint64_t {
    return layout.total_elements();
  };
  a.expected_load = [](const MemoryObj& stored, MemoryObj& expected) {
    Fp8Serializer ser;
    Fp8Deserializer deser;
    auto bytes = MemoryObj::allocate(MemoryLayoutDesc::single(
        {static_cast<std::int64_t>(ser.estimate_serialized_size(stored.layout()))}, DType::kUInt8));
    std::size_t n = ser.serialize(stored, *bytes, probe_key());
    bytes->set_used_size(n);
    deser.deserialize(*bytes, expected, probe_key());
  };
  return a;
}

}  // namespace lmcache::conformance
