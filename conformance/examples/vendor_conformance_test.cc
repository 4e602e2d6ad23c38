// Link time: the vendor's whole conformance test is one INSTANTIATE_TEST_SUITE_P line per suite
// (link with lmcache::conformance and GTest::gtest_main).
#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/serde_conformance.h"
#include "vendor_copy_serde.h"

INSTANTIATE_TEST_SUITE_P(Vendor, SerdeConformance,
                         ::testing::Values(vendor::copy_serde_descriptor()),
                         lmcache::conformance::ParamName());

INSTANTIATE_TEST_SUITE_P(Vendor, ProcessorConformance,
                         ::testing::Values(vendor::copy_processor_descriptor()),
                         lmcache::conformance::ParamName());
