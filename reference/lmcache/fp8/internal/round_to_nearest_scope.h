// File: lmcache/fp8/internal/round_to_nearest_scope.h
//
// A scope that runs the FPU in round-to-nearest-even whatever mode the caller set, for kernels
// whose bytes come from an FPU rounding (fp8_subnormal_pass-inl.h), so that their output does not
// depend on the caller's floating-point environment.
#ifndef LMCACHE_FP8_INTERNAL_ROUND_TO_NEAREST_SCOPE_H_
#define LMCACHE_FP8_INTERNAL_ROUND_TO_NEAREST_SCOPE_H_

#include <cfenv>

#include "hwy/base.h"  // HWY_ARCH_X86
#if HWY_ARCH_X86
#include <xmmintrin.h>  // _mm_getcsr / _mm_setcsr
#endif

namespace lmcache::fp8_internal {

// RoundToNearestScope
//
// Sets the floating-point rounding mode to round-to-nearest-even for its lifetime if a caller
// changed it (StoreBelowNormalCodes rounds with the FPU), and restores the caller's mode.
class RoundToNearestScope {
 public:
  // Does nothing unless `active`.
  explicit RoundToNearestScope(bool active) : active_(active) {
    if (!active_) return;
#if HWY_ARCH_X86
    saved_ = _mm_getcsr();  // SSE/AVX arithmetic rounds by MXCSR, not the x87 control word
    if ((saved_ & kRoundingBits) != 0) _mm_setcsr(saved_ & ~kRoundingBits);
#else
    saved_ = std::fegetround();
    if (saved_ != FE_TONEAREST) std::fesetround(FE_TONEAREST);
#endif
  }
  ~RoundToNearestScope() {
    if (!active_) return;
#if HWY_ARCH_X86
    if ((saved_ & kRoundingBits) != 0) _mm_setcsr(saved_);
#else
    if (saved_ != FE_TONEAREST) std::fesetround(saved_);
#endif
  }
  RoundToNearestScope(const RoundToNearestScope&) = delete;
  RoundToNearestScope& operator=(const RoundToNearestScope&) = delete;

 private:
  bool active_;
#if HWY_ARCH_X86
  static constexpr unsigned kRoundingBits = 0x6000;  // MXCSR.RC
  unsigned saved_ = 0;
#else
  int saved_ = FE_TONEAREST;
#endif
};

}  // namespace lmcache::fp8_internal

#endif  // LMCACHE_FP8_INTERNAL_ROUND_TO_NEAREST_SCOPE_H_
