// File: lmcache/conformance/wrapper_conformance.h
//
// WrapperConformance: the abstract suite for implementations of the serde L2 wrapper (SPEC §7,
// seeds/serde-l2-wrapper.md). The kit builds each wrapper around its own collaborators
// (doubles.h): an fp8 serde processor and an inner mock adapter whose every failure point can be
// switched on, plus an L1Manager whose capacity it can exhaust. Then it checks, over generated
// batches (1-4 objects, 1-2 groups, float32 / float16 / bfloat16), the all-or-nothing policy at
// every failure point, homogeneity, partial loads, the pass-through of lookups, the temp
// lifecycle in L1 and close(). Instantiate it with your descriptors:
//
//   INSTANTIATE_TEST_SUITE_P(Vendor, WrapperConformance, ::testing::Values(MyVendorWrapper()),
//                            lmcache::conformance::ParamName());
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

class WrapperConformance : public ::testing::TestWithParam<WrapperUnderTest> {};

// RunWrapperProperty()
//
// The verdict of one property (by name) for `wrapper`; an unknown name is a Fail.
Verdict RunWrapperProperty(std::string_view property, const WrapperUnderTest& wrapper);

namespace internal {
int WrapperConformanceLinkAnchor();
[[maybe_unused]] static const int kWrapperConformanceLinked = WrapperConformanceLinkAnchor();
}  // namespace internal

}  // namespace lmcache::conformance

// Unqualified for INSTANTIATE_TEST_SUITE_P (see serde_conformance.h).
using lmcache::conformance::WrapperConformance;
