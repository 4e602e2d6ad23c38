// A plugin whose implementations crash or hang: the runner must turn each into a Fail of the
// property that was running ("crashed ..." / "hang (timeout ...)") and finish the run.
#include <signal.h>

#include <chrono>
#include <memory>
#include <thread>

#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "mutants.h"

namespace {

using namespace lmcache;

// Crashes on every call, as a serializer with a wild pointer would.
class CrashingSerializer final : public Serializer {
 public:
  std::size_t serialize(const MemoryObj&, MemoryObj&) override {
    raise(SIGSEGV);
    return 0;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return layout.total_bytes();
  }
};

// Never returns from a submit, as a processor deadlocked on its own lock would.
class HangingProcessor final : public ForwardingSerdeProcessor {
 public:
  HangingProcessor()
      : ForwardingSerdeProcessor(std::make_unique<AsyncSerdeProcessor>(
            std::make_shared<Fp8Serializer>(), std::make_shared<Fp8Deserializer>())) {}
  TaskId submit_serialize(std::vector<MemoryObjPtr>, std::vector<MemoryObjPtr>) override {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
};

}  // namespace

LMCACHE_CONFORMANCE_PLUGIN(registry) {
  using namespace lmcache::conformance;
  registry.add_serde(selftest::copy_serde());
  SerdeUnderTest crashing = selftest::copy_serde();
  crashing.name = "crashing_serde";
  crashing.make_serializer = [] { return std::make_shared<CrashingSerializer>(); };
  registry.add_serde(crashing);
  ProcessorUnderTest hanging;
  hanging.name = "hanging_processor";
  hanging.make = []() -> SerdeProcessorPtr { return std::make_unique<HangingProcessor>(); };
  registry.add_processor(hanging);
}
