// File: lmcache/fp8/internal/fp8_bits.h
//
// Per-element fp8 conversions written once for every fast backend: the CPU SIMD kernels use
// them for tails (and their vector code is the same arithmetic lane by lane), and the CUDA
// kernels call them as `__host__ __device__` functions. They must agree byte for byte
// with the scalar reference codec (lmcache/fp8/fp8_codec.h, the oracle), NaN bit patterns
// included; fp8_bits_test.cc checks that on every 16-bit input and a dense float32 sample.
//
// Encoding, in the terms of the reference codec (fp8_codec.cc): a source float of `M` mantissa
// bits and bias `B` has |x| bits `a`, biased exponent `e = a >> M` and significand `sig`
// (implicit bit included). emin = B + 1 - bias8 is the biased exponent of the fp8 minimum
// normal and S = M - m the mantissa bits dropped. Every step rounds once, to nearest even, with
// a constant shift:
//   - normal (e >= emin, overflow included):
//       code = ((a + 2^(S-1) - 1 + ((a >> S) & 1)) >> S) - ((emin - 1) << m)
//     The shift sees a = sig + ((e - 1) << M), a multiple of the quantum on top of sig, so this
//     is RNE(sig / quantum) plus the binade's first code; a carry out of the mantissa lands on
//     the next binade's first code by itself.
//   - subnormal (emin - m - 1 <= e < emin): the quantum is the fixed 2^(emin - m) of the fp8
//     minimum binade. With j = e - (emin - m - 1) in [0, m], y = sig << j is |x| scaled so that
//     the quantum is 2^(M + 1): code = RNE(y >> (M + 1)), 0..2^m (2^m = the minimum normal).
//   - below that |x| is at most half the smallest subnormal (a tie at exactly half, to even):
//     code 0. Source subnormals always land here, except for float16 -> e5m2, whose minimum
//     exponents coincide: there the normal form holds for every input (kAlwaysFast).
// The grid continued past the largest finite code is the "virtual v[N]" of docs/fp8.md §3.5
// §2, so min(code, N) gives the overflow code (NaN 0x7F for e4m3fn, inf 0x7C for e5m2), or max
// finite when saturating; inf and NaN inputs (e all ones) land there too, and NaN is then
// forced to 0x7F. The sign bit is ORed in last, always. float16 is handled in its own format
// (M = 10, B = 15), which is the same as widening it exactly to float32 first; bfloat16 is
// either the top half of a float32 or its own format (M = 7, B = 127).
//
// Decoding is exact arithmetic: normal codes move their exponent/mantissa field into place and
// rebias with one add; subnormal codes (at most 7) convert their mantissa to float and scale by
// a power of two, which is exact and so independent of rounding mode and FTZ/DAZ (no operand
// or result is a float32 denormal).
#pragma once

#include <cstdint>
#include <cstring>

#include "lmcache/fp8/fp8_codec.h"

#if defined(__CUDACC__)
#define LMCACHE_FP8_HD __host__ __device__ __forceinline__
#else
#define LMCACHE_FP8_HD inline
#endif

