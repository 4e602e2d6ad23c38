// SerdeL2AdapterWrapper's contracts, checked by the conformance kit exactly as a vendor checks
// its own wrapper: WrapperConformance over the reference wrapper (fp8 over the mock adapter with
// an L1Manager for temps), and AdapterConformance over the same stack seen as an L2 adapter (a
// wrapper is one: what the store and prefetch controllers call). What only this wrapper
// promises (its metrics, temps, inline steps) stays in serde_l2_adapter_wrapper_test.cc.
#include <gtest/gtest.h>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/wrapper_conformance.h"

namespace lmcache::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(Wrapper, WrapperConformance, ::testing::Values(reference_serde_wrapper()),
                         ParamName());

INSTANTIATE_TEST_SUITE_P(Wrapper, AdapterConformance,
                         ::testing::Values(reference_wrapped_mock_adapter()), ParamName());

}  // namespace
}  // namespace lmcache::conformance
