// MockL2Adapter's contracts, checked by the conformance kit exactly as a vendor checks its own
// adapter: AdapterConformance over the "mock" adapter (lent store buffers and load views
// included), and over the same mock with run_when_idle, whose tasks run on the submitting
// thread while it is idle (the kit's concurrent and stateful properties then race submitters
// against each other and against the worker). What only the mock promises (its bandwidth model,
// capacity accounting, how it lends, where tasks run) stays in mock_adapter_test.cc and
// mock_adapter_lend_test.cc.
#include <gtest/gtest.h>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/reference_impls.h"

namespace lmcache::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(L2, AdapterConformance,
                         ::testing::Values(reference_mock_adapter(),
                                           reference_mock_run_when_idle_adapter()),
                         ParamName());

}  // namespace
}  // namespace lmcache::conformance
