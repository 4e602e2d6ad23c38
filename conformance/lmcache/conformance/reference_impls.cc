#include "lmcache/conformance/reference_impls.h"

#include "lmcache/conformance/wrapper_as_adapter.h"

#include <cmath>
#include <memory>
#include <string>

#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
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

L2AdapterPtr make_mock() {
  return std::make_unique<MockL2Adapter>(
      MockL2AdapterOptions{.max_capacity_bytes = kMockCapacityBytes,
                           .bandwidth_bytes_per_sec = kMockBandwidth,
                           .lend_load_views = true});
}

}  // namespace

SerdeUnderTest reference_fp8_serde(Fp8Format format) {
  Fp8SerdeOptions options{format, Fp8Overflow::kNonSaturating};
  SerdeUnderTest s;
  s.name = "fp8_" + format_suffix(format);
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
  return s;
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
  return s;
}

SerdeUnderTest reference_aes_gcm_serde(int aes_bits, bool bind_key) {
  auto options = [aes_bits, bind_key](const char* master) {
    return AesGcmOptions{std::make_shared<AesGcmKeyring>(master, aes_bits), bind_key};
  };
  const AesGcmOptions mine = options("conformance master key");
  SerdeUnderTest s;
  s.name = "aesgcm_" + std::to_string(aes_bits) + (bind_key ? "_bind_key" : "");
  s.make_serializer = [mine] { return std::make_shared<AesGcmSerializer>(mine); };
  s.make_deserializer = [mine] { return std::make_shared<AesGcmDeserializer>(mine); };
  s.input_dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  s.integrity.detects_corruption = true;
  s.integrity.version_byte_offset = 0;
  s.integrity.binds_chunk_hash = bind_key;
  s.integrity.binds_cache_salt = true;
  s.integrity.randomized = true;
  s.integrity.nonce_offset = 1;
  s.integrity.nonce_bytes = kAesGcmIvBytes;
  const AesGcmOptions other = options("another master key");
  s.integrity.make_deserializer_with_other_secret = [other] {
    return std::make_shared<AesGcmDeserializer>(other);
  };
  return s;
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
  return s;
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
  return p;
}

AdapterUnderTest reference_mock_adapter() {
  AdapterUnderTest a;
  a.name = "mock";
  a.make = &make_mock;
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kUInt8, DType::kFloat32, DType::kBFloat16};
  return a;
}

AdapterUnderTest reference_wrapped_mock_adapter() {
  AdapterUnderTest a = adapter_of_wrapper(reference_serde_wrapper());
  a.name = "wrapper_mock_fp8";
  return a;
}

WrapperUnderTest reference_serde_wrapper() {
  WrapperUnderTest w;
  w.name = "serde_l2_adapter_wrapper";
  w.make = [](L2AdapterPtr inner, SerdeProcessorPtr serde,
              std::shared_ptr<L1Manager> l1) -> L2AdapterPtr {
    return std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde),
                                                   std::move(l1));
  };
  return w;
}

void register_reference_implementations(Registry& registry) {
  registry.add_serde(reference_fp8_serde(Fp8Format::kE4M3FN));
  registry.add_serde(reference_fp8_serde(Fp8Format::kE5M2));
  registry.add_processor(reference_async_fp8_processor(Fp8Format::kE4M3FN, 1));
  registry.add_processor(reference_async_fp8_processor(Fp8Format::kE5M2, 3));
  registry.add_adapter(reference_mock_adapter());
  // Also registers the wrapper as an adapter (adapter_of_wrapper), the same stack as
  // reference_wrapped_mock_adapter().
  registry.add_wrapper(reference_serde_wrapper());
}

}  // namespace lmcache::conformance
