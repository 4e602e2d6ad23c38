#include "lmcache/conformance/reference_impls.h"

#include "lmcache/conformance/wrapper_as_adapter.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/lmcr_serde.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::conformance {

namespace {

// Large enough for every generated object; the mock only counts it.
constexpr std::uint64_t kMockCapacityBytes = 1ull << 30;
// 1 TiB/s: a few KiB move in nanoseconds, so the simulated bandwidth never slows the suites.
constexpr std::uint64_t kMockBandwidth = 1ull << 40;

std::string format_suffix(Fp8Format format) {
  return format == Fp8Format::kE4M3FN ? "e4m3fn" : "e5m2";
}

// An aesgcm keyring over an in-memory master key (the reference descriptors need no key file).
AesGcmOptions aes_gcm_options(const char* master, int aes_bits, bool bind_key,
                              AesGcmFlavor flavor = AesGcmFlavor::kAesGcm) {
  return AesGcmOptions{std::make_shared<AesGcmKeyring>(master, aes_bits, flavor), bind_key};
}

constexpr const char* kMasterKey = "conformance master key";

// checksum binds the first bytes of the chunk hash: its fingerprint's length.
constexpr std::size_t kChecksumFingerprintBytes =
    std::tuple_size_v<decltype(checksum_fingerprint(std::declval<const ObjectKey&>()))>;

// The serde's own pair as its reference: MatchesReference over a correct implementation.
ReferenceSerde self_reference(const SerdeUnderTest& s, std::string type) {
  return ReferenceSerde{std::move(type), s.make_serializer, s.make_deserializer,
                        s.integrity.randomized};
}

L2AdapterPtr make_mock(bool run_when_idle, std::uint64_t capacity = kMockCapacityBytes) {
  return std::make_unique<MockL2Adapter>(
      MockL2AdapterOptions{.max_capacity_bytes = capacity,
                           .bandwidth_bytes_per_sec = kMockBandwidth,
                           .lend_load_views = true,
                           .run_when_idle = run_when_idle});
}

}  // namespace

ReferenceSerde reference_serde(const std::string& config_json) {
  Json config;
  try {
    config = Json::parse(config_json);
  } catch (const Json::parse_error& e) {
    throw std::invalid_argument("reference serde config is not JSON: " + std::string(e.what()));
  }
  const ChainStage probe = make_serde_pair(config);  // validates the config now
  (void)probe;
  ReferenceSerde r;
  r.type = config.value("type", std::string());
  r.make_serializer = [config] { return make_serde_pair(config).serializer; };
  r.make_deserializer = [config] { return make_serde_pair(config).deserializer; };
  r.randomized = config_json.find(kAesGcmSerdeType) != std::string::npos ||
                 config_json.find(kEncryptSerdeType) != std::string::npos;
  return r;
}

namespace {

SerdeUnderTest fp8_serde_on(Fp8Format format, Fp8SerdeKernel kernel) {
  Fp8SerdeOptions options{format, Fp8Overflow::kNonSaturating, kernel};
  SerdeUnderTest s;
  s.name =
      "fp8_" + format_suffix(format) +
      (kernel == Fp8SerdeKernel::kAuto ? "" : "_" + std::string(fp8_serde_kernel_name(kernel)));
  s.make_serializer = [options] { return std::make_shared<Fp8Serializer>(options); };
  s.make_deserializer = [options] { return std::make_shared<Fp8Deserializer>(options); };
  s.input_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  if (format == Fp8Format::kE4M3FN) {
    // 3 mantissa bits: half an ulp is 2^-4 of the value for normals; subnormal step 2^-9.
    s.lossiness = Lossiness::Bounded(std::ldexp(1.0, -10), std::ldexp(1.0, -4),
                                     std::ldexp(1.0, -10), std::ldexp(1.0, -4));
    s.max_abs_input = 448.0;
    s.preserves_inf = false;  // e4m3fn has no infinity: +-inf encodes as NaN
  } else {
    // 2 mantissa bits: 2^-3 for normals; subnormal step 2^-16.
    s.lossiness = Lossiness::Bounded(std::ldexp(1.0, -17), std::ldexp(1.0, -3),
                                     std::ldexp(1.0, -17), std::ldexp(1.0, -3));
    s.max_abs_input = 57344.0;
  }
  // Another kernel is held byte for byte to the default one (auto: the best this host runs).
  s.reference = kernel == Fp8SerdeKernel::kAuto
                    ? self_reference(s, "fp8")
                    : fp8_serde_on(format, Fp8SerdeKernel::kAuto).reference;
  return s;
}

}  // namespace

SerdeUnderTest reference_fp8_serde(Fp8Format format) {
  return fp8_serde_on(format, Fp8SerdeKernel::kAuto);
}

