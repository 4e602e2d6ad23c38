// File: lmcache/fp8/internal/fp8_kernels-inl.h
//
// Per-target Highway code for the fp8 kernels; re-included once per SIMD target by
// fp8_kernels_simd.cc through hwy/foreach_target.h (hence the toggling include guard).
//
// The arithmetic is fp8_bits.h's, lane by lane (read its file comment for the derivation):
//   - encode: float32 in 32-bit lanes, float16 / bfloat16 in 16-bit lanes in their own formats
//     (twice the lanes per vector). The normal case is computed for every vector; the
//     subnormal and zero cases only where a lane is below the fp8 normal range (see
//     EncodeImpl; e4m3fn redoes those lanes in float32 with one FPU add, StoreBelowNormalCodes).
//     On AVX2 and AVX-512 several code vectors are packed into one full vector store (32 or 64
//     bytes), non-temporal for large outputs.
//   - decode: float32 with integer arithmetic in 32-bit lanes (subnormal codes via an exact
//     int -> float conversion and power-of-two scale); float16 / bfloat16 in 16-bit lanes, with
//     the 8 subnormal results in a 16-byte in-register table (TableLookupBytes). Large outputs
//     are written with non-temporal stores.
//   On AVX3_DL (VBMI) the decode and the normal case of a 16-bit encode go by byte tables
//   instead (DecodeByTable, EncodeNormalStep): 128-byte lookups are one permute there. Below
//   that a 256-entry table was measured and rejected: GCC does not vectorise the lookup loop
//   and AVX2 gathers are slow on the CPUs measured (devices/BENCHMARKS.md).
// Loops handle whole vectors and leave the tail (fewer than one vector) to the fp8_bits.h
// scalar functions. Loads and stores are unaligned, so any byte address works.
// Beside this file, one concern each: fp8_simd_common-inl.h (the tags and element kinds every
// part shares), fp8_subnormal_pass-inl.h (e4m3fn's second pass), fp8_byte_tables-inl.h (the
// AVX3_DL table paths) and round_to_nearest_scope.h.

#if defined(LMCACHE_DEVICES_FP8_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LMCACHE_DEVICES_FP8_KERNELS_INL_H_
#undef LMCACHE_DEVICES_FP8_KERNELS_INL_H_
#else
#define LMCACHE_DEVICES_FP8_KERNELS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "lmcache/fp8/internal/fp8_bits.h"
#include "lmcache/fp8/internal/fp8_byte_tables-inl.h"
#include "lmcache/fp8/internal/fp8_kernels_simd.h"
#include "lmcache/fp8/internal/fp8_simd_common-inl.h"
#include "lmcache/fp8/internal/fp8_subnormal_pass-inl.h"
#include "lmcache/fp8/internal/round_to_nearest_scope.h"

HWY_BEFORE_NAMESPACE();
namespace lmcache::fp8_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---------------------------------------------------------------------------------------------
// Encode.

// ShiftLeftSmall()
//
// v << j per lane, for j in [0, 7].
template <class D>
HWY_INLINE hn::Vec<D> ShiftLeftSmall(D d, hn::Vec<D> v, hn::Vec<D> j) {
#if HWY_TARGET != HWY_SCALAR
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 2) {
    // No 16-bit variable shift before AVX-512 (Highway emulates it through float): multiply
    // by 2^j from a 16-byte table instead. Only the low byte of each lane indexes the table;
    // the high byte's index has its top bit set, which gives 0.
    const hn::Repartition<std::uint8_t, D> d8;
    alignas(16) static constexpr std::uint8_t kPow2[16] = {1, 2, 4, 8, 16, 32, 64, 128};
    const auto index = hn::BitCast(d8, hn::Or(j, hn::Set(d, T{0x8000})));
    return hn::Mul(v, hn::BitCast(d, hn::TableLookupBytesOr0(hn::LoadDup128(d8, kPow2), index)));
  } else {
    return v << j;  // u32: a native variable shift from AVX2 on
  }
#else
  return v << j;
#endif
}

