// File: lmcache/fp8/internal/fp8_wide_kind.h
//
// Internal: the wide (unencoded) element kinds of the fp8 kernels. The SIMD kernel tables are
// indexed by it and the CUDA launchers take it, so both backends name a dtype the same way.
#pragma once

namespace lmcache::fp8_internal {

enum WideKind : int { kWideF32 = 0, kWideF16 = 1, kWideBF16 = 2, kNumWide = 3 };

}  // namespace lmcache::fp8_internal