SerdeUnderTest reference_fp8_scalar_serde(Fp8Format format) {
  return fp8_serde_on(format, Fp8SerdeKernel::kScalar);
}

SerdeUnderTest reference_checksum_serde() {
  SerdeUnderTest s;
  s.name = "checksum";
  s.make_serializer = [] { return std::make_shared<ChecksumSerializer>(); };
  s.make_deserializer = [] { return std::make_shared<ChecksumDeserializer>(); };
  s.input_dtypes.assign(all_dtypes().begin(), all_dtypes().end());  // bytes as they are
  s.integrity.detects_corruption = true;
  s.integrity.version_byte_offset = 0;
  s.integrity.binds_chunk_hash = true;
  s.integrity.chunk_hash_bound_bytes = kChecksumFingerprintBytes;
  s.reference = self_reference(s, "checksum");
  return s;
}

SerdeUnderTest reference_lmcr_serde() {
  const LmcrEncodeOptions options{LmcrFraming::kGzip, 4096, 1};
  SerdeUnderTest s;
  s.name = "lmcr_gzip";
  s.make_serializer = [options] { return std::make_shared<LmcrSerializer>(options); };
  s.make_deserializer = [] { return std::make_shared<LmcrDeserializer>(); };
  s.input_dtypes.assign(all_dtypes().begin(), all_dtypes().end());  // bytes as they are
  s.integrity.detects_corruption = true;                            // both CRC-32s
  s.integrity.version_byte_offset = 4;
  s.reference = self_reference(s, "lmcr");
  return s;
}

namespace {

// The aesgcm frame under either flavor's keys.
SerdeUnderTest aes_gcm_frame_serde(AesGcmFlavor flavor, int aes_bits, bool bind_key) {
  const AesGcmOptions mine = aes_gcm_options(kMasterKey, aes_bits, bind_key, flavor);
  SerdeUnderTest s;
  s.name = std::string(aesgcm_flavor_type(flavor)) + "_" + std::to_string(aes_bits) +
           (bind_key ? "_bind_key" : "");
  s.make_serializer = [mine] { return std::make_shared<AesGcmSerializer>(mine); };
  s.make_deserializer = [mine] { return std::make_shared<AesGcmDeserializer>(mine); };
  s.input_dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  s.integrity.detects_corruption = true;
  s.integrity.version_byte_offset = 0;
  s.integrity.binds_chunk_hash = bind_key;
  s.integrity.binds_whole_key = bind_key;
  s.integrity.binds_cache_salt = true;
  s.integrity.randomized = true;
  s.integrity.nonce_offset = 1;
  s.integrity.nonce_bytes = kAesGcmIvBytes;
  const AesGcmOptions other = aes_gcm_options("another master key", aes_bits, bind_key, flavor);
  s.integrity.make_deserializer_with_other_secret = [other] {
    return std::make_shared<AesGcmDeserializer>(other);
  };
  s.reference = self_reference(s, std::string(aesgcm_flavor_type(flavor)));
  return s;
}

}  // namespace

SerdeUnderTest reference_aes_gcm_serde(int aes_bits, bool bind_key) {
  return aes_gcm_frame_serde(AesGcmFlavor::kAesGcm, aes_bits, bind_key);
}

SerdeUnderTest reference_encrypt_serde(int aes_bits) {
  return aes_gcm_frame_serde(AesGcmFlavor::kEncrypt, aes_bits, false);
}

SerdeUnderTest reference_fp8_checksum_chain() {
  SerdeUnderTest s = reference_fp8_serde(Fp8Format::kE4M3FN);
  auto stages = [] {
    return std::vector<ChainStage>{make_chain_stage(Json{{"type", "fp8"}}),
                                   make_chain_stage(Json{{"type", "checksum"}})};
  };
  s.name = "chain_fp8_checksum";
  s.make_serializer = [stages] { return std::make_shared<ChainSerializer>(stages()); };
  s.make_deserializer = [stages] { return std::make_shared<ChainDeserializer>(stages()); };
  s.integrity.detects_corruption = true;
  s.integrity.version_byte_offset = 0;
  s.integrity.binds_chunk_hash = true;
  s.integrity.chunk_hash_bound_bytes = kChecksumFingerprintBytes;
  s.reference =
      reference_serde(R"({"type": "chain", "stages": [{"type": "fp8"}, {"type": "checksum"}]})");
  return s;
}