// EncodeNormalLanes<Src, kFormat, kSaturate>()
//
// Lanes (16 or 32 bits) holding source bits in their low Src::kWidth bits -> the fp8 code in
// the low byte, exact for every lane except those below the fp8 normal range (|x| bits <
// kNormalMin, never for kAlwaysFast), which `*below` reports: fp8_bits::encode_bits' normal
// case with its overflow clamp, NaN and sign.
template <class Src, Fp8Format kFormat, bool kSaturate, class D>
HWY_INLINE hn::Vec<D> EncodeNormalLanes(D d, hn::Vec<D> x, hn::Mask<hn::RebindToSigned<D>>* below) {
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  const auto au = hn::And(x, hn::Set(d, static_cast<T>(Src::kAbsMask)));
  const auto ai = hn::BitCast(di, au);  // non-negative, so signed compares are exact
  // The rebias (kOffset << S) is folded into the rounding constant and the shift is
  // arithmetic, so lanes below the normal range come out negative (the caller replaces them).
  // The sum wraps only for NaN lanes of float16 -> e5m2, which the NaN select replaces.
  constexpr T kRoundRebias =
      static_cast<T>(C::kHalfMinus1 - (C::kOffset << C::kShift0));  // mod 2^lane bits
  const auto rounded = hn::ShiftRight<C::kShift0>(
      hn::BitCast(di, hn::Add(hn::Add(au, hn::Set(d, kRoundRebias)),
                              hn::And(hn::ShiftRight<C::kShift0>(au), hn::Set(d, T{1})))));
  auto code = hn::Min(rounded, hn::Set(di, static_cast<TI>(C::kClampCode)));
  *below = hn::Lt(ai, hn::Set(di, static_cast<TI>(C::kNormalMin)));
  // e4m3fn non-saturating clamps NaN to 0x7F already; the other modes set it.
  if constexpr (kFormat != Fp8Format::kE4M3FN || kSaturate) {
    code = hn::IfThenElse(hn::Gt(ai, hn::Set(di, static_cast<TI>(Src::kInfBits))),
                          hn::Set(di, TI{0x7F}), code);
  }
  const auto sign = hn::And(hn::ShiftRight<C::kSignShift>(x), hn::Set(d, T{0x80}));
  return hn::Or(hn::BitCast(d, code), sign);
}

// EncodeLanes<Src, kFormat, kSaturate>()
//
// Every lane: EncodeNormalLanes, with the lanes below the normal range replaced by the
// subnormal case (y = sig << j, then one RNE shift by M + 1) or 0 (at most half the smallest
// subnormal). j is clamped to [0, m] so that the other lanes compute something harmless
// before the select.
template <class Src, Fp8Format kFormat, bool kSaturate, class D>
HWY_INLINE hn::Vec<D> EncodeLanes(D d, hn::Vec<D> x) {
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  hn::Mask<decltype(di)> below;
  const auto normal = EncodeNormalLanes<Src, kFormat, kSaturate>(d, x, &below);
  if constexpr (C::kAlwaysFast) {
    return normal;
  } else {
    constexpr TI kMant8 = static_cast<TI>(fp8_bits::Fp8Traits<kFormat>::kMantBits);
    const auto one = hn::Set(d, T{1});
    const auto au = hn::And(x, hn::Set(d, static_cast<T>(Src::kAbsMask)));
    const auto ai = hn::BitCast(di, au);
    const auto e = hn::ShiftRight<Src::kMantBits>(ai);
    const auto j = hn::BitCast(
        d, hn::Min(hn::Max(hn::Sub(e, hn::Set(di, static_cast<TI>(C::kSubBase))), hn::Zero(di)),
                   hn::Set(di, kMant8)));
    const auto sig = hn::Or(hn::And(au, hn::Set(d, static_cast<T>((1u << Src::kMantBits) - 1u))),
                            hn::Set(d, static_cast<T>(1u << Src::kMantBits)));
    const auto y = ShiftLeftSmall(d, sig, j);
    auto sub = hn::ShiftRight<C::kSubShift>(
        hn::Add(hn::Add(y, hn::Set(d, static_cast<T>((1u << (C::kSubShift - 1)) - 1u))),
                hn::And(hn::ShiftRight<C::kSubShift>(y), one)));
    sub = hn::IfThenZeroElse(
        hn::RebindMask(d, hn::Lt(ai, hn::Set(di, static_cast<TI>(C::kTinyMax + 1)))), sub);
    const auto sign = hn::And(hn::ShiftRight<C::kSignShift>(x), hn::Set(d, T{0x80}));
    return hn::IfThenElse(hn::RebindMask(d, below), hn::Or(sub, sign), normal);
  }
}

template <SrcKind kKind, Fp8Format kFormat, bool kSaturate>
HWY_INLINE std::uint8_t EncodeOne(const std::byte* p) {
  if constexpr (kKind == SrcKind::kF32) {
    std::uint32_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return fp8_bits::encode_f32_bits<kFormat, kSaturate>(bits);
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    if constexpr (kKind == SrcKind::kBF16) {
      return fp8_bits::encode_bf16_bits<kFormat, kSaturate>(bits);
    }
    return fp8_bits::encode_f16_bits<kFormat, kSaturate>(bits);
  }
}

// The x86 targets whose encode packs several code vectors into one full-vector store and can
// stream it (kStreamAlign: the destination alignment a non-temporal store needs). Redefined
// for each target this file is compiled for.
#undef LMCACHE_FP8_PACKED_STORES
#if HWY_TARGET == HWY_AVX2
#define LMCACHE_FP8_PACKED_STORES 1
inline constexpr std::size_t kStreamAlign = 32;
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define LMCACHE_FP8_PACKED_STORES 1
inline constexpr std::size_t kStreamAlign = 64;
#else
#define LMCACHE_FP8_PACKED_STORES 0
#endif

