// The serde package's contracts, checked by the conformance kit exactly as a vendor checks its
// own serdes: SerdeConformance over every reference serde (fp8 in both formats, checksum,
// AES-GCM with and without the key bound into the nonce, the fp8 -> checksum chain), and
// ProcessorConformance over the AsyncSerdeProcessor (one worker, and three). What only these
// implementations promise stays in their own *_test.cc files.
#include <gtest/gtest.h>

#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/serde_conformance.h"

namespace lmcache::conformance {
namespace {

INSTANTIATE_TEST_SUITE_P(Serde, SerdeConformance,
                         ::testing::Values(reference_fp8_serde(Fp8Format::kE4M3FN),
                                           reference_fp8_serde(Fp8Format::kE5M2),
                                           reference_checksum_serde(),
                                           reference_aes_gcm_serde(128, false),
                                           reference_aes_gcm_serde(256, true),
                                           reference_fp8_checksum_chain()),
                         ParamName());

INSTANTIATE_TEST_SUITE_P(Serde, ProcessorConformance,
                         ::testing::Values(reference_async_fp8_processor(Fp8Format::kE4M3FN, 1),
                                           reference_async_fp8_processor(Fp8Format::kE5M2, 3)),
                         ParamName());

}  // namespace
}  // namespace lmcache::conformance
