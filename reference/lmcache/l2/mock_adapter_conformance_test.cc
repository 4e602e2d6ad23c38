// MockL2Adapter's contracts, checked by the conformance kit exactly as a vendor checks its own
// adapter: AdapterConformance over the "mock" adapter (lent store buffers and load views
// included), and over the same mock with run_when_idle, whose tasks run on the submitting
// thread while it is idle (the kit's concurrent and stateful properties then race submitters
// against each other and against the worker). What only the mock promises (its bandwidth model,
// capacity accounting, how it lends, where tasks run) stays in mock_adapter_test.cc and
// mock_adapter_lend_test.cc.
#include <gtest/gtest.h>

#include <memory>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache::conformance {
namespace {

AdapterUnderTest mock_run_when_idle() {
  AdapterUnderTest a = reference_mock_adapter();
  a.name = "mock_run_when_idle";
  a.make = []() -> L2AdapterPtr {
    return std::make_unique<MockL2Adapter>(
        MockL2AdapterOptions{.max_capacity_bytes = std::uint64_t{1} << 30,
                             .bandwidth_bytes_per_sec = std::uint64_t{1} << 40,
                             .lend_load_views = true,
                             .run_when_idle = true});
  };
  return a;
}

INSTANTIATE_TEST_SUITE_P(L2, AdapterConformance,
                         ::testing::Values(reference_mock_adapter(), mock_run_when_idle()),
                         ParamName());

}  // namespace
}  // namespace lmcache::conformance
