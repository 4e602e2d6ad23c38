#include "lmcache/bench/simd_fp8_serde.h"

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "lmcache/conformance/reference_impls.h"
#include "lmcache/devices/fp8_kernels.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_registry.h"

namespace lmcache::bench {
namespace {

void check_byte_side(const char* who, const MemoryLayoutDesc& bytes) {
  for (DType d : bytes.dtypes()) {
    if (d != DType::kUInt8) {
      throw std::invalid_argument(std::string(who) + ": byte buffer must be uint8, got " +
                                  bytes.to_string());
    }
  }
}

devices::KernelOptions one_thread_simd(std::int64_t target) {
  return {.threads = 1, .backend = devices::Fp8Backend::kSimd, .simd_target = target};
}

}  // namespace

std::int64_t simd_target_bit(const std::string& name) {
  std::string available;
  for (std::int64_t t : devices::fp8_simd_targets()) {
    if (devices::fp8_simd_target_name(t) == name) return t;
    available += (available.empty() ? "" : ", ") + devices::fp8_simd_target_name(t);
  }
  throw std::invalid_argument("SIMD target '" + name +
                              "' is not available here (available: " + available + ")");
}

std::size_t SimdFp8Serializer::serialize(const MemoryObj& src, MemoryObj& dst) {
  const MemoryLayoutDesc& layout = src.layout();
  check_byte_side("fp8_simd serializer", dst.layout());
  const std::size_t need = layout.total_elements();
  if (dst.physical_size() < need) {
    throw std::invalid_argument("fp8_simd serializer: destination buffer too small: got " +
                                std::to_string(dst.physical_size()) + " bytes, need " +
                                std::to_string(need));
  }
  auto* out = reinterpret_cast<std::uint8_t*>(dst.data());
  std::size_t offset = 0;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const std::size_t n = layout.group_elements(g);
    if (n == 0) continue;
    devices::fp8_encode_fast(src.group_bytes(g), layout.dtypes()[g], n,
                             std::span<std::uint8_t>(out + offset, n), format_,
                             Fp8Overflow::kNonSaturating, one_thread_simd(simd_target_));
    offset += n;
  }
  return need;
}

std::size_t SimdFp8Serializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  const std::size_t n = layout.total_elements();
  return n + n / 2;
}

void SimdFp8Deserializer::deserialize(const MemoryObj& src, MemoryObj& dst) {
  const MemoryLayoutDesc& layout = dst.layout();
  check_byte_side("fp8_simd deserializer", src.layout());
  const std::size_t need = layout.total_elements();
  if (src.size() < need) {
    throw std::invalid_argument("fp8_simd deserializer: source buffer too small: got " +
                                std::to_string(src.size()) + " bytes, need " +
                                std::to_string(need));
  }
  const auto* in = reinterpret_cast<const std::uint8_t*>(src.data());
  std::size_t offset = 0;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const std::size_t n = layout.group_elements(g);
    if (n == 0) continue;
    devices::fp8_decode_fast(std::span<const std::uint8_t>(in + offset, n), n, dst.group_bytes(g),
                             layout.dtypes()[g], format_, one_thread_simd(simd_target_));
    offset += n;
  }
}

void register_simd_fp8_serde(conformance::Registry* registry) {
  static const bool registered = [] {
    register_serde_factory(kSimdFp8SerdeType, [](const Json& kwargs) -> SerdeProcessorPtr {
      Json rest = kwargs;
      std::int64_t target = 0;
      if (rest.contains("simd_target")) {
        target = simd_target_bit(rest.at("simd_target").get<std::string>());
        rest.erase("simd_target");
      }
      // The reference parser validates the other keys; overflow stays non-saturating here.
      const Fp8SerdeConfig c = Fp8SerdeConfig::from_json(rest);
      return std::make_unique<AsyncSerdeProcessor>(
          std::make_shared<SimdFp8Serializer>(c.options.format, target),
          std::make_shared<SimdFp8Deserializer>(c.options.format, target), c.max_workers);
    });
    return true;
  }();
  (void)registered;
  if (registry == nullptr) return;
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    // The reference descriptor's declarations (dtypes, bounds) with the SIMD pair.
    conformance::SerdeUnderTest d = conformance::ReferenceFp8Serde(format);
    d.name = format == Fp8Format::kE4M3FN ? "fp8_simd_e4m3fn" : "fp8_simd_e5m2";
    d.make_serializer = [format] { return std::make_shared<SimdFp8Serializer>(format); };
    d.make_deserializer = [format] { return std::make_shared<SimdFp8Deserializer>(format); };
    d.make_multi_serializer = nullptr;
    d.make_multi_deserializer = nullptr;
    registry->add_serde(std::move(d));
  }
}

}  // namespace lmcache::bench
