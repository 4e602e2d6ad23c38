// File: lmcache/conformance/wrapper_as_adapter.h
//
// A serde wrapper is an L2 adapter, so the adapter suite applies to it as well: stateful
// sequences, concurrent submitters, resources, close. adapter_of_wrapper() turns a wrapper
// descriptor into an adapter descriptor the AdapterConformance suite runs; Registry::add_wrapper
// registers it beside the wrapper (under the wrapper's name), so lmcache-conform runs both
// suites over every wrapper. A link-time user writes
//
//   INSTANTIATE_TEST_SUITE_P(VendorAsAdapter, AdapterConformance,
//                            ::testing::Values(lmcache::conformance::adapter_of_wrapper(MyWrapper())),
//                            lmcache::conformance::ParamName());
#pragma once

#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance {

// adapter_of_wrapper()
//
// An adapter descriptor named like `wrapper` whose make() builds the wrapper around a fresh
// in-memory mock adapter (1 GiB, no simulated delay), an AsyncSerdeProcessor over the reference
// fp8 e4m3fn pair and an L1Manager of 256 MiB for its temps. It declares what such a stack
// does: float32 / float16 / bfloat16 objects, one stored byte per element, loads that give the
// fp8 round trip, and every optional capability (delete, listeners, usage and, through the
// inner's report_status(), the lock count). A wrapper with decorate_inner gets its inner stack
// the same way as in its wrapper properties: decorate_inner(the mock). Throws
// std::invalid_argument when the wrapper's factory is empty.
AdapterUnderTest adapter_of_wrapper(const WrapperUnderTest& wrapper);

}  // namespace lmcache::conformance
