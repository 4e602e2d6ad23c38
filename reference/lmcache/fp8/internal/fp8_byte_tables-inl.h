// File: lmcache/fp8/internal/fp8_byte_tables-inl.h
//
// The AVX3_DL (VBMI) byte-table paths of the fp8 kernels: the normal case of an encode
// (TableCodes, float32 through JamToBFloat16) and the whole decode (DecodeByTable), each a few
// 128-byte permutes per 64 elements. The tables come from fp8_bits.h, so their bytes are the
// reference's. On every other target this file declares only kTableStep (false).
// Per-target Highway code, re-included once per SIMD target through fp8_kernels-inl.h (hence
// the toggling include guard).

#if defined(LMCACHE_FP8_BYTE_TABLES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LMCACHE_FP8_BYTE_TABLES_INL_H_
#undef LMCACHE_FP8_BYTE_TABLES_INL_H_
#else
#define LMCACHE_FP8_BYTE_TABLES_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "lmcache/fp8/internal/fp8_bits.h"
#include "lmcache/fp8/internal/fp8_simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lmcache::fp8_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether EncodeNormalStep goes by byte tables: on AVX3_DL, for 16-bit sources whose rounding
// reads only the low byte (see MakeEncodeTables), and for float32 -> e4m3fn through bfloat16
// with the dropped bits' stickiness kept (see JamToBFloat16; 1.15x at 1 MiB on Zen 4, where
// float32 -> e5m2, whose one-pass loop tests the range first, measured no gain).
template <class Src, Fp8Format kFormat, bool kSaturate, class T, std::size_t kUnroll>
inline constexpr bool kTableStep =
    HWY_TARGET == HWY_AVX3_DL &&
    ((sizeof(T) == 2 && kUnroll == 2 &&
      fp8_bits::EncodeConsts<Src, kFormat, kSaturate>::kShift0 <= 7) ||
     (sizeof(T) == 4 && kUnroll == 4 && kFormat == Fp8Format::kE4M3FN));

#if HWY_TARGET == HWY_AVX3_DL
// The byte tables of a 16-bit source's normal case (EncodeNormalLanes), for VBMI lookups.
// With the magnitude's high byte h and low byte l, the code before its clamp is
//   RNE(a >> S) - kOffset = (h << (8 - S)) - kOffset + (l >> S) + roundup(l),
// a sum of a function of h and one of l whenever the rounding reads only l (S <= 7: every
// 16-bit mode but float16 -> e5m2, which is a shift already). byte_a[h] holds the first
// (saturated to 0x80 above 0x7F, so that an unsigned saturating add and the clamp give the
// clamp code; 0 below 0: those lanes are below the normal range and redone), byte_b[l] the
// second. Both come from fp8_bits.h's constants.
struct EncodeTables {
  alignas(64) std::uint8_t byte_a[128];
  alignas(64) std::uint8_t byte_b[256];
};

template <class Src, Fp8Format kFormat, bool kSaturate>
constexpr EncodeTables MakeEncodeTables() {
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  static_assert(Src::kWidth == 16 && C::kShift0 >= 1 && C::kShift0 <= 7);
  EncodeTables t{};
  constexpr unsigned kS = C::kShift0;
  for (unsigned h = 0; h < 128; ++h) {
    const int a = static_cast<int>(h << (8 - kS)) - static_cast<int>(C::kOffset);
    t.byte_a[h] = static_cast<std::uint8_t>(a < 0 ? 0 : a > 0x7F ? 0x80 : a);
  }
  for (unsigned l = 0; l < 256; ++l) {
    const unsigned rem = l & ((1u << kS) - 1u);
    const unsigned half = 1u << (kS - 1);
    const unsigned up = (rem > half || (rem == half && ((l >> kS) & 1u) != 0)) ? 1u : 0u;
    t.byte_b[l] = static_cast<std::uint8_t>((l >> kS) + up);
  }
  return t;
}

// Built at compile time: the hot loop reads them with no initialisation guard.
template <class Src, Fp8Format kFormat, bool kSaturate>
inline constexpr EncodeTables kEncodeTables = MakeEncodeTables<Src, kFormat, kSaturate>();

