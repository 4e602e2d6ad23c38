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