namespace lmcache::fp8_internal::fp8_bits {

// The constants of one fp8 format: mantissa bits, exponent bias, the code an overflow becomes
// when not saturating, and the largest finite code.
template <std::uint32_t kMant, std::uint32_t kBiasFp8, std::uint32_t kOverflow,
          std::uint32_t kMaxFiniteCode>
struct Fp8Constants {
  static constexpr std::uint32_t kMantBits = kMant;
  static constexpr std::uint32_t kBias = kBiasFp8;
  static constexpr std::uint32_t kOverflowCode = kOverflow;
  static constexpr std::uint32_t kMaxFinite = kMaxFiniteCode;
};

// Fp8Traits<kFormat>: the Fp8Constants of one format.
template <Fp8Format kFormat>
struct Fp8Traits;

// Overflow: NaN (0x7F); largest finite 0x7E = 448.
template <>
struct Fp8Traits<Fp8Format::kE4M3FN> : Fp8Constants<3, 7, 0x7F, 0x7E> {};

// Overflow: inf (0x7C); largest finite 0x7B = 57344.
template <>
struct Fp8Traits<Fp8Format::kE5M2> : Fp8Constants<2, 15, 0x7C, 0x7B> {};

// The constants of one source float format (the bits live in the low kWidth bits of a u32).
template <std::uint32_t kMant, std::uint32_t kBiasSrc, std::uint32_t kWidthBits>
struct SrcTraits {
  static constexpr std::uint32_t kMantBits = kMant;
  static constexpr std::uint32_t kBias = kBiasSrc;
  static constexpr std::uint32_t kWidth = kWidthBits;
  static constexpr std::uint32_t kAbsMask = (1u << (kWidthBits - 1)) - 1u;
  static constexpr std::uint32_t kInfBits = kAbsMask & ~((1u << kMant) - 1u);
};
using F32Src = SrcTraits<23, 127, 32>;
using F16Src = SrcTraits<10, 15, 16>;
using BF16Src = SrcTraits<7, 127, 16>;  // for kernels that keep bfloat16 in 16-bit lanes

// The encode constants for one (source, fp8 format, overflow) combination.
template <class Src, Fp8Format kFormat, bool kSaturate>
struct EncodeConsts {
  using F = Fp8Traits<kFormat>;
  static constexpr std::uint32_t kEmin = Src::kBias + 1 - F::kBias;  // biased, source terms
  static constexpr std::uint32_t kShift0 = Src::kMantBits - F::kMantBits;
  static constexpr std::uint32_t kClampCode = kSaturate ? F::kMaxFinite : F::kOverflowCode;
  static constexpr std::uint32_t kSignShift = Src::kWidth - 8;
  static constexpr std::uint32_t kHalfMinus1 = (1u << (kShift0 - 1)) - 1u;
  static constexpr std::uint32_t kOffset = (kEmin - 1) << F::kMantBits;
  static constexpr std::uint32_t kNormalMin = kEmin << Src::kMantBits;  // smallest normal a
  static constexpr bool kAlwaysFast = kEmin == 1;  // float16 -> e5m2: no subnormal case
  // Subnormal case: e of j = 0, and the largest a that encodes to 0.
  static constexpr std::uint32_t kSubBase = kAlwaysFast ? 1 : kEmin - F::kMantBits - 1;
  static constexpr std::uint32_t kTinyMax = kAlwaysFast ? 0 : kSubBase << Src::kMantBits;
  static constexpr std::uint32_t kSubShift = Src::kMantBits + 1;
};

LMCACHE_FP8_HD std::uint32_t min_u32(std::uint32_t a, std::uint32_t b) { return a < b ? a : b; }

// encode_bits<Src, kFormat, kSaturate>()
//
// One source value (its bits in the low Src::kWidth bits of `x`) -> fp8 code, by the three
// cases of the file comment; the SIMD kernels compute the same cases lane by lane.
template <class Src, Fp8Format kFormat, bool kSaturate>
LMCACHE_FP8_HD std::uint8_t encode_bits(std::uint32_t x) {
  using C = EncodeConsts<Src, kFormat, kSaturate>;
  const std::uint32_t sign = (x >> C::kSignShift) & 0x80u;
  const std::uint32_t a = x & Src::kAbsMask;
  std::uint32_t code;
  if (C::kAlwaysFast || a >= C::kNormalMin) {
    const std::uint32_t rounded = (a + C::kHalfMinus1 + ((a >> C::kShift0) & 1u)) >> C::kShift0;
    code = min_u32(rounded - C::kOffset, C::kClampCode);
  } else if (a > C::kTinyMax) {
    const std::uint32_t j = (a >> Src::kMantBits) - C::kSubBase;
    const std::uint32_t y = ((a & ((1u << Src::kMantBits) - 1u)) | (1u << Src::kMantBits)) << j;
    code = (y + ((1u << (C::kSubShift - 1)) - 1u) + ((y >> C::kSubShift) & 1u)) >> C::kSubShift;
  } else {
    code = 0;
  }
  if (a > Src::kInfBits) code = 0x7Fu;  // NaN, both formats
  return static_cast<std::uint8_t>(code | sign);
}

template <Fp8Format kFormat, bool kSaturate>
LMCACHE_FP8_HD std::uint8_t encode_f32_bits(std::uint32_t bits) {
  return encode_bits<F32Src, kFormat, kSaturate>(bits);
}
template <Fp8Format kFormat, bool kSaturate>
LMCACHE_FP8_HD std::uint8_t encode_f16_bits(std::uint16_t bits) {
  return encode_bits<F16Src, kFormat, kSaturate>(bits);
}
template <Fp8Format kFormat, bool kSaturate>
LMCACHE_FP8_HD std::uint8_t encode_bf16_bits(std::uint16_t bits) {
  return encode_bits<F32Src, kFormat, kSaturate>(static_cast<std::uint32_t>(bits) << 16);
}

// The decode constants of one fp8 format, for a float32 result.
template <Fp8Format kFormat>
struct DecodeConsts {
  using F = Fp8Traits<kFormat>;
  static constexpr std::uint32_t kFieldShift = 23 - F::kMantBits;    // code field -> f32 bits
  static constexpr std::uint32_t kRebias = (127 - F::kBias) << 23;   // exponent bias difference
  static constexpr std::uint32_t kFirstNormal = 1u << F::kMantBits;  // 8 / 4
  // Subnormal code m has value m * 2^(1 - bias - mantissa bits).
  static constexpr float kSubnormalScale = kFormat == Fp8Format::kE4M3FN ? 0x1p-9f : 0x1p-16f;
};

LMCACHE_FP8_HD std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// decode_f32_bits<kFormat>()
//
// fp8 code -> float32 bits, exactly as the reference: finite codes and e5m2 inf exact, NaNs
// with the quiet bit set, the fp8 mantissa at the top of the f32 mantissa and the sign kept
// (e4m3fn 0x7F -> 0x7FF00000; e5m2 0x7D/0x7E/0x7F -> 0x7FE00000/0x7FC00000/0x7FE00000).
template <Fp8Format kFormat>
LMCACHE_FP8_HD std::uint32_t decode_f32_bits(std::uint8_t code) {
  using C = DecodeConsts<kFormat>;
  const std::uint32_t v = code & 0x7Fu;
  const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80u) << 24;
  std::uint32_t r;
  if (v < C::kFirstNormal) {
    r = float_bits(static_cast<float>(v) * C::kSubnormalScale);
  } else {
    r = (v << C::kFieldShift) + C::kRebias;
  }
  // The all-ones exponent field (e4m3fn: only 0x7F; e5m2: 0x7C..0x7F) needs the exponent
  // rebias applied twice to reach 0xFF; an e5m2 NaN also gets the quiet bit.
  if constexpr (kFormat == Fp8Format::kE4M3FN) {
    if (v == 0x7Fu) r += C::kRebias;
  } else {
    if (v >= 0x7Cu) r += C::kRebias;
    if (v > 0x7Cu) r |= 0x00400000u;
  }
  return r | sign;
}

