// File: lmcache/bench/simd_fp8_serde.h
//
// A benchmark-only stand-in for the fp8 serde routed to the fast kernels: the same wire format
// and bytes as the reference Fp8Serializer / Fp8Deserializer (lmcache/serde/fp8_serde.h), but
// each group goes through lmcache::devices::fp8_encode_fast / fp8_decode_fast (SIMD, one
// thread) instead of the scalar reference codec. The reference serde calls the scalar codec
// today (~0.1-0.3 GB/s on bfloat16 here, against ~10 GB/s for the SIMD kernels), which hides
// every other cost of the wrapper; this stand-in shows what the wrapper's own overhead costs
// once the serde is fast. It is registered as serde type "fp8_simd" by lmcache-bench (and
// as conformance serdes "fp8_simd_e4m3fn" / "fp8_simd_e5m2" for the serde/ suite), never in
// production code.
//
// Buffer rules are a subset of the reference serde's: the byte side must be one or more uint8
// groups of at least total_elements bytes; violations throw std::invalid_argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lmcache/conformance/registry.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::bench {

// `simd_target`: a Highway target bit to pin (see devices::KernelOptions), 0 for the best one
// this CPU supports.
class SimdFp8Serializer final : public Serializer {
 public:
  explicit SimdFp8Serializer(Fp8Format format = Fp8Format::kE4M3FN, std::int64_t simd_target = 0)
      : format_(format), simd_target_(simd_target) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst) override;
  // int(1.5 * elements), as the reference serde.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

 private:
  Fp8Format format_;
  std::int64_t simd_target_;
};

class SimdFp8Deserializer final : public Deserializer {
 public:
  explicit SimdFp8Deserializer(Fp8Format format = Fp8Format::kE4M3FN, std::int64_t simd_target = 0)
      : format_(format), simd_target_(simd_target) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst) override;

 private:
  Fp8Format format_;
  std::int64_t simd_target_;
};

// simd_target_bit()
//
// The target bit of Highway's target `name` ("SSE4", "AVX2", ...) among those compiled in and
// supported here; throws std::invalid_argument naming it (and the available ones) otherwise.
std::int64_t simd_target_bit(const std::string& name);

// The serde registry type name of the stand-in.
inline constexpr const char* kSimdFp8SerdeType = "fp8_simd";

// register_simd_fp8_serde()
//
// Registers "fp8_simd" ({"fp8_dtype": ..., "max_workers": n, "simd_target": "SSE4"}; defaults
// e4m3fn, 1 and the best target) with the
// process's serde registry, once (later calls do nothing), and adds the conformance
// descriptors "fp8_simd_e4m3fn" / "fp8_simd_e5m2" to `registry` when it is not null.
void register_simd_fp8_serde(conformance::Registry* registry);

}  // namespace lmcache::bench
