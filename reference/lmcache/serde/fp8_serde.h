// File: lmcache/serde/fp8_serde.h
//
// The built-in fp8 quantisation serde (docs/fp8.md §1), registered as "fp8":
//   {"type": "fp8", "fp8_dtype": "float8_e4m3fn" | "float8_e5m2",
//    "max_workers": 1, "overflow": "nonsaturating" | "saturating",
//    "kernel": "auto" | "scalar" | "simd" | "cuda", "simd_target": "AVX2" | "SSE4" | ...}
// `kernel` and `simd_target` choose how the bytes are computed, never which bytes (every
// backend and SIMD target gives the same; docs/devices.md): benchmarks pin one with them.
//
// Wire format: one fp8 code per element, row-major, the groups of the source layout packed
// back to back in layout order, no header and no padding. Shapes and dtypes are not stored:
// the deserializer takes them from its destination. The byte values are those of PyTorch's
// casts (fp8_codec.h), so the bytes are wire-compatible with LMCache.
//
// Buffer rules:
//   - serialize reads each group of `src` through its layout and may write up to
//     dst.physical_size() bytes: the destination's logical size is an output (the processor
//     narrows it to the count written), so a temp narrowed by an earlier serialize can be
//     reused. It writes exactly total_elements bytes; the bytes after them stay untouched.
//   - deserialize reads src.size() bytes (the logical, possibly narrowed, size: what L2 gave
//     back) and writes every group of `dst` in its own dtype.
//   - A byte buffer is a MemoryObj whose groups are all uint8 (any shapes) or all of this
//     serde's fp8 dtype; in the fp8 case its groups' element counts must match the tensor
//     side's groups one to one. Anything else is a group layout mismatch.
// Every check happens before the first byte is written, so a failed call writes nothing.
//
// This file needs no ATen: the codec works on raw bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lmcache/core/config.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

inline constexpr std::string_view kFp8SerdeType = "fp8";

// The fp8 kernel backend that computes the bytes (devices' fp8_encode_fast / fp8_decode_fast):
// kAuto picks the fastest one usable here.
enum class Fp8SerdeKernel : std::uint8_t { kAuto, kScalar, kSimd, kCuda };

// "auto", "scalar", "simd", "cuda".
std::string_view fp8_serde_kernel_name(Fp8SerdeKernel kernel);

struct Fp8SerdeOptions {
  Fp8Format format = Fp8Format::kE4M3FN;
  Fp8Overflow overflow = Fp8Overflow::kNonSaturating;
  Fp8SerdeKernel kernel = Fp8SerdeKernel::kAuto;
  // With kernel kSimd or kAuto: the Highway target to pin ("AVX2", "SSE4", ...); empty for the
  // best one this CPU supports.
  std::string simd_target = {};

  friend bool operator==(const Fp8SerdeOptions&, const Fp8SerdeOptions&) = default;
};

class Fp8Serializer final : public Serializer {
 public:
  // Throws std::invalid_argument for a simd_target that is not available here (named, with
  // the available ones) or that is given with kernel kScalar or kCuda.
  explicit Fp8Serializer(Fp8SerdeOptions options = {});

  // serialize()
  //
  // Encodes every group of `src` (float32, float16 or bfloat16; groups may differ) and returns
  // src.layout().total_elements(). Throws std::invalid_argument, writing nothing, for an
  // unsupported dtype (named, with its group index), "destination buffer too small: got A
  // bytes, need B", or a destination that is not a byte buffer of this format.
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  // estimate_serialized_size()
  //
  // int(1.5 * total elements), rounded down: the exact size plus the seed's 50% headroom.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

  const Fp8SerdeOptions& options() const { return options_; }

 private:
  const Fp8SerdeOptions options_;
  const std::int64_t simd_target_bit_;  // options_.simd_target resolved; 0 = best
};

class Fp8Deserializer final : public Deserializer {
 public:
  // As Fp8Serializer's.
  explicit Fp8Deserializer(Fp8SerdeOptions options = {});

  // deserialize()
  //
  // Decodes the first dst.layout().total_elements() bytes of `src` into the groups of `dst`,
  // each in its own dtype (float32, float16 or bfloat16). Throws std::invalid_argument,
  // writing nothing, for "source buffer too small: got A bytes, need B" (A = src.size()), an
  // unsupported destination dtype, or a source that is not a byte buffer of this format.
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  const Fp8SerdeOptions& options() const { return options_; }

 private:
  const Fp8SerdeOptions options_;
  const std::int64_t simd_target_bit_;
};

// Fp8SerdeConfig: the parsed kwargs of an "fp8" serde config.
struct Fp8SerdeConfig {
  Fp8SerdeOptions options;
  std::size_t max_workers = 1;

  // Upper bound of max_workers: a typo must not start thousands of threads.
  static constexpr std::size_t kMaxWorkers = 1024;

  // from_json()
  //
  // Reads the kwargs (the config without "type"). Throws std::invalid_argument naming the key
  // for an unknown key, a fp8_dtype, overflow or kernel outside the accepted names (listed in
  // the message), a max_workers that is not an integer in [1, kMaxWorkers] (an integral float
  // such as 2.0 is accepted), or a simd_target that is not available here or is given with
  // kernel "scalar" or "cuda".
  static Fp8SerdeConfig from_json(const Json& kwargs);
};

// make_fp8_serde_processor()
//
// The "fp8" factory: an AsyncSerdeProcessor over an Fp8Serializer / Fp8Deserializer pair
// built from Fp8SerdeConfig::from_json(kwargs).
SerdeProcessorPtr make_fp8_serde_processor(const Json& kwargs);

}  // namespace lmcache