// TableCodes<Src, kFormat, kSaturate>()
//
// The codes of 64 16-bit elements (x0: elements 0-31, x1: 32-63) by kEncodeTables, as bytes in
// element order, exact for every element not below the normal range; below16[k]: the elements of
// x_k below it. The elements' high and low bytes are gathered into one vector each, looked up,
// added with unsigned saturation and clamped; then NaN and the sign.
template <class Src, Fp8Format kFormat, bool kSaturate>
HWY_INLINE __m512i TableCodes(__m512i x0, __m512i x1, __mmask32 (&below16)[2]) {
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  const EncodeTables& tables = kEncodeTables<Src, kFormat, kSaturate>;
  // Byte j of the gathers is element j's high / low byte (x1's bytes are indexes 64-127).
  alignas(64) static constexpr std::uint8_t kHigh[64] = {
      1,  3,  5,   7,   9,   11,  13,  15,  17,  19,  21,  23,  25,  27,  29,  31,
      33, 35, 37,  39,  41,  43,  45,  47,  49,  51,  53,  55,  57,  59,  61,  63,
      65, 67, 69,  71,  73,  75,  77,  79,  81,  83,  85,  87,  89,  91,  93,  95,
      97, 99, 101, 103, 105, 107, 109, 111, 113, 115, 117, 119, 121, 123, 125, 127};
  const __m512i high_index = _mm512_load_si512(kHigh);
  const __m512i low_index = _mm512_sub_epi8(high_index, _mm512_set1_epi8(1));
  const __m512i high = _mm512_permutex2var_epi8(x0, high_index, x1);
  const __m512i low = _mm512_permutex2var_epi8(x0, low_index, x1);
  const __m512i a = _mm512_permutex2var_epi8(_mm512_load_si512(tables.byte_a), high,
                                             _mm512_load_si512(tables.byte_a + 64));
  const __m512i b =
      _mm512_mask_blend_epi8(_mm512_movepi8_mask(low),
                             _mm512_permutex2var_epi8(_mm512_load_si512(tables.byte_b), low,
                                                      _mm512_load_si512(tables.byte_b + 64)),
                             _mm512_permutex2var_epi8(_mm512_load_si512(tables.byte_b + 128), low,
                                                      _mm512_load_si512(tables.byte_b + 192)));
  __m512i code =
      _mm512_min_epu8(_mm512_adds_epu8(a, b), _mm512_set1_epi8(static_cast<char>(C::kClampCode)));
  const __m512i abs_mask = _mm512_set1_epi16(static_cast<short>(Src::kAbsMask));
  const __m512i abs0 = _mm512_and_si512(x0, abs_mask);
  const __m512i abs1 = _mm512_and_si512(x1, abs_mask);
  const __m512i normal_min = _mm512_set1_epi16(static_cast<short>(C::kNormalMin));
  below16[0] = _mm512_cmplt_epi16_mask(abs0, normal_min);
  below16[1] = _mm512_cmplt_epi16_mask(abs1, normal_min);
  if constexpr (kFormat != Fp8Format::kE4M3FN || kSaturate) {  // NaN: 0x7F, not the clamp
    const __m512i inf = _mm512_set1_epi16(static_cast<short>(Src::kInfBits));
    const __mmask64 nan =
        _mm512_kunpackd(_mm512_cmpgt_epi16_mask(abs1, inf), _mm512_cmpgt_epi16_mask(abs0, inf));
    code = _mm512_mask_blend_epi8(nan, code, _mm512_set1_epi8(0x7F));
  }
  // The sign: bit 7 of the high byte.
  return _mm512_ternarylogic_epi32(code, high, _mm512_set1_epi8(static_cast<char>(0x80)), 0xF8);
}

// JamToBFloat16()
//
// float32 bits -> bfloat16 bits in the low half of each 32-bit lane, truncated, with bit 0 set
// when any dropped bit was (the sticky bit). Every float32 -> fp8 rounding drops at least
// bfloat16's 4 lowest mantissa bits, and bit 0 is below the rounding bit of all of them, so
// the fp8 code of the result equals the float32 element's; so do its range (below the normal
// range or not, NaN or not: a NaN whose payload is in the dropped bits keeps a set bit) and
// sign.
HWY_INLINE __m512i JamToBFloat16(__m512i x) {
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __mmask16 sticky = _mm512_test_epi32_mask(x, _mm512_set1_epi32(0xFFFF));
  return _mm512_mask_or_epi32(high, sticky, high, _mm512_set1_epi32(1));
}
#endif  // HWY_TARGET == HWY_AVX3_DL