SerdeUnderTest reference_fp8_aes_gcm_chain() {
  SerdeUnderTest s = reference_fp8_serde(Fp8Format::kE4M3FN);
  auto stages = [](const char* master) {
    const AesGcmOptions options = aes_gcm_options(master, 256, false);
    ChainStage aes;
    aes.serializer = std::make_shared<AesGcmSerializer>(options);
    aes.deserializer = std::make_shared<AesGcmDeserializer>(options);
    aes.exact_size = [](const MemoryLayoutDesc& l) {
      return l.total_bytes() + kAesGcmOverheadBytes;
    };
    return std::vector<ChainStage>{make_chain_stage(Json{{"type", "fp8"}}), std::move(aes)};
  };
  s.name = "chain_fp8_aesgcm_256";
  s.make_serializer = [stages] { return std::make_shared<ChainSerializer>(stages(kMasterKey)); };
  s.make_deserializer = [stages] {
    return std::make_shared<ChainDeserializer>(stages(kMasterKey));
  };
  s.integrity.detects_corruption = true;
  s.integrity.version_byte_offset = 0;
  s.integrity.binds_cache_salt = true;
  s.integrity.randomized = true;
  s.integrity.nonce_offset = 1;
  s.integrity.nonce_bytes = kAesGcmIvBytes;
  s.integrity.make_deserializer_with_other_secret = [stages] {
    return std::make_shared<ChainDeserializer>(stages("another master key"));
  };
  s.reference = self_reference(s, "chain");
  return s;
}

std::vector<SerdeUnderTest> reference_serdes() {
  return {reference_fp8_serde(Fp8Format::kE4M3FN),
          reference_fp8_serde(Fp8Format::kE5M2),
          reference_fp8_scalar_serde(Fp8Format::kE4M3FN),
          reference_fp8_scalar_serde(Fp8Format::kE5M2),
          reference_checksum_serde(),
          reference_aes_gcm_serde(128, false),
          reference_aes_gcm_serde(256, false),
          reference_aes_gcm_serde(128, true),
          reference_aes_gcm_serde(256, true),
          reference_encrypt_serde(128),
          reference_encrypt_serde(256),
          reference_lmcr_serde(),
          reference_fp8_checksum_chain(),
          reference_fp8_aes_gcm_chain()};
}

ProcessorUnderTest reference_async_processor(const SerdeUnderTest& serde, std::size_t max_workers) {
  ProcessorUnderTest p;
  p.name = "async_" + serde.name + "_w" + std::to_string(max_workers);
  p.make = [serde, max_workers]() -> SerdeProcessorPtr {
    return std::make_unique<AsyncSerdeProcessor>(serde.make_serializer(), serde.make_deserializer(),
                                                 max_workers);
  };
  p.input_dtypes = serde.input_dtypes;
  p.randomized = serde.integrity.randomized;
  p.reference = serde.reference;
  return p;
}

ProcessorUnderTest reference_registry_processor(std::string name, std::string config_json,
                                                const SerdeUnderTest& serde) {
  const Json config = Json::parse(config_json);
  ProcessorUnderTest p;
  p.name = "registry_" + std::move(name);
  p.make = [config]() -> SerdeProcessorPtr { return create_serde_processor(config); };
  p.input_dtypes = serde.input_dtypes;
  p.randomized = serde.integrity.randomized;
  p.reference = serde.reference;
  return p;
}

ProcessorUnderTest reference_async_fp8_processor(Fp8Format format, std::size_t max_workers) {
  Fp8SerdeOptions options{format, Fp8Overflow::kNonSaturating};
  ProcessorUnderTest p;
  p.name = "async_fp8_" + format_suffix(format) + "_w" + std::to_string(max_workers);
  p.make = [options, max_workers]() -> SerdeProcessorPtr {
    return std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(options),
                                                 std::make_shared<Fp8Deserializer>(options),
                                                 max_workers);
  };
  p.input_dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  p.reference = reference_fp8_serde(format).reference;
  return p;
}

AdapterUnderTest reference_mock_adapter() {
  AdapterUnderTest a;
  a.name = "mock";
  a.make = [] { return make_mock(false); };
  a.make_with_capacity = [](std::uint64_t bytes) { return make_mock(false, bytes); };
  // The same adapter as the registry builds it (ConfigTyposRejected).
  a.config = Json{{"type", "mock"},
                  {"max_size_gb", 1},
                  {"mock_bandwidth_gb", 1024},
                  {"lend_load_views", true},
                  {"run_when_idle", false}};
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kUInt8, DType::kFloat32, DType::kBFloat16};
  return a;
}

AdapterUnderTest reference_mock_run_when_idle_adapter() {
  AdapterUnderTest a = reference_mock_adapter();
  a.name = "mock_run_when_idle";
  a.make = [] { return make_mock(true); };
  a.make_with_capacity = [](std::uint64_t bytes) { return make_mock(true, bytes); };
  (*a.config)["run_when_idle"] = true;
  return a;
}