// StoreCodes<kStream>()
//
// Stores the low bytes of kUnroll consecutive code vectors (each lane <= 255) to dst, in order.
// On AVX2 and AVX-512 the vectors are packed together first into one full-vector store
// (non-temporal when kStream; dst then kStreamAlign-aligned): one pack per pair of vectors and
// one lane permutation per store, where demoting each vector alone costs a pack, a permutation
// and a half-width store per vector. Elsewhere each vector is demoted and stored on its own.
template <bool kStream, std::size_t kUnroll, class D, class V>
HWY_INLINE void StoreCodes(D d, const V (&codes)[kUnroll], std::uint8_t* dst) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  using T = hn::TFromD<D>;
  const auto put = [dst](__m512i bytes) {
    if constexpr (kStream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), bytes);  // dst is 64-byte aligned
    } else {
      _mm512_storeu_si512(dst, bytes);
    }
  };
  if constexpr (sizeof(T) == 4 && kUnroll == 4) {
    // Per 128-bit block k, packus leaves the dwords [c0 k, c1 k, c2 k, c3 k] (4 codes each):
    // dword 4k + j holds vector j's codes 4k..4k+3; the permutation puts them in order.
    const __m512i c01 = _mm512_packus_epi32(codes[0].raw, codes[1].raw);
    const __m512i c23 = _mm512_packus_epi32(codes[2].raw, codes[3].raw);
    const __m512i bytes = _mm512_packus_epi16(c01, c23);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    put(_mm512_permutexvar_epi32(order, bytes));
    return;
  } else if constexpr (sizeof(T) == 2 && kUnroll == 2) {
    // Per 128-bit block k, packus leaves the qwords [c0 k, c1 k] (8 codes each).
    const __m512i bytes = _mm512_packus_epi16(codes[0].raw, codes[1].raw);
    put(_mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), bytes));
    return;
  }
#elif HWY_TARGET == HWY_AVX2
  using T = hn::TFromD<D>;
  const auto put = [dst](__m256i bytes) {
    if constexpr (kStream) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), bytes);  // dst is 32-byte aligned
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), bytes);
    }
  };
  if constexpr (sizeof(T) == 4 && kUnroll == 4) {
    // packus: [c0 lo4, c1 lo4 | c0 hi4, c1 hi4] per pair, then bytes [c0 c1 c2 c3 (lo4 each) |
    // (hi4 each)]; the dword permutation restores element order.
    const __m256i c01 = _mm256_packus_epi32(codes[0].raw, codes[1].raw);
    const __m256i c23 = _mm256_packus_epi32(codes[2].raw, codes[3].raw);
    const __m256i bytes = _mm256_packus_epi16(c01, c23);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    put(_mm256_permutevar8x32_epi32(bytes, order));
    return;
  } else if constexpr (sizeof(T) == 2 && kUnroll == 2) {
    // packus: [c0 lo8, c1 lo8 | c0 hi8, c1 hi8]; swapping the middle quadwords restores order.
    const __m256i bytes = _mm256_packus_epi16(codes[0].raw, codes[1].raw);
    put(_mm256_permute4x64_epi64(bytes, 0xD8));
    return;
  }
#endif
  const hn::RebindToSigned<D> di;
  const hn::Rebind<std::uint8_t, D> d8;
  const std::size_t lanes = hn::Lanes(d);
  for (std::size_t k = 0; k < kUnroll; ++k) {
    hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, codes[k])), d8, dst + k * lanes);
  }
}

// EncodeNormalStep<kKind, kFormat, kSaturate>()
//
// The normal case of kUnroll vectors (one full vector of codes) from `in` stored to `out`, with
// each vector's lanes below the normal range in below[k]. On AVX3_DL it goes by byte tables
// (TableCodes): 16-bit sources directly, float32 (e4m3fn) through JamToBFloat16.
template <SrcKind kKind, Fp8Format kFormat, bool kSaturate, bool kStream, class D,
          std::size_t kUnroll>
HWY_INLINE void EncodeNormalStep(D d, const hn::TFromD<D>* in, std::uint8_t* out,
                                 hn::Mask<hn::RebindToSigned<D>> (&below)[kUnroll]) {
  using Src = std::conditional_t<
      kKind == SrcKind::kF32, fp8_bits::F32Src,
      std::conditional_t<kKind == SrcKind::kF16, fp8_bits::F16Src, fp8_bits::BF16Src>>;
  const std::size_t lanes = hn::Lanes(d);
#if HWY_TARGET == HWY_AVX3_DL
  using T = hn::TFromD<D>;
  if constexpr (kTableStep<Src, kFormat, kSaturate, T, kUnroll>) {
    const hn::RebindToSigned<D> di;
    __m512i code;
    if constexpr (sizeof(T) == 2) {
      __mmask32 below16[2];
      code = TableCodes<Src, kFormat, kSaturate>(hn::LoadU(d, in).raw, hn::LoadU(d, in + lanes).raw,
                                                 below16);
      below[0] = hn::Mask<decltype(di)>{below16[0]};
      below[1] = hn::Mask<decltype(di)>{below16[1]};
    } else {
      // float32: two vectors of bfloat16 with the stickiness of the dropped bits kept, whose
      // codes and ranges are the float32 elements' (JamToBFloat16).
      alignas(64) static constexpr std::uint16_t kLowWords[32] = {
          0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
          32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};  // each lane's low half
      const __m512i words = _mm512_load_si512(kLowWords);
      __m512i jam[4];
      for (std::size_t k = 0; k < 4; ++k) jam[k] = JamToBFloat16(hn::LoadU(d, in + k * lanes).raw);
      __mmask32 below16[2];
      code = TableCodes<fp8_bits::BF16Src, kFormat, kSaturate>(
          _mm512_permutex2var_epi16(jam[0], words, jam[1]),
          _mm512_permutex2var_epi16(jam[2], words, jam[3]), below16);
      for (std::size_t k = 0; k < 4; ++k) {
        below[k] = hn::Mask<decltype(di)>{static_cast<__mmask16>(below16[k / 2] >> (16 * (k % 2)))};
      }
    }
    if constexpr (kStream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(out), code);  // out is 64-byte aligned
    } else {
      _mm512_storeu_si512(out, code);
    }
    return;
  }
