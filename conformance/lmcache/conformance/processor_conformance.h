// File: lmcache/conformance/processor_conformance.h
//
// ProcessorConformance: the abstract suite every asynchronous SerdeProcessor must pass (the
// submit -> eventfd -> one-shot query contract of docs/serde.md and docs/async-completion.md).
// Instantiate it with your descriptors:
//
//   INSTANTIATE_TEST_SUITE_P(Vendor, ProcessorConformance,
//                            ::testing::Values(MyVendorProcessor()),
//                            lmcache::conformance::ParamName());
//
// Properties: properties_of(ImplementationKind::kProcessor) (properties.h). Each builds fresh
// processors through the descriptor and closes them. Failures are induced through the serde
// contract itself (a destination or source too short must make the pair throw), so no test
// hook is needed in the implementation.
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

class ProcessorConformance : public ::testing::TestWithParam<ProcessorUnderTest> {};

// run_processor_property()
//
// The verdict of one property (by name) for `processor`; an unknown name is a Fail.
Verdict run_processor_property(std::string_view property, const ProcessorUnderTest& processor);

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
int processor_conformance_link_anchor();
[[maybe_unused]] static const int kProcessorConformanceLinked = processor_conformance_link_anchor();
}  // namespace lmcache::conformance_internal

// Unqualified for INSTANTIATE_TEST_SUITE_P (see serde_conformance.h).
using lmcache::conformance::ProcessorConformance;