AdapterUnderTest reference_wrapped_mock_adapter() {
  AdapterUnderTest a = adapter_of_wrapper(reference_serde_wrapper());
  a.name = "wrapper_mock_fp8";
  return a;
}

WrapperUnderTest reference_serde_wrapper_configured(std::string name,
                                                    const std::string& serde_wrapper_json) {
  const SerdeWrapperOptions options = wrapper_options_from_json(Json::parse(serde_wrapper_json));
  WrapperUnderTest w;
  w.name = std::move(name);
  w.make = [options](L2AdapterPtr inner, SerdeProcessorPtr serde,
                     std::shared_ptr<L1Manager> l1) -> L2AdapterPtr {
    return std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde),
                                                   std::move(l1), options);
  };
  return w;
}

// The default options spelt out through the config reader, so that the kit also holds the
// reader to the defaults.
WrapperUnderTest reference_serde_wrapper() {
  return reference_serde_wrapper_configured("serde_l2_adapter_wrapper",
                                            R"({"inline_serialize_max_bytes": "auto",
                                                "inline_deserialize_max_bytes": "auto",
                                                "finish_on_submit": true})");
}

WrapperUnderTest reference_serde_wrapper_every_step_submitted() {
  return reference_serde_wrapper_configured("serde_l2_adapter_wrapper_every_step_submitted",
                                            R"({"inline_serialize_max_bytes": 0,
                                                "inline_deserialize_max_bytes": 0,
                                                "finish_on_submit": false})");
}

void register_reference_implementations(Registry& registry) {
  const std::vector<SerdeUnderTest> serdes = reference_serdes();
  for (const SerdeUnderTest& s : serdes) registry.add_serde(s);
  registry.add_processor(reference_async_fp8_processor(Fp8Format::kE4M3FN, 1));
  registry.add_processor(reference_async_fp8_processor(Fp8Format::kE5M2, 3));
  // encrypt is aesgcm's pair under another HKDF label: the processor over it adds nothing the
  // aesgcm ones do not drive; registry_encrypt_256_file (conformance/tools/reference_storage.cc)
  // runs it as a deployment's config builds it. lmcr's processor is the same AsyncSerdeProcessor
  // code over a pair the serde suite already holds to every property.
  for (const SerdeUnderTest& s : serdes) {
    if (s.name.rfind("fp8_", 0) != 0 && s.name.rfind("encrypt_", 0) != 0 &&
        s.name.rfind("lmcr_", 0) != 0) {
      registry.add_processor(reference_async_processor(s, 2));
    }
  }
  // A registry-built processor is held to the serde of the same name (its dtypes and frames).
  const auto registry_processor = [&serdes](const std::string& name, const char* config_json) {
    const auto s = std::find_if(serdes.begin(), serdes.end(),
                                [&name](const SerdeUnderTest& x) { return x.name == name; });
    if (s == serdes.end()) throw std::logic_error("no reference serde named " + name);
    return reference_registry_processor(name, config_json, *s);
  };
  registry.add_processor(registry_processor(
      "fp8_e5m2", R"({"type": "fp8", "fp8_dtype": "float8_e5m2", "max_workers": 2})"));
  registry.add_processor(
      registry_processor("checksum", R"({"type": "checksum", "max_workers": 2})"));
  // lmcr as a deployment's "serde" object builds it (its config reader and factory).
  registry.add_processor(registry_processor(
      "lmcr_gzip",
      R"({"type": "lmcr", "framing": "gzip", "chunk_size": 4096, "level": 1, "max_workers": 2})"));
  // The saturating overflow mode, held to the reference serde of the same config.
  ProcessorUnderTest saturating = registry_processor(
      "fp8_e4m3fn", R"({"type": "fp8", "overflow": "saturating", "max_workers": 2})");
  saturating.name = "registry_fp8_e4m3fn_saturating";
  saturating.reference = reference_serde(R"({"type": "fp8", "overflow": "saturating"})");
  registry.add_processor(std::move(saturating));
  registry.add_processor(registry_processor(
      "chain_fp8_checksum",
      R"({"type": "chain", "stages": [{"type": "fp8"}, {"type": "checksum"}], "max_workers": 3})"));
  registry.add_adapter(reference_mock_adapter());
  registry.add_adapter(reference_mock_run_when_idle_adapter());
  // Also registers each wrapper as an adapter (adapter_of_wrapper), the first the same stack as
  // reference_wrapped_mock_adapter().
  registry.add_wrapper(reference_serde_wrapper());
  registry.add_wrapper(reference_serde_wrapper_every_step_submitted());
}

}  // namespace lmcache::conformance