#endif
  hn::Vec<D> codes[kUnroll];
  for (std::size_t k = 0; k < kUnroll; ++k) {
    codes[k] =
        EncodeNormalLanes<Src, kFormat, kSaturate>(d, hn::LoadU(d, in + k * lanes), &below[k]);
  }
  StoreCodes<kStream>(d, codes, out);
}

// NoneBelow<Src, kFormat, kSaturate>()
//
// Whether none of the kUnroll vectors at `in` has a lane below the fp8 normal range; each
// vector's lanes that are in below[k].
template <class Src, Fp8Format kFormat, bool kSaturate, class D, std::size_t kUnroll>
HWY_INLINE bool NoneBelow(D d, const hn::TFromD<D>* in,
                          hn::Mask<hn::RebindToSigned<D>> (&below)[kUnroll]) {
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  using T = hn::TFromD<D>;
  const hn::RebindToSigned<D> di;
  using TI = hn::TFromD<decltype(di)>;
  bool none = true;
  for (std::size_t k = 0; k < kUnroll; ++k) {
    const auto abs =
        hn::And(hn::LoadU(d, in + k * hn::Lanes(d)), hn::Set(d, static_cast<T>(Src::kAbsMask)));
    below[k] = hn::Lt(hn::BitCast(di, abs), hn::Set(di, static_cast<TI>(C::kNormalMin)));
    none = none && hn::AllFalse(di, below[k]);
  }
  return none;
}

// Copies `bytes` (a multiple of 64) from the block buffer to a kStreamAlign-aligned dst with
// non-temporal stores (the streaming encode of AVX2 and AVX-512).
HWY_INLINE void StreamOut(const std::uint8_t* buf, std::size_t bytes, std::uint8_t* dst) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  for (std::size_t k = 0; k < bytes; k += 64) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + k), _mm512_load_si512(buf + k));
  }
#elif HWY_TARGET == HWY_AVX2
  for (std::size_t k = 0; k < bytes; k += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + k),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + k)));
  }
#else
  std::memcpy(dst, buf, bytes);
#endif
}

