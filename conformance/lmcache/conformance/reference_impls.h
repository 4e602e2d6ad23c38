// File: lmcache/conformance/reference_impls.h
//
// Descriptors of the reference implementations (reference/), which must pass every property:
// the fp8 serdes (e4m3fn and e5m2, PyTorch's non-saturating casts), checksum, aesgcm and chains,
// AsyncSerdeProcessor over each, the in-memory "mock" L2 adapter, the mock wrapped by
// SerdeL2AdapterWrapper with fp8, and SerdeL2AdapterWrapper itself for the wrapper suite.
// `lmcache-conform --reference` runs them; they are also the worked examples of how to fill a
// descriptor.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::conformance {

// reference_serde()
//
// The ReferenceSerde (descriptors.h) of a built-in serde config, e.g. R"({"type": "checksum"})"
// or R"({"type": "aesgcm", "master_key_path": "/etc/key", "aes_bits": 256})": a vendor
// implementation of that type names it as its SerdeUnderTest::reference (or
// ProcessorUnderTest::reference) and is then held to the reference's frames and verdicts. Each
// factory call builds fresh instances from the config (make_serde_pair(), chain_serde.h). Throws
// std::invalid_argument when the JSON does not parse or the config is refused (the message
// names the key).
ReferenceSerde reference_serde(const std::string& config_json);

// reference_fp8_serde()
//
// "fp8_e4m3fn" / "fp8_e5m2": Fp8Serializer / Fp8Deserializer, lossy with the format's bounds,
// inputs float32 / float16 / bfloat16 within the format's finite range (448 / 57344). e4m3fn has
// no infinity (inf -> NaN), so it declares preserves_inf = false.
SerdeUnderTest reference_fp8_serde(Fp8Format format);

// reference_fp8_scalar_serde()
//
// "fp8_e4m3fn_scalar" / "fp8_e5m2_scalar": the fp8 serde on its scalar kernel (the codec in
// reference/lmcache/fp8, which hosts without a SIMD target run), held byte for byte to
// reference_fp8_serde()'s frames on this host's best kernel.
SerdeUnderTest reference_fp8_scalar_serde(Fp8Format format);

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

// reference_encrypt_serde()
//
// "encrypt_128" / "encrypt_256": the same pair with AesGcmFlavor::kEncrypt keys (LMCache's
// "encrypt" serde: the aesgcm frame under the HKDF label "lmcache-l2-encrypt-v1", no bind_key),
// claiming what aesgcm without bind_key claims.
SerdeUnderTest reference_encrypt_serde(int aes_bits);

// reference_lmcr_serde()
//
// "lmcr_gzip": LmcrSerializer / LmcrDeserializer (LMCache's LMCR v1 record, gzip framing, 4 KiB
// chunks), lossless over every dtype, claiming corruption detection (its two CRC-32s; the
// version byte at offset 4).
SerdeUnderTest reference_lmcr_serde();

// reference_fp8_checksum_chain()
//
// "chain_fp8_checksum": ChainSerializer / ChainDeserializer of fp8 e4m3fn then checksum; the
// fp8 serde's inputs and bounds with checksum's claims.
SerdeUnderTest reference_fp8_checksum_chain();

// reference_fp8_aes_gcm_chain()
//
// "chain_fp8_aesgcm_256": fp8 e4m3fn then aesgcm (256 bits, no bind_key); the fp8 serde's
// inputs and bounds with aesgcm's claims (randomized, salt-bound, another secret fails).
SerdeUnderTest reference_fp8_aes_gcm_chain();

// reference_serdes()
//
// Every reference serde above: fp8 e4m3fn and e5m2, both again on the scalar kernel,
// checksum, aesgcm 128 / 256 with and without bind_key, and both chains. Each names itself as its
// own reference (MatchesReference then checks the differential machinery against a correct
// implementation).
std::vector<SerdeUnderTest> reference_serdes();

// reference_async_fp8_processor()
//
// "async_fp8_e4m3fn_w<N>": AsyncSerdeProcessor over the fp8 pair with `max_workers` threads.
ProcessorUnderTest reference_async_fp8_processor(Fp8Format format, std::size_t max_workers);

// reference_async_processor()
//
// "async_<serde>_w<N>": AsyncSerdeProcessor over `serde`'s pair with `max_workers` threads;
// its input dtypes, randomization and reference are the serde's.
ProcessorUnderTest reference_async_processor(const SerdeUnderTest& serde, std::size_t max_workers);

// reference_registry_processor()
//
// "registry_<name>": the processor create_serde_processor(config) builds (serde_registry.h),
// the way an adapter config's "serde" object builds it. `config_json` must name a type whose
// config needs no file (fp8, checksum, a chain of those); `serde` gives the dtypes and reference.
ProcessorUnderTest reference_registry_processor(std::string name, std::string config_json,
                                                const SerdeUnderTest& serde);

// reference_mock_adapter()
//
// "mock": MockL2Adapter with 1 GiB of capacity and a bandwidth high enough that the simulated
// transfer time is negligible. Reports its lock count.
AdapterUnderTest reference_mock_adapter();

// reference_mock_run_when_idle_adapter()
//
// "mock_run_when_idle": the same mock with run_when_idle, whose tasks run on the submitting
// thread while it is idle (the concurrent and stateful properties then race submitters against
// each other and against the worker).
AdapterUnderTest reference_mock_run_when_idle_adapter();

// reference_wrapped_mock_adapter()
//
// "wrapper_mock_fp8": SerdeL2AdapterWrapper(mock, AsyncSerdeProcessor(fp8 e4m3fn), L1), i.e.
// adapter_of_wrapper(reference_serde_wrapper()) under another name. It stores one byte per
// element and loads back the fp8 round trip of what was stored.
AdapterUnderTest reference_wrapped_mock_adapter();

// reference_serde_wrapper()
//
// "serde_l2_adapter_wrapper": the reference SerdeL2AdapterWrapper for the wrapper suite, with
// its default options (adaptive inline serde steps, finish_on_submit; docs/wrapper.md).
WrapperUnderTest reference_serde_wrapper();

// reference_serde_wrapper_every_step_submitted()
//
// "serde_l2_adapter_wrapper_every_step_submitted": the same wrapper configured to hand every
// serde step to a worker and leave every drain to its loop: the path the defaults take for
// large tasks, which the kit's small objects would otherwise never reach.
WrapperUnderTest reference_serde_wrapper_every_step_submitted();

// reference_serde_wrapper_configured()
//
// The reference SerdeL2AdapterWrapper named `name`, its options read from `serde_wrapper_json`
// exactly as the adapter config's "serde_wrapper" object (wrapper_options_from_json(),
// docs/wrapper.md). The two above are this with the default options and with every step submitted.
// Throws at once, not when the kit makes a wrapper: nlohmann::json::parse_error for text that is
// not JSON, std::invalid_argument for a bad option.
WrapperUnderTest reference_serde_wrapper_configured(std::string name,
                                                    const std::string& serde_wrapper_json);

// register_reference_implementations()
//
// Adds the reference implementations above to `registry`: every serde of reference_serdes(),
// processors over each (AsyncSerdeProcessor over fp8 with 1 and 3 workers, over checksum,
// aesgcm and both chains, and the registry-built fp8, checksum and chain processors), the mock
// adapter and the wrapper (which the registry also adds as an adapter under its own name, the
// stack reference_wrapped_mock_adapter() describes). The storage adapters (resp, fs, the native
// connector bridge) need a server or a directory: lmcache-conform --reference adds them.
void register_reference_implementations(Registry& registry);

}  // namespace lmcache::conformance
