// SerdeL2AdapterWrapper's contracts, checked by the conformance kit exactly as a vendor checks
// its own wrapper: WrapperConformance over the reference wrapper (fp8 over the mock adapter with
// an L1Manager for temps), and AdapterConformance over the same stack seen as an L2 adapter (a
// wrapper is one: what the store and prefetch controllers call), with the default options
// (adaptive inline thresholds, finish_on_submit). Both run again with every serde step handed
// to a worker and every drain left to the loop (thresholds 0, finish_on_submit off), and with
// every shortcut forced (inline steps of any size, finish_on_submit), the adapter suite then
// over a mock that runs idle tasks on the submitter (run_when_idle): tasks complete inside
// their submits while the loop drains too. What only this wrapper promises (its metrics, temps,
// inline steps) stays in serde_l2_adapter_wrapper_test.cc.
#include <gtest/gtest.h>

#include <memory>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/wrapper_as_adapter.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"
#include "lmcache/wrapper/wrapper_options.h"

namespace lmcache::conformance {
namespace {

// Inline steps of any size the kit draws, and finish_on_submit.
constexpr const char* kEveryShortcut = R"({"inline_serialize_max_bytes": 67108864,
                                          "inline_deserialize_max_bytes": 67108864,
                                          "finish_on_submit": true})";

WrapperUnderTest wrapper_with_every_shortcut() {
  return reference_serde_wrapper_configured("serde_l2_adapter_wrapper_finish_on_submit",
                                            kEveryShortcut);
}

AdapterUnderTest wrapped_idle_runner_with_every_shortcut() {
  AdapterUnderTest a = adapter_of_wrapper(wrapper_with_every_shortcut());
  a.name = "wrapper_mock_fp8_finish_on_submit";
  a.make = []() -> L2AdapterPtr {
    return std::make_unique<SerdeL2AdapterWrapper>(
        std::make_unique<MockL2Adapter>(
            MockL2AdapterOptions{.max_capacity_bytes = std::uint64_t{1} << 30,
                                 .bandwidth_bytes_per_sec = std::uint64_t{1} << 40,
                                 .lend_load_views = true,
                                 .run_when_idle = true}),
        std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                              std::make_shared<Fp8Deserializer>()),
        std::make_shared<L1Manager>(std::size_t{256} << 20),
        wrapper_options_from_json(Json::parse(kEveryShortcut)));
  };
  return a;
}

INSTANTIATE_TEST_SUITE_P(Wrapper, WrapperConformance,
                         ::testing::Values(reference_serde_wrapper(),
                                           reference_serde_wrapper_every_step_submitted(),
                                           wrapper_with_every_shortcut()),
                         ParamName());

INSTANTIATE_TEST_SUITE_P(
    Wrapper, AdapterConformance,
    ::testing::Values(reference_wrapped_mock_adapter(),
                      adapter_of_wrapper(reference_serde_wrapper_every_step_submitted()),
                      wrapped_idle_runner_with_every_shortcut()),
    ParamName());

}  // namespace
}  // namespace lmcache::conformance