#if HWY_TARGET == HWY_AVX3_DL
// The decoded bits of every code in two byte planes, for 64-entry-pair byte lookups (VBMI's
// vpermi2b): lo[c] and hi[c] are the low and high bytes of the 16-bit result (float16 /
// bfloat16), or of the float32 result's high half (every fp8 value is exact in the top 16 bits
// of a float32: its low half is 0). From the scalar functions, so every code, NaN and sign
// included, decodes exactly as fp8_bits.h says.
struct DecodePlanes {
  alignas(64) std::uint8_t lo[128];  // the low byte does not depend on the sign
  alignas(64) std::uint8_t hi[256];
};

template <DstKind kKind, Fp8Format kFormat>
const DecodePlanes& GetDecodePlanes() {
  static const DecodePlanes planes = [] {
    DecodePlanes p{};
    for (unsigned c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const std::uint16_t bits =
          kKind == DstKind::kF32
              ? static_cast<std::uint16_t>(fp8_bits::decode_f32_bits<kFormat>(code) >> 16)
          : kKind == DstKind::kF16 ? fp8_bits::decode_f16_bits<kFormat>(code)
                                   : fp8_bits::decode_bf16_bits<kFormat>(code);
      if (c < 128) p.lo[c] = static_cast<std::uint8_t>(bits);
      p.hi[c] = static_cast<std::uint8_t>(bits >> 8);
    }
    return p;
  }();
  return planes;
}

// DecodeByTable<kKind, kFormat, kStream>()
//
// Decodes 64 codes per step by table lookup: one vpermi2b for the low bytes, two and a blend on
// the sign for the high bytes, then in-lane unpacks widen them to 16-bit (or, with zeros
// below, float32) results. The unpacks interleave within 128-bit blocks, so the codes are first
// permuted such that the results come out in order. Leaves the last n % 64 codes to the caller
// (*done: how many were decoded).
template <DstKind kKind, Fp8Format kFormat, bool kStream>
HWY_INLINE void DecodeByTable(const std::uint8_t* src, std::size_t n, std::byte* dst,
                              std::size_t* done) {
  const DecodePlanes& planes = GetDecodePlanes<kKind, kFormat>();
  const __m512i lo01 = _mm512_load_si512(planes.lo);
  const __m512i lo23 = _mm512_load_si512(planes.lo + 64);
  const __m512i hi0 = _mm512_load_si512(planes.hi);
  const __m512i hi1 = _mm512_load_si512(planes.hi + 64);
  const __m512i hi2 = _mm512_load_si512(planes.hi + 128);
  const __m512i hi3 = _mm512_load_si512(planes.hi + 192);
  const __m512i zero = _mm512_setzero_si512();
  // 16-bit results: unpack{lo,hi}_epi8 take bytes 0-7 / 8-15 of each block, so block k must
  // hold code qwords k and 4 + k. float32: a second unpack by 16-bit words takes words 0-3 /
  // 4-7, so block k must hold code dwords k, 4 + k, 8 + k, 12 + k.
  const __m512i order =
      kKind == DstKind::kF32
          ? _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)
          : _mm512_setr_epi32(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  const auto put = [](std::byte* p, __m512i v) {
    if constexpr (kStream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);  // p is 64-byte aligned
    } else {
      _mm512_storeu_si512(p, v);
    }
  };
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i c = _mm512_permutexvar_epi32(order, _mm512_loadu_si512(src + i));
    const __m512i lo = _mm512_permutex2var_epi8(lo01, c, lo23);
    const __m512i hi =
        _mm512_mask_blend_epi8(_mm512_movepi8_mask(c), _mm512_permutex2var_epi8(hi0, c, hi1),
                               _mm512_permutex2var_epi8(hi2, c, hi3));
    const __m512i w0 = _mm512_unpacklo_epi8(lo, hi);
    const __m512i w1 = _mm512_unpackhi_epi8(lo, hi);
    if constexpr (kKind == DstKind::kF32) {
      std::byte* out = dst + i * 4;
      put(out, _mm512_unpacklo_epi16(zero, w0));
      put(out + 64, _mm512_unpackhi_epi16(zero, w0));
      put(out + 128, _mm512_unpacklo_epi16(zero, w1));
      put(out + 192, _mm512_unpackhi_epi16(zero, w1));
    } else {
      std::byte* out = dst + i * 2;
      put(out, w0);
      put(out + 64, w1);
    }
  }
  *done = i;
}
#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace HWY_NAMESPACE
}  // namespace lmcache::fp8_internal
HWY_AFTER_NAMESPACE();

#endif  // LMCACHE_FP8_BYTE_TABLES_INL_H_ toggle