// Encodes whole vectors (float32 in u32 lanes; float16 / bfloat16 in u16 lanes, each in its
// own format) and leaves the tail to the scalar form. The normal case goes a full vector of
// codes per step (EncodeNormalStep: by byte tables on AVX3_DL for 16-bit sources). Lanes below
// the fp8 normal range need more; how they are found depends on how common they are:
//   - e4m3fn (band |x| in (2^-10, 2^-6): about one 16-lane vector in six on normally
//     distributed data): blocks of kBlock elements go in two passes. The first computes every
//     vector's normal case and marks, without branching, the lanes below the normal range.
//     On AVX2 and AVX-512 the second visits just the float32-sized chunks with a mark
//     (RedoMarkedChunks) and rewrites just those lanes' codes (StoreBelowNormalCodes: a widen,
//     one FPU add and a masked store); elsewhere it recomputes the marked vectors whole
//     (EncodeLanes). A per-vector branch would be taken unpredictably, and each misprediction
//     also stalls the stream of loads from memory. The block is written straight into dst (the
//     redone lanes overwrite their codes while the lines are still in L1) unless kStream:
//     non-temporal stores must not be rewritten, so a streamed block goes through a 1 KiB
//     buffer first.
//   - e5m2 (band (2^-17, 2^-14), practically empty) and float16 -> e5m2 (no such lanes): one
//     pass, with a branch that is almost never taken.
template <SrcKind kKind, Fp8Format kFormat, bool kSaturate, bool kStream>
void EncodeImpl(const std::byte* src, std::size_t n, std::uint8_t* dst) {
  using Src = std::conditional_t<
      kKind == SrcKind::kF32, fp8_bits::F32Src,
      std::conditional_t<kKind == SrcKind::kF16, fp8_bits::F16Src, fp8_bits::BF16Src>>;
  using C = fp8_bits::EncodeConsts<Src, kFormat, kSaturate>;
  using T = std::conditional_t<kKind == SrcKind::kF32, std::uint32_t, std::uint16_t>;
  constexpr bool kTwoPass = kFormat == Fp8Format::kE4M3FN;
  constexpr std::size_t kUnroll = sizeof(T) == 4 ? 4 : 2;  // one full vector of codes
  constexpr std::size_t kBlock = 1024;                     // a multiple of every unroll * lanes
  const hn::ScalableTag<T> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::Vec<decltype(d)>;
  const std::size_t lanes = hn::Lanes(d);
  const auto* in = reinterpret_cast<const T*>(src);
  std::size_t i = 0;
  if constexpr (kTwoPass) {
    // The first pass marks the vectors with a lane below the normal range, branch-free: where
    // kRedoInFloat32 as one bit per element (the second pass then visits the float32-sized
    // chunks that hold a marked bit), elsewhere as a list of whole vectors.
    [[maybe_unused]] const RoundToNearestScope round_to_nearest(kRedoInFloat32);
    alignas(64) std::uint8_t buf[kBlock];
    alignas(64) std::uint8_t below_bits[kRedoInFloat32 ? kBlock / 8 : 1];
    std::uint32_t redo[kRedoInFloat32 ? 1 : kBlock];  // vector indexes
    for (; i + kBlock <= n; i += kBlock) {
      std::uint8_t* const out = kStream ? buf : dst + i;
      std::size_t num_redo = 0;
      for (std::size_t v = 0; v < kBlock / lanes; v += kUnroll) {
        hn::Mask<decltype(di)> below[kUnroll];
        EncodeNormalStep<kKind, kFormat, kSaturate, false>(d, in + i + v * lanes, out + v * lanes,
                                                           below);
        for (std::size_t k = 0; k < kUnroll; ++k) {
          if constexpr (kRedoInFloat32) {
            hn::StoreMaskBits(di, below[k], below_bits + (v + k) * lanes / 8);
          } else {
            redo[num_redo] = static_cast<std::uint32_t>(v + k);
            num_redo += hn::AllFalse(di, below[k]) ? 0 : 1;  // a select, not a branch
          }
        }
      }
      if constexpr (kRedoInFloat32) {
        RedoMarkedChunks<kKind, kFormat, kBlock>(src + i * sizeof(T), below_bits, out);
      } else {
        for (std::size_t k = 0; k < num_redo; ++k) {
          const std::size_t j = redo[k] * lanes;
          const V one[1] = {EncodeLanes<Src, kFormat, kSaturate>(d, hn::LoadU(d, in + i + j))};
          StoreCodes<false>(d, one, out + j);
        }
      }
      if constexpr (kStream) StreamOut(buf, kBlock, dst + i);
    }
  } else {
    for (; i + kUnroll * lanes <= n; i += kUnroll * lanes) {
      if constexpr (kTableStep<Src, kFormat, kSaturate, T, kUnroll>) {
        // By the tables, unless a lane is below the normal range (rare here).
        hn::Mask<decltype(di)> below[kUnroll];
        const bool none_below = NoneBelow<Src, kFormat, kSaturate>(d, in + i, below);
        if (HWY_LIKELY(none_below)) {
          EncodeNormalStep<kKind, kFormat, kSaturate, kStream>(d, in + i, dst + i, below);
          continue;
        }
      }
      V codes[kUnroll];
      for (std::size_t k = 0; k < kUnroll; ++k) {
        const V x = hn::LoadU(d, in + i + k * lanes);
        hn::Mask<decltype(di)> below;
        codes[k] = EncodeNormalLanes<Src, kFormat, kSaturate>(d, x, &below);
        if (!C::kAlwaysFast && HWY_UNLIKELY(!hn::AllFalse(di, below))) {
          codes[k] = EncodeLanes<Src, kFormat, kSaturate>(d, x);
        }
      }
      StoreCodes<kStream>(d, codes, dst + i);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    const V one[1] = {EncodeLanes<Src, kFormat, kSaturate>(d, hn::LoadU(d, in + i))};
    StoreCodes<false>(d, one, dst + i);
  }
  for (; i < n; ++i) dst[i] = EncodeOne<kKind, kFormat, kSaturate>(src + i * sizeof(T));
}

// Encodes `n` elements. On AVX2 and AVX-512, outputs of kStreamMinBytes or more are written
// with non-temporal stores after a scalar head that aligns `dst` to kStreamAlign (see
// Decode()).
template <SrcKind kKind, Fp8Format kFormat, bool kSaturate>
void Encode(const std::byte* src, std::size_t n, std::uint8_t* dst) {
#if LMCACHE_FP8_PACKED_STORES
  if (n >= kStreamMinBytes) {
    constexpr std::size_t kInBytes = kKind == SrcKind::kF32 ? 4 : 2;
    const std::size_t head =
        (kStreamAlign - reinterpret_cast<std::uintptr_t>(dst) % kStreamAlign) % kStreamAlign;
    for (std::size_t i = 0; i < head; ++i) {
      dst[i] = EncodeOne<kKind, kFormat, kSaturate>(src + i * kInBytes);
    }
    EncodeImpl<kKind, kFormat, kSaturate, true>(src + head * kInBytes, n - head, dst + head);
    hwy::FlushStream();
    return;
  }
#endif
  EncodeImpl<kKind, kFormat, kSaturate, false>(src, n, dst);
}

// ---------------------------------------------------------------------------------------------
// Decode.

// DecodeF32Lanes<kFormat>()
//
// A code in the low byte of each lane -> float32 bits (fp8_bits::decode_f32_bits, per lane).
template <Fp8Format kFormat>
HWY_INLINE V32 DecodeF32Lanes(D32 d, V32 c) {
  using C = fp8_bits::DecodeConsts<kFormat>;
  const hn::Rebind<float, D32> df;
  const hn::Rebind<std::int32_t, D32> di;
  const V32 v = hn::And(c, hn::Set(d, 0x7Fu));
  const V32 sign = hn::ShiftLeft<24>(hn::And(c, hn::Set(d, 0x80u)));
  // Subnormal codes: exact small integer times an exact power of two.
  const V32 sub = hn::BitCast(
      d, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, v)), hn::Set(df, C::kSubnormalScale)));
  const V32 normal = hn::Add(hn::ShiftLeft<C::kFieldShift>(v), hn::Set(d, C::kRebias));
  V32 r = hn::IfThenElse(hn::Lt(v, hn::Set(d, C::kFirstNormal)), sub, normal);
  const V32 rebias = hn::Set(d, C::kRebias);
  if constexpr (kFormat == Fp8Format::kE4M3FN) {
    r = hn::Add(r, hn::IfThenElseZero(hn::Eq(v, hn::Set(d, 0x7Fu)), rebias));
  } else {
    r = hn::Add(r, hn::IfThenElseZero(hn::Gt(v, hn::Set(d, 0x7Bu)), rebias));
    r = hn::Or(r, hn::IfThenElseZero(hn::Gt(v, hn::Set(d, 0x7Cu)), hn::Set(d, 0x00400000u)));
  }
  return hn::Or(r, sign);
}

