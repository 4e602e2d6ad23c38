// File: lmcache/conformance/wrapper_conformance.h
//
// WrapperConformance: the abstract suite for implementations of the serde L2 wrapper
// (docs/wrapper.md). The kit builds each wrapper around its own collaborators
// (doubles.h): an fp8 serde processor and an inner mock adapter whose every failure point can be
// switched on, plus an L1Manager whose capacity it can exhaust. Then it checks, over generated
// batches (1-4 objects, 1-2 groups, float32 / float16 / bfloat16), the all-or-nothing policy at
// every failure point, homogeneity, partial loads, the pass-through of lookups, the temp
// lifecycle in L1 and close(). Instantiate it with your descriptors:
//
//   INSTANTIATE_TEST_SUITE_P(Vendor, WrapperConformance, ::testing::Values(MyVendorWrapper()),
//                            lmcache::conformance::ParamName());
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

class WrapperConformance : public ::testing::TestWithParam<WrapperUnderTest> {};

// run_wrapper_property()
//
// The verdict of one property (by name) for `wrapper`; an unknown name is a Fail. The property
// runs twice: over the kit's rig with an inner adapter that lends nothing (the wrapper's L1
// temps), then, if it passed, with one that lends store buffers and load views (the wrapper's
// zero-copy paths; rig "lends", see WrapperRigOptions::inner_lends). A descriptor with
// decorate_inner runs once, over its own inner stack (rig "inner").
Verdict run_wrapper_property(std::string_view property, const WrapperUnderTest& wrapper);

// WrapperRigOptions
//
// An extension point of the kit's rig, for harnesses that want the wrapper properties to run
// over another inner adapter stack (fault_injection/ runs them over its fault_inject adapter).
// A descriptor reaches decorate_inner through WrapperUnderTest::decorate_inner; the default
// options are the rig of the gtest suite and of lmcache-conform.
//
//   decorate_inner  Empty: the kit's inner adapter is its scripted double over an in-memory
//                   mock. Set: it receives an adapter forwarding to that mock (the kit keeps
//                   inspecting the mock; closing the forwarder closes the mock) and returns
//                   the adapter the scripted double forwards to instead, e.g. a fault injector
//                   over it: wrapper -> scripted double -> decorate_inner(mock) -> mock. The
//                   scripted failure points keep working above it. A property holds over a
//                   decorator only as far as the decorator keeps the mock's results (timing
//                   faults do; a store failure does not keep a "store then load" property).
//   name            Appended to the RapidCheck id ("WrapperConformance.P/<wrapper>@<name>"),
//                   so that a `reproduce=` token replays the run with this rig.
//   inner_lends     The kit's mock lends store buffers and load views, and the scripted double
//                   passes both on (its failure points apply to view loads too), so the
//                   wrapper's zero-copy paths run instead of its L1 temps.
struct WrapperRigOptions {
  std::function<L2AdapterPtr(L2AdapterPtr mock)> decorate_inner;
  std::string name;
  bool inner_lends = false;
};

// run_wrapper_property() with a rig
//
// As above, with the kit's rig changed as `rig` says. run_wrapper_property(p, w) is
// run_wrapper_property(p, w, WrapperRigOptions{}).
Verdict run_wrapper_property(std::string_view property, const WrapperUnderTest& wrapper,
                             const WrapperRigOptions& rig);

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
int wrapper_conformance_link_anchor();
[[maybe_unused]] static const int kWrapperConformanceLinked = wrapper_conformance_link_anchor();
}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {}  // namespace lmcache::conformance

// Unqualified for INSTANTIATE_TEST_SUITE_P (see serde_conformance.h).
using lmcache::conformance::WrapperConformance;
