// File: lmcache/conformance/reference_impls.h
//
// Descriptors of the reference implementations (reference/), which must pass every property:
// the fp8 serdes (e4m3fn and e5m2, PyTorch's non-saturating casts), AsyncSerdeProcessor over
// fp8, the in-memory "mock" L2 adapter, the mock wrapped by SerdeL2AdapterWrapper with fp8, and
// SerdeL2AdapterWrapper itself for the wrapper suite. `lmcache-conform --reference` runs them;
// they are also the worked examples of how to fill a descriptor.
#pragma once

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::conformance {

// reference_fp8_serde()
//
// "fp8_e4m3fn" / "fp8_e5m2": Fp8Serializer / Fp8Deserializer, lossy with the format's bounds,
// inputs float32 / float16 / bfloat16 within the format's finite range (448 / 57344). e4m3fn has
// no infinity (inf -> NaN), so it declares preserves_inf = false.
SerdeUnderTest reference_fp8_serde(Fp8Format format);

// reference_checksum_serde()
//
// "checksum": ChecksumSerializer / ChecksumDeserializer (docs/integrity.md), lossless over every
// dtype, claiming corruption detection (version byte at 0) and the chunk-hash binding.
SerdeUnderTest reference_checksum_serde();

// reference_aes_gcm_serde()
//
// "aesgcm_128" / "aesgcm_256_bind_key": AesGcmSerializer / AesGcmDeserializer over a fixed
// in-memory master key, lossless over every dtype, claiming corruption detection, the
// cache_salt binding (and with bind_key the chunk-hash binding), randomized IVs at bytes 1..12
// and a deserializer with another master key.
SerdeUnderTest reference_aes_gcm_serde(int aes_bits, bool bind_key);

// reference_fp8_checksum_chain()
//
// "chain_fp8_checksum": ChainSerializer / ChainDeserializer of fp8 e4m3fn then checksum; the
// fp8 serde's inputs and bounds with checksum's claims.
SerdeUnderTest reference_fp8_checksum_chain();

// reference_async_fp8_processor()
//
// "async_fp8_e4m3fn_w<N>": AsyncSerdeProcessor over the fp8 pair with `max_workers` threads.
ProcessorUnderTest reference_async_fp8_processor(Fp8Format format, std::size_t max_workers);

// reference_mock_adapter()
//
// "mock": MockL2Adapter with 1 GiB of capacity and a bandwidth high enough that the simulated
// transfer time is negligible. Reports its lock count.
AdapterUnderTest reference_mock_adapter();

// reference_wrapped_mock_adapter()
//
// "wrapper_mock_fp8": SerdeL2AdapterWrapper(mock, AsyncSerdeProcessor(fp8 e4m3fn), L1), i.e.
// adapter_of_wrapper(reference_serde_wrapper()) under another name. It stores one byte per
// element and loads back the fp8 round trip of what was stored.
AdapterUnderTest reference_wrapped_mock_adapter();

// reference_serde_wrapper()
//
// "serde_l2_adapter_wrapper": the reference SerdeL2AdapterWrapper for the wrapper suite.
WrapperUnderTest reference_serde_wrapper();

// register_reference_implementations()
//
// Adds the reference implementations above to `registry`: both fp8 serdes, both processors, the
// mock adapter and the wrapper (which the registry also adds as an adapter under its own name,
// the stack reference_wrapped_mock_adapter() describes).
void register_reference_implementations(Registry& registry);

}  // namespace lmcache::conformance