template <DstKind kKind, Fp8Format kFormat>
HWY_INLINE void DecodeOne(std::uint8_t code, std::byte* p) {
  if constexpr (kKind == DstKind::kF32) {
    const std::uint32_t bits = fp8_bits::decode_f32_bits<kFormat>(code);
    std::memcpy(p, &bits, sizeof bits);
  } else if constexpr (kKind == DstKind::kF16) {
    const std::uint16_t bits = fp8_bits::decode_f16_bits<kFormat>(code);
    std::memcpy(p, &bits, sizeof bits);
  } else {
    const std::uint16_t bits = fp8_bits::decode_bf16_bits<kFormat>(code);
    std::memcpy(p, &bits, sizeof bits);
  }
}

// Narrows decoded float32 bits to the 16-bit destination format, per fp8_bits.h.
template <DstKind kKind, Fp8Format kFormat>
HWY_INLINE V32 NarrowLanes(D32 d, V32 c, V32 f32) {
  const V32 v = hn::And(c, hn::Set(d, 0x7Fu));
  if constexpr (kKind == DstKind::kBF16) {
    const auto nan =
        kFormat == Fp8Format::kE4M3FN ? hn::Eq(v, hn::Set(d, 0x7Fu)) : hn::Gt(v, hn::Set(d, 0x7Cu));
    return hn::IfThenElse(nan, hn::Set(d, 0x7FC0u), hn::ShiftRight<16>(f32));
  } else {  // float16 from e4m3fn: every non-zero value is a float16 normal
    const V32 a = hn::And(f32, hn::Set(d, 0x7FFFFFFFu));
    V32 h = hn::Sub(hn::ShiftRight<13>(a), hn::Set(d, (127u - 15u) << 10));
    h = hn::IfThenZeroElse(hn::Eq(v, hn::Zero(d)), h);
    h = hn::IfThenElse(hn::Eq(v, hn::Set(d, 0x7Fu)), hn::Set(d, 0x7F80u), h);
    return hn::Or(h, hn::ShiftLeft<8>(hn::And(c, hn::Set(d, 0x80u))));
  }
}

