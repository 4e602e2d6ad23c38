// MockL2Adapter's contracts, checked by the conformance kit exactly as a vendor checks its own
// adapter: AdapterConformance over the "mock" adapter (lent store buffers included). What only
// the mock promises (its bandwidth model, capacity accounting, how it lends) stays in
// mock_adapter_test.cc and mock_adapter_lend_test.cc.
#include <gtest/gtest.h>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/reference_impls.h"

namespace lmcache::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(L2, AdapterConformance, ::testing::Values(reference_mock_adapter()),
                         ParamName());

}  // namespace
}  // namespace lmcache::conformance