// decode_f16_bits<kFormat>()
//
// fp8 code -> float16 bits as x86 vcvtps2ph narrows the float32 result: exact for finite codes;
// NaNs keep the sign and the top mantissa bits (e4m3fn 0x7F80; e5m2 0x7D/0x7F -> 0x7F00,
// 0x7E -> 0x7E00). e5m2 is the top byte of a float16, so only its NaNs need the quiet bit.
template <Fp8Format kFormat>
LMCACHE_FP8_HD std::uint16_t decode_f16_bits(std::uint8_t code) {
  if constexpr (kFormat == Fp8Format::kE5M2) {
    std::uint32_t h = static_cast<std::uint32_t>(code) << 8;
    if ((h & 0x7FFFu) > 0x7C00u) h |= 0x0200u;
    return static_cast<std::uint16_t>(h);
  } else {
    // Every non-zero e4m3fn value is a float16 normal (2^-9 >= 2^-14), so narrowing the f32
    // bits is a shift and a rebias.
    const std::uint32_t v = code & 0x7Fu;
    const std::uint32_t sign = static_cast<std::uint32_t>(code & 0x80u) << 8;
    const std::uint32_t a = decode_f32_bits<kFormat>(code) & 0x7FFFFFFFu;
    std::uint32_t h = (a >> 13) - ((127 - 15) << 10);
    if (v == 0) h = 0;
    if (v == 0x7Fu) h = 0x7F80u;
    return static_cast<std::uint16_t>(h | sign);
  }
}

// decode_bf16_bits<kFormat>()
//
// fp8 code -> bfloat16 bits: the top half of the float32 result, except that every NaN becomes
// 0x7FC0 with the sign dropped (c10's round_to_nearest_even).
template <Fp8Format kFormat>
LMCACHE_FP8_HD std::uint16_t decode_bf16_bits(std::uint8_t code) {
  const std::uint32_t v = code & 0x7Fu;
  const bool nan = kFormat == Fp8Format::kE4M3FN ? v == 0x7Fu : v > 0x7Cu;
  if (nan) return 0x7FC0u;
  return static_cast<std::uint16_t>(decode_f32_bits<kFormat>(code) >> 16);
}

}  // namespace lmcache::fp8_internal::fp8_bits