// Put<kStream>()
//
// A full-vector store: non-temporal (kStream; `p` vector-aligned) or ordinary (any `p`).
template <bool kStream, class D>
HWY_INLINE void Put(hn::Vec<D> v, D d, hn::TFromD<D>* p) {
  if constexpr (kStream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

#if HWY_TARGET != HWY_SCALAR
// The 16-bit results of codes 0..7 (the subnormal codes and zero; entries past e5m2's 0..3 are
// unused), from the scalar functions, for a 16-byte in-register table lookup.
template <DstKind kKind, Fp8Format kFormat>
const std::uint16_t* SubnormalTable16() {
  struct alignas(16) Table {
    std::uint16_t v[8];
  };
  static const Table table = [] {
    Table t{};
    for (std::uint8_t c = 0; c < fp8_bits::DecodeConsts<kFormat>::kFirstNormal; ++c) {
      t.v[c] = kKind == DstKind::kF16 ? fp8_bits::decode_f16_bits<kFormat>(c)
                                      : fp8_bits::decode_bf16_bits<kFormat>(c);
    }
    return t;
  }();
  return table.v;
}

// Codes -> float16 (e4m3fn) or bfloat16 (both formats) in 16-bit lanes: a normal code's field
// shifted into place plus the exponent rebias, a subnormal code from the table, then the
// specials (fp8_bits::decode_f16_bits / decode_bf16_bits, lane by lane).
template <DstKind kKind, Fp8Format kFormat, bool kStream>
void Decode16(const std::uint8_t* src, std::size_t n, std::uint16_t* out, std::size_t* done) {
  using F = fp8_bits::Fp8Traits<kFormat>;
  constexpr int kDstMant = kKind == DstKind::kF16 ? 10 : 7;
  constexpr int kDstBias = kKind == DstKind::kF16 ? 15 : 127;
  constexpr int kShift = kDstMant - static_cast<int>(F::kMantBits);
  constexpr std::int16_t kRebias = static_cast<std::int16_t>((kDstBias - F::kBias) << kDstMant);
  const hn::ScalableTag<std::int16_t> d;
  const hn::Rebind<std::uint8_t, decltype(d)> d8;
  const auto table =
      hn::LoadDup128(d, reinterpret_cast<const std::int16_t*>(SubnormalTable16<kKind, kFormat>()));
  const std::size_t lanes = hn::Lanes(d);
  std::size_t i = *done;
  for (; i + lanes <= n; i += lanes) {
    const auto c =
        hn::BitCast(d, hn::PromoteTo(hn::RebindToUnsigned<decltype(d)>(), hn::LoadU(d8, src + i)));
    const auto v = hn::And(c, hn::Set(d, std::int16_t{0x7F}));
    const auto sign = hn::ShiftLeft<8>(hn::And(c, hn::Set(d, std::int16_t{0x80})));
    // Byte indexes (2v, 2v + 1) of table entry v, in each 16-bit lane.
    const auto index =
        hn::Add(hn::Mul(hn::Min(v, hn::Set(d, std::int16_t{7})), hn::Set(d, std::int16_t{0x0202})),
                hn::Set(d, std::int16_t{0x0100}));
    const auto sub = hn::TableLookupBytes(table, index);
    const auto normal = hn::Add(hn::ShiftLeft<kShift>(v), hn::Set(d, kRebias));
    constexpr auto kFirstNormal =
        static_cast<std::int16_t>(fp8_bits::DecodeConsts<kFormat>::kFirstNormal);
    auto r = hn::IfThenElse(hn::Lt(v, hn::Set(d, kFirstNormal)), sub, normal);
    if constexpr (kKind == DstKind::kF16) {  // e4m3fn only: NaN keeps its sign
      r = hn::Or(hn::IfThenElse(hn::Eq(v, hn::Set(d, std::int16_t{0x7F})),
                                hn::Set(d, std::int16_t{0x7F80}), r),
                 sign);
    } else {  // bfloat16: e5m2 inf, then every NaN is 0x7FC0 without its sign
      if constexpr (kFormat == Fp8Format::kE5M2) {
        r = hn::IfThenElse(hn::Eq(v, hn::Set(d, std::int16_t{0x7C})),
                           hn::Set(d, std::int16_t{0x7F80}), r);
      }
      r = hn::Or(r, sign);
      const auto nan = kFormat == Fp8Format::kE4M3FN ? hn::Eq(v, hn::Set(d, std::int16_t{0x7F}))
                                                     : hn::Gt(v, hn::Set(d, std::int16_t{0x7C}));
      r = hn::IfThenElse(nan, hn::Set(d, std::int16_t{0x7FC0}), r);
    }
    Put<kStream>(r, d, reinterpret_cast<std::int16_t*>(out) + i);
  }
  *done = i;
}
#endif  // HWY_TARGET != HWY_SCALAR

template <DstKind kKind, Fp8Format kFormat, bool kStream>
void DecodeImpl(const std::uint8_t* src, std::size_t n, std::byte* dst) {
  std::size_t i = 0;
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (kKind != DstKind::kF16 || kFormat != Fp8Format::kE5M2) {  // that one is a shift
    DecodeByTable<kKind, kFormat, kStream>(src, n, dst, &i);
  }
#endif
  if constexpr (kKind == DstKind::kF16 && kFormat == Fp8Format::kE5M2) {
    // e5m2 is the top byte of a float16: widen to u16 lanes and quiet the NaNs.
    const hn::ScalableTag<std::uint16_t> d16;
    const hn::Rebind<std::uint8_t, decltype(d16)> d8;
    const std::size_t lanes = hn::Lanes(d16);
    auto* out = reinterpret_cast<std::uint16_t*>(dst);
    for (; i + lanes <= n; i += lanes) {
      auto h = hn::ShiftLeft<8>(hn::PromoteTo(d16, hn::LoadU(d8, src + i)));
      const auto nan = hn::Gt(hn::And(h, hn::Set(d16, 0x7FFF)), hn::Set(d16, 0x7C00));
      h = hn::Or(h, hn::IfThenElseZero(nan, hn::Set(d16, 0x0200)));
      Put<kStream>(h, d16, out + i);
    }
  } else {
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kKind != DstKind::kF32) {
      Decode16<kKind, kFormat, kStream>(src, n, reinterpret_cast<std::uint16_t*>(dst), &i);
    } else
#endif
    {
      // float32 (and, on the one-lane scalar target, the 16-bit types narrowed from it).
      const D32 d;
      const hn::Rebind<std::uint8_t, D32> d8;
      const hn::Rebind<std::int32_t, D32> di;
      const hn::Rebind<std::uint16_t, D32> d16;
      const std::size_t lanes = hn::Lanes(d);
      for (; i + lanes <= n; i += lanes) {
        const V32 c = hn::PromoteTo(d, hn::LoadU(d8, src + i));
        const V32 f32 = DecodeF32Lanes<kFormat>(d, c);
        if constexpr (kKind == DstKind::kF32) {
          Put<kStream>(f32, d, reinterpret_cast<std::uint32_t*>(dst) + i);
        } else {
          const V32 h = NarrowLanes<kKind, kFormat>(d, c, f32);
          Put<kStream>(hn::DemoteTo(d16, hn::BitCast(di, h)), d16,
                       reinterpret_cast<std::uint16_t*>(dst) + i);
        }
      }
    }
  }
  constexpr std::size_t kOutBytes = kKind == DstKind::kF32 ? 4 : 2;
  for (; i < n; ++i) DecodeOne<kKind, kFormat>(src[i], dst + i * kOutBytes);
}

// Decodes `n` codes. Large outputs (kStreamMinBytes or more, element-aligned) are written with
// non-temporal stores after a scalar head that aligns `dst` to the vector size: the output is
// 2-4x the input and far larger than the caches, so bypassing them saves the read-for-ownership
// of every destination line (what memcpy does for large copies too).
template <DstKind kKind, Fp8Format kFormat>
void Decode(const std::uint8_t* src, std::size_t n, std::byte* dst) {
  constexpr std::size_t kOutBytes = kKind == DstKind::kF32 ? 4 : 2;
  const auto address = reinterpret_cast<std::uintptr_t>(dst);
  if (n * kOutBytes < kStreamMinBytes || address % kOutBytes != 0) {
    DecodeImpl<kKind, kFormat, false>(src, n, dst);
    return;
  }
  const std::size_t vector_bytes = hn::Lanes(hn::ScalableTag<std::uint8_t>());
  const std::size_t head = ((vector_bytes - address % vector_bytes) % vector_bytes) / kOutBytes;
  for (std::size_t i = 0; i < head; ++i) DecodeOne<kKind, kFormat>(src[i], dst + i * kOutBytes);
  DecodeImpl<kKind, kFormat, true>(src + head, n - head, dst + head * kOutBytes);
  hwy::FlushStream();  // order the non-temporal stores before anything that follows
}

// ---------------------------------------------------------------------------------------------
// The table of this target.

// GetSimdKernels()
//
// This target's table (constant-initialised: calling it runs no target-specific code).
const SimdKernels* GetSimdKernels() {
  static constexpr SimdKernels kKernels = {
      HWY_TARGET,
      {{{&Encode<SrcKind::kF32, Fp8Format::kE4M3FN, false>,
         &Encode<SrcKind::kF32, Fp8Format::kE4M3FN, true>},
        {&Encode<SrcKind::kF32, Fp8Format::kE5M2, false>,
         &Encode<SrcKind::kF32, Fp8Format::kE5M2, true>}},
       {{&Encode<SrcKind::kF16, Fp8Format::kE4M3FN, false>,
         &Encode<SrcKind::kF16, Fp8Format::kE4M3FN, true>},
        {&Encode<SrcKind::kF16, Fp8Format::kE5M2, false>,
         &Encode<SrcKind::kF16, Fp8Format::kE5M2, true>}},
       {{&Encode<SrcKind::kBF16, Fp8Format::kE4M3FN, false>,
         &Encode<SrcKind::kBF16, Fp8Format::kE4M3FN, true>},
        {&Encode<SrcKind::kBF16, Fp8Format::kE5M2, false>,
         &Encode<SrcKind::kBF16, Fp8Format::kE5M2, true>}}},
      {{&Decode<DstKind::kF32, Fp8Format::kE4M3FN>, &Decode<DstKind::kF32, Fp8Format::kE5M2>},
       {&Decode<DstKind::kF16, Fp8Format::kE4M3FN>, &Decode<DstKind::kF16, Fp8Format::kE5M2>},
       {&Decode<DstKind::kBF16, Fp8Format::kE4M3FN>, &Decode<DstKind::kBF16, Fp8Format::kE5M2>}}};
  return &kKernels;
}

}  // namespace HWY_NAMESPACE
}  // namespace lmcache::fp8_internal
HWY_AFTER_NAMESPACE();

#endif  // LMCACHE_DEVICES_FP8_KERNELS_INL_H_ toggle
