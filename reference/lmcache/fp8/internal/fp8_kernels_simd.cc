// File: lmcache/fp8/internal/fp8_kernels_simd.cc
//
// Compiles fp8_kernels-inl.h once per Highway target (foreach_target.h re-includes this file)
// and exports each target's kernel table for dynamic dispatch. Looking up the table of one
// named target goes straight to Highway's dispatch table, so forcing a target (tests,
// benchmarks) touches no global state.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lmcache/fp8/internal/fp8_kernels_simd.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "lmcache/fp8/internal/fp8_kernels-inl.h"

#if HWY_ONCE
#include <stdexcept>
#include <string>

#include "lmcache/fp8/internal/fp8_kernels_simd.h"

namespace lmcache::fp8_internal {

HWY_EXPORT(GetSimdKernels);

std::vector<std::int64_t> simd_targets() { return hwy::SupportedAndGeneratedTargets(); }

const SimdKernels& simd_kernels(std::int64_t target) {
  if (target == 0) return *HWY_DYNAMIC_DISPATCH(GetSimdKernels)();

  const bool single_bit = target > 0 && (target & (target - 1)) == 0;
  const bool usable =
      single_bit && (target & HWY_TARGETS) != 0 && (target & hwy::SupportedTargets()) != 0;
  if (!usable) {
    throw std::invalid_argument("SIMD target " + std::to_string(target) + " (" +
                                (single_bit ? hwy::TargetName(target) : "not a single target") +
                                ") is not compiled in or not supported by this CPU");
  }
  // The index HWY_DYNAMIC_DISPATCH would use if `target` were the best one: the fallback
  // (scalar/EMU128) is the table's last entry, every other target sits at its bit position.
  const bool fallback = (target & (HWY_SCALAR | HWY_EMU128)) != 0;
  const std::size_t index = fallback
                                ? HWY_MAX_DYNAMIC_TARGETS + 1
                                : hwy::Num0BitsBelowLS1Bit_Nonzero64(
                                      static_cast<std::uint64_t>(HWY_CHOSEN_TARGET_SHIFT(target)));
  const auto fn = HWY_DISPATCH_TABLE(GetSimdKernels)[index];
  const SimdKernels* kernels = fn == nullptr ? nullptr : fn();
  if (kernels == nullptr || kernels->target != target) {
    throw std::logic_error("Highway dispatch table has no entry for SIMD target " +
                           std::string(hwy::TargetName(target)));
  }
  return *kernels;
}

}  // namespace lmcache::fp8_internal
#endif  // HWY_ONCE
