// File: lmcache/conformance/adapter_conformance.h
//
// AdapterConformance: the abstract suite every L2AdapterInterface implementation must pass
// (docs/l2-adapter.md, docs/async-completion.md). Instantiate it with your descriptors:
//
//   INSTANTIATE_TEST_SUITE_P(Vendor, AdapterConformance, ::testing::Values(MyVendorAdapter()),
//                            lmcache::conformance::ParamName());
//
// Most properties are stateful (RapidCheck rc::state): random sequences of Store,
// LookupAndLock, Unlock, Load (of present and absent keys: partial bitmaps) and Delete run
// against a fresh adapter and a model map of the stored keys and their lock counts. Every
// command waits for its own result, then checks one aspect of the contract; each property
// enables one aspect (OneShotResults, EachKindSignalsItsFd, ...) and StatefulModel enables them
// all, so a failure names the broken rule. Properties that need an optional capability
// (AdapterCapabilities) are NotSupported without it. Sequences are not shrunk by default (each
// failing replay may wait out a timeout); RC_PARAMS="noshrink=0" turns shrinking on.
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

class AdapterConformance : public ::testing::TestWithParam<AdapterUnderTest> {};

// run_adapter_property()
//
// The verdict of one property (by name) for `adapter`; an unknown name is a Fail.
Verdict run_adapter_property(std::string_view property, const AdapterUnderTest& adapter);

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
int adapter_conformance_link_anchor();
[[maybe_unused]] static const int kAdapterConformanceLinked = adapter_conformance_link_anchor();
}  // namespace lmcache::conformance_internal

// Unqualified for INSTANTIATE_TEST_SUITE_P (see serde_conformance.h).
using lmcache::conformance::AdapterConformance;
