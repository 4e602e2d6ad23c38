// File: lmcache/conformance/serde_conformance.h
//
// SerdeConformance: the value-parameterized abstract suite every Serializer / Deserializer pair
// must pass (googletest "abstract tests"). Instantiate it once with your descriptors:
//
//   #include "lmcache/conformance/serde_conformance.h"
//   INSTANTIATE_TEST_SUITE_P(Vendor, SerdeConformance, ::testing::Values(MyVendorSerde()),
//                            lmcache::conformance::ParamName());
//
// (SerdeConformance is also visible unqualified at global scope, because the macro needs a
// plain identifier.)
//
// and link lmcache::conformance plus GTest::gtest_main. Each TEST_P is one property of
// properties_of(ImplementationKind::kSerde) (properties.h), run with RapidCheck over generated
// layouts (1-4 groups; 0-, 1- and odd-element shapes; the declared dtypes) and values (zeros,
// subnormals, extremes, and NaN / inf where declared). A failure prints the RC_PARAMS that
// replays it. run_serde_property() runs one property without gtest.
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

class SerdeConformance : public ::testing::TestWithParam<SerdeUnderTest> {};

// run_serde_property()
//
// The verdict of one property (by name, see properties.h) for `serde`. An unknown name is a
// Fail naming it.
Verdict run_serde_property(std::string_view property, const SerdeUnderTest& serde);

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
// Referenced from every translation unit that includes this header, so that a static link
// always pulls in the object file holding the suite's TEST_P registrations.
int serde_conformance_link_anchor();
[[maybe_unused]] static const int kSerdeConformanceLinked = serde_conformance_link_anchor();
}  // namespace lmcache::conformance_internal

// INSTANTIATE_TEST_SUITE_P pastes the suite name into identifiers, so it must be unqualified:
// this global alias lets a vendor's one line name the suite from any namespace.
using lmcache::conformance::SerdeConformance;
