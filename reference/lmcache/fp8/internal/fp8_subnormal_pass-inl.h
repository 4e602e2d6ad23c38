// File: lmcache/fp8/internal/fp8_subnormal_pass-inl.h
//
// e4m3fn encode's second pass on AVX2 and AVX-512: the lanes below the fp8 normal range,
// rewritten in float32-sized chunks with one FPU add each (see EncodeImpl in
// fp8_kernels-inl.h, and round_to_nearest_scope.h for the rounding mode it needs).
// Per-target Highway code, re-included once per SIMD target through fp8_kernels-inl.h (hence
// the toggling include guard).

#if defined(LMCACHE_FP8_SUBNORMAL_PASS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LMCACHE_FP8_SUBNORMAL_PASS_INL_H_
#undef LMCACHE_FP8_SUBNORMAL_PASS_INL_H_
#else
#define LMCACHE_FP8_SUBNORMAL_PASS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "lmcache/fp8/internal/fp8_bits.h"
#include "lmcache/fp8/internal/fp8_simd_common-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lmcache::fp8_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// StoreBelowNormalCodes<kFormat>()
//
// For the lanes of `bits` (float32 bits) below the fp8 normal range, writes their codes to
// the matching bytes of `out`; the other bytes stay as they are. Below the normal range the
// code is |x| in units of the smallest subnormal, rounded to nearest even, and the float32
// sum |x| + 2^(23 + e) (2^e: that unit) is exactly that rounding: the FPU adds at the unit's
// precision, and the sum's low mantissa bits are the code. Needs round-to-nearest (see
// RoundToNearestScope). NaN lanes compare as not below.
template <Fp8Format kFormat>
HWY_INLINE void StoreBelowNormalCodes(D32 d, V32 bits, std::uint8_t* out) {
  using F = fp8_bits::Fp8Traits<kFormat>;
  const hn::Rebind<float, D32> df;
  const hn::Rebind<std::int32_t, D32> di;
  constexpr std::uint32_t kUnitExp = 127 + 1 - F::kBias - F::kMantBits;  // biased, 2^-9 / 2^-16
  constexpr std::uint32_t kMagic = (kUnitExp + 23) << 23;
  constexpr std::uint32_t kNormalMin = (127 + 1 - F::kBias) << 23;
  const V32 abs = hn::And(bits, hn::Set(d, 0x7FFFFFFFu));
  const auto below =
      hn::Lt(hn::BitCast(di, abs), hn::Set(di, static_cast<std::int32_t>(kNormalMin)));
  const V32 sum =
      hn::BitCast(d, hn::Add(hn::BitCast(df, abs), hn::BitCast(df, hn::Set(d, kMagic))));
  const V32 code =
      hn::Or(hn::Xor(sum, hn::Set(d, kMagic)), hn::ShiftRight<24>(hn::AndNot(abs, bits)));
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  // A masked byte store: no read of `out` (vpmovdb's masked store form is slower on Zen 4).
  _mm_mask_storeu_epi8(out, below.raw, _mm512_cvtepi32_epi8(code.raw));
#else
  const hn::Rebind<std::uint8_t, D32> d8;
  const V32 kept = hn::PromoteTo(d, hn::LoadU(d8, out));  // the first pass's codes
  hn::StoreU(
      hn::DemoteTo(d8, hn::BitCast(di, hn::IfThenElse(hn::RebindMask(d, below), code, kept))), d8,
      out);
#endif
}

// Whether e4m3fn's second pass redoes float32 chunks with StoreBelowNormalCodes (AVX2 and
// AVX-512: about a third of the cost of recomputing a whole vector) or whole vectors with
// EncodeLanes (128-bit and scalar targets, whose vectors hold so few lanes that the widening
// costs more than it saves: measured, see bench/RESULTS.md).
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr bool kRedoInFloat32 = true;
#else
inline constexpr bool kRedoInFloat32 = false;
#endif

// RedoMarkedChunks<kKind, kFormat, kBlock>()
//
// e4m3fn's second pass where kRedoInFloat32: `below_bits` marks the elements of a block (one
// bit each, element order) below the normal range; rewrites the codes of every float32-sized
// chunk that holds a marked element. The chunks' marks are tested a vector of them at a time,
// and only the marked ones are visited (a bit scan): no per-chunk branch or list.
template <SrcKind kKind, Fp8Format kFormat, std::size_t kBlock>
HWY_INLINE void RedoMarkedChunks(const std::byte* src, const std::uint8_t* below_bits,
                                 std::uint8_t* out) {
  const D32 d32;
  constexpr std::size_t kChunk = hn::MaxLanes(D32());
  // (Dependent on kBlock so that only targets that call it check it.)
  static_assert(kBlock % 64 == 0 && (kChunk == 8 || kChunk == 16),
                "one chunk's marks are one or two bytes");
  using Marks = std::conditional_t<kChunk == 16, std::uint16_t, std::uint8_t>;
  constexpr std::size_t kInBytes = kKind == SrcKind::kF32 ? 4 : 2;
  const hn::ScalableTag<Marks> dm;
  const auto* marks = reinterpret_cast<const Marks*>(below_bits);
  for (std::size_t first = 0; first < kBlock / kChunk; first += hn::Lanes(dm)) {
    std::uint64_t marked = MaskBits(dm, hn::Ne(hn::LoadU(dm, marks + first), hn::Zero(dm)));
    while (marked != 0) {
      const std::size_t j = (first + hwy::Num0BitsBelowLS1Bit_Nonzero64(marked)) * kChunk;
      marked &= marked - 1;
      StoreBelowNormalCodes<kFormat>(d32, WidenToF32Bits<kKind>(d32, src + j * kInBytes), out + j);
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace lmcache::fp8_internal
HWY_AFTER_NAMESPACE();

#endif  // LMCACHE_FP8_SUBNORMAL_PASS_INL_H_ toggle
