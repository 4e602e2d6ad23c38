// File: lmcache/fp8/internal/fp8_simd_common-inl.h
//
// What every part of the fp8 SIMD kernels shares: the float32-lane tag, which element types a
// kernel reads and writes, a mask as bits, and the exact widening of a source to float32.
// Per-target Highway code, re-included once per SIMD target through fp8_kernels-inl.h (hence
// the toggling include guard).

#if defined(LMCACHE_FP8_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LMCACHE_FP8_SIMD_COMMON_INL_H_
#undef LMCACHE_FP8_SIMD_COMMON_INL_H_
#else
#define LMCACHE_FP8_SIMD_COMMON_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace lmcache::fp8_internal {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D32 = hn::ScalableTag<std::uint32_t>;
using V32 = hn::Vec<D32>;

// Which source element type a kernel reads.
enum class SrcKind { kF32, kF16, kBF16 };

// WidenToF32Bits<kKind>()
//
// The float32 bits of Lanes(d) source elements at `p` (exact: float16 and bfloat16 widen
// without rounding).
template <SrcKind kKind>
HWY_INLINE V32 WidenToF32Bits(D32 d, const std::byte* p) {
  if constexpr (kKind == SrcKind::kF32) {
    return hn::LoadU(d, reinterpret_cast<const std::uint32_t*>(p));
  } else if constexpr (kKind == SrcKind::kBF16) {
    const hn::Rebind<std::uint16_t, D32> d16;
    return hn::ShiftLeft<16>(
        hn::PromoteTo(d, hn::LoadU(d16, reinterpret_cast<const std::uint16_t*>(p))));
  } else {
    const hn::Rebind<hwy::float16_t, D32> d16;
    const hn::Rebind<float, D32> df;
    return hn::BitCast(
        d, hn::PromoteTo(df, hn::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(p))));
  }
}

// MaskBits()
//
// The lanes of `m` as bits, lane 0 in bit 0 (at most 64 lanes).
template <class D>
HWY_INLINE std::uint64_t MaskBits(D d, hn::Mask<D> m) {
  std::uint8_t bytes[8] = {};
  hn::StoreMaskBits(d, m, bytes);
  std::uint64_t bits;
  std::memcpy(&bits, bytes, sizeof bits);
  return bits;
}

// Which destination element type a decode kernel writes.
enum class DstKind { kF32, kF16, kBF16 };

}  // namespace HWY_NAMESPACE
}  // namespace lmcache::fp8_internal
HWY_AFTER_NAMESPACE();

#endif  // LMCACHE_FP8_SIMD_COMMON_INL_H_ toggle
