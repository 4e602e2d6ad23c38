// File: lmcache/fp8/fp8_kernels_test.cc
//
// The fast fp8 kernels against the scalar reference codec, byte for byte.
//
// Fp8KernelsTarget runs each case once per SIMD target that is compiled in and supported by
// this CPU, Highway's way (hwy::TestWithParamTarget forces the target through
// hwy::SetSupportedTargetsForTest, and the case checks that the kernels really run on it).
// Fp8Kernels holds the target-independent cases: errors, backends, explicit targets, names.
#include "lmcache/fp8/fp8_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hwy/tests/hwy_gtest.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"
#include "lmcache/fp8/internal/fp8_kernels_simd.h"
#include "lmcache/fp8/testing/fp8_samples.h"
#include "lmcache/fp8/testing/kernel_checks.h"

namespace lmcache::fp8 {
namespace {

using namespace fp8_internal;  // the samples, the reference and the checks (testing/)
using ::testing::HasSubstr;

constexpr KernelOptions kSimd = kSimdOneThread;

std::string dtype_str(DType d) { return std::string(dtype_name(d)); }

// ---------------------------------------------------------------------------------------------
// Per SIMD target.

class Fp8KernelsTarget : public hwy::TestWithParamTarget {
 protected:
  void SetUp() override {
    hwy::TestWithParamTarget::SetUp();
    // The forced target is the one the kernels dispatch to.
    ASSERT_EQ(fp8_active_simd_target(kSimd), GetParam())
        << "expected " << fp8_simd_target_name(GetParam());
  }
};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Fp8KernelsTarget);

// The thread-split cases, run under TSan too (see CONTRIBUTING.md, "Tests").
class Fp8KernelsTargetConcurrency : public Fp8KernelsTarget {};
HWY_TARGET_INSTANTIATE_TEST_SUITE_P(Fp8KernelsTargetConcurrency);

TEST_P(Fp8KernelsTarget, EveryFloat16MatchesReference) {
  const auto src = fp8_internal::all_16bit_patterns();
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) EXPECT_TRUE(EncodeMatches(src, DType::kFloat16, f, o));
  }
}

TEST_P(Fp8KernelsTarget, EveryBFloat16MatchesReference) {
  const auto src = fp8_internal::all_16bit_patterns();
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) EXPECT_TRUE(EncodeMatches(src, DType::kBFloat16, f, o));
  }
}

TEST_P(Fp8KernelsTarget, DenseFloat32SampleMatchesReference) {
  const auto src = fp8_internal::as_bytes(fp8_internal::dense_f32_sample());
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) EXPECT_TRUE(EncodeMatches(src, DType::kFloat32, f, o));
  }
}

// The same elements in a fixed random order: every vector then mixes lanes below the fp8
// normal range (the subnormal and zero codes, redone in a second pass) with normal, overflowing
// and NaN lanes, where the sorted inputs above put each range in vectors of its own.
std::vector<std::byte> shuffled(std::vector<std::byte> bytes, std::size_t elem,
                                std::uint32_t seed) {
  std::vector<std::size_t> order(bytes.size() / elem);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  std::vector<std::byte> out(bytes.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    std::memcpy(out.data() + i * elem, bytes.data() + order[i] * elem, elem);
  }
  return out;
}

TEST_P(Fp8KernelsTarget, ShuffledElementsMatchReference) {
  const auto bits16 = shuffled(fp8_internal::all_16bit_patterns(), 2, 7);
  const auto bits32 = shuffled(fp8_internal::as_bytes(fp8_internal::dense_f32_sample()), 4, 7);
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      EXPECT_TRUE(EncodeMatches(bits16, DType::kFloat16, f, o));
      EXPECT_TRUE(EncodeMatches(bits16, DType::kBFloat16, f, o));
      EXPECT_TRUE(EncodeMatches(bits32, DType::kFloat32, f, o));
    }
  }
}

// The rounding mode float arithmetic runs under, found by rounding sums (std::fegetround can
// report the x87 control word while SSE/AVX code rounds by MXCSR).
int float_rounding_mode() {
  volatile float one = 1.0f;
  volatile float quarter_ulp = 0x1p-25f;
  volatile float three_quarters_ulp = 0x3p-25f;
  if (one + quarter_ulp > 1.0f) return FE_UPWARD;
  if (one + three_quarters_ulp > 1.0f) return FE_TONEAREST;
  if (-one - three_quarters_ulp < -1.0f) return FE_DOWNWARD;
  return FE_TOWARDZERO;
}

// Part of the encode rounds with the FPU (the values below the fp8 normal range); a caller's
// rounding mode must change neither the bytes nor, afterwards, the caller's mode.
TEST_P(Fp8KernelsTarget, EncodeIgnoresTheCallersRoundingModeAndKeepsIt) {
  const auto bits16 = shuffled(fp8_internal::all_16bit_patterns(), 2, 11);
  const auto bits32 = shuffled(fp8_internal::as_bytes(fp8_internal::dense_f32_sample()), 4, 11);
  struct Case {
    DType dtype;
    const std::vector<std::byte>* src;
  };
  for (const Case c : {Case{DType::kFloat16, &bits16}, Case{DType::kBFloat16, &bits16},
                       Case{DType::kFloat32, &bits32}}) {
    const std::size_t n = c.src->size() / element_size(c.dtype);
    const auto want = fp8_internal::reference_encode(*c.src, c.dtype, Fp8Format::kE4M3FN,
                                                     Fp8Overflow::kSaturating);
    for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
      std::vector<std::uint8_t> got(n);
      ASSERT_EQ(std::fesetround(mode), 0);
      fp8_encode_fast(*c.src, c.dtype, n, got, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating, kSimd);
      const int after = float_rounding_mode();
      std::fesetround(FE_TONEAREST);
      EXPECT_EQ(after, mode) << dtype_str(c.dtype);
      EXPECT_EQ(first_mismatch(std::span<const std::uint8_t>(got), want), -1)
          << dtype_str(c.dtype) << " under rounding mode " << mode;
    }
  }
}

TEST_P(Fp8KernelsTarget, EveryCodeDecodesLikeReference) {
  const auto codes = fp8_internal::all_codes();
  for (Fp8Format f : kFormats) {
    for (DType d : kWideDTypes) EXPECT_TRUE(DecodeMatches(codes, d, f));
  }
}

// Lengths around every vector size (up to 64 lanes of u8 on AVX-512 for the e5m2 -> f16
// path), at every byte offset, with guard bytes on both sides that must stay untouched.
TEST_P(Fp8KernelsTarget, OddLengthsAndUnalignedPointers) {
  const std::vector<std::size_t> lengths = {0,  1,  2,  3,  4,  5,  7,  8,  9,   15,  16, 17,
                                            31, 32, 33, 47, 63, 64, 65, 95, 127, 129, 257};
  const auto pool = random_bytes(4 * 300 + 64, 99);
  constexpr std::uint8_t kGuard = 0xA5;
  for (std::size_t n : lengths) {
    for (std::size_t in_off = 0; in_off < 4; ++in_off) {
      for (std::size_t out_off = 0; out_off < 4; ++out_off) {
        for (DType d : kWideDTypes) {
          const std::size_t elem = element_size(d);
          const std::span<const std::byte> src(pool.data() + in_off, n * elem);
          for (Fp8Format f : kFormats) {
            for (Fp8Overflow o : kOverflows) {
              const auto want = fp8_internal::reference_encode(src, d, f, o);
              std::vector<std::uint8_t> buf(n + 8, kGuard);
              fp8_encode_fast(src, d, n, std::span<std::uint8_t>(buf.data() + out_off, n), f, o,
                              kSimd);
              ASSERT_TRUE(std::equal(want.begin(), want.end(), buf.begin() + out_off))
                  << "encode " << dtype_str(d) << " " << mode_name(f, o) << " n=" << n
                  << " in_off=" << in_off << " out_off=" << out_off;
              for (std::size_t k = 0; k < buf.size(); ++k) {
                if (k >= out_off && k < out_off + n) continue;
                ASSERT_EQ(buf[k], kGuard) << "encode wrote outside dst, n=" << n;
              }
            }
            // Decode from the same pool (any byte is a code).
            const std::span<const std::uint8_t> codes(
                reinterpret_cast<const std::uint8_t*>(pool.data()) + in_off, n);
            const auto want = fp8_internal::reference_decode(codes, d, f);
            std::vector<std::byte> buf(n * elem + 8, std::byte{kGuard});
            fp8_decode_fast(codes, n, std::span<std::byte>(buf.data() + out_off, n * elem), d, f,
                            kSimd);
            ASSERT_TRUE(std::equal(want.begin(), want.end(), buf.begin() + out_off))
                << "decode " << dtype_str(d) << " " << fp8_format_name(f) << " n=" << n
                << " in_off=" << in_off << " out_off=" << out_off;
            for (std::size_t k = 0; k < buf.size(); ++k) {
              if (k >= out_off && k < out_off + n * elem) continue;
              ASSERT_EQ(buf[k], std::byte{kGuard}) << "decode wrote outside dst, n=" << n;
            }
          }
        }
      }
    }
  }
}

// The large cases' inputs and reference outputs are the same for every SIMD target: computed
// once per process (the reference is scalar code; under ASan it took most of each case).
struct LargeDecodeCase {
  std::size_t n = fp8_internal::kStreamMinBytes / 2 + 77;  // 16-bit output: above the minimum
  std::vector<std::byte> pool = random_bytes(n + 8, 21);
  std::span<const std::uint8_t> codes() const {
    return {reinterpret_cast<const std::uint8_t*>(pool.data()), n};
  }
  std::map<std::pair<Fp8Format, DType>, std::vector<std::byte>> want;
};
const LargeDecodeCase& large_decode_case() {
  static const LargeDecodeCase c = [] {
    LargeDecodeCase c;
    for (Fp8Format f : kFormats) {
      for (DType d : kWideDTypes) c.want[{f, d}] = reference_decode(c.codes(), d, f);
    }
    return c;
  }();
  return c;
}

struct LargeEncodeCase {
  std::size_t n = fp8_internal::kStreamMinBytes + 45;
  std::vector<std::byte> pool = random_bytes(n * 2, 23);
  std::vector<std::byte> f32 = as_bytes(dense_f32_sample(n));
  std::span<const std::byte> src(DType d) const {
    return d == DType::kFloat32 ? std::span<const std::byte>(f32.data(), n * 4)
                                : std::span<const std::byte>(pool.data(), n * 2);
  }
  std::map<std::pair<Fp8Format, DType>, std::vector<std::uint8_t>> want;
};
const LargeEncodeCase& large_encode_case() {
  static const LargeEncodeCase c = [] {
    LargeEncodeCase c;
    for (Fp8Format f : kFormats) {
      for (DType d : kWideDTypes) {
        c.want[{f, d}] = reference_encode(c.src(d), d, f, Fp8Overflow::kSaturating);
      }
    }
    return c;
  }();
  return c;
}

// Outputs of kStreamMinBytes or more take the non-temporal path, which first aligns the
// destination with scalar stores; check it at an aligned, an element-aligned and an unaligned
// (ordinary stores) destination, with a ragged tail.
TEST_P(Fp8KernelsTarget, LargeDecodeWithStreamingStoresMatchesReference) {
  const LargeDecodeCase& c = large_decode_case();
  const std::size_t n = c.n;
  for (Fp8Format f : kFormats) {
    for (DType d : kWideDTypes) {
      const std::size_t elem = element_size(d);
      const auto& want = c.want.at({f, d});
      std::vector<std::byte> buf(n * elem + 128);
      const std::size_t misalign = reinterpret_cast<std::uintptr_t>(buf.data()) % 64;
      std::byte* aligned = buf.data() + (64 - misalign) % 64;  // 64-byte aligned
      for (std::size_t offset : {std::size_t{0}, elem, std::size_t{1}}) {
        const std::span<std::byte> out(aligned + offset, n * elem);
        fp8_decode_fast(c.codes(), n, out, d, f, kSimd);
        EXPECT_EQ(first_mismatch(std::span<const std::byte>(out), want, elem), -1)
            << fp8_format_name(f) << " -> " << dtype_str(d) << " offset " << offset;
      }
    }
  }
}

// Encode outputs of kStreamMinBytes or more take the non-temporal path on AVX2 and AVX-512
// (after a scalar head that aligns the destination to 32 or 64 bytes); check it for every
// dtype and format (one pass for e5m2, two for e4m3fn) at an aligned destination and two
// that need a head.
TEST_P(Fp8KernelsTarget, LargeEncodeWithStreamingStoresMatchesReference) {
  const LargeEncodeCase& c = large_encode_case();
  const std::size_t n = c.n;
  for (DType d : kWideDTypes) {
    for (Fp8Format f : kFormats) {
      const auto& want = c.want.at({f, d});
      std::vector<std::uint8_t> buf(n + 128);
      const std::size_t misalign = reinterpret_cast<std::uintptr_t>(buf.data()) % 64;
      std::uint8_t* aligned = buf.data() + (64 - misalign) % 64;
      for (std::size_t offset : {0, 1, 63}) {
        const std::span<std::uint8_t> out(aligned + offset, n);
        fp8_encode_fast(c.src(d), d, n, out, f, Fp8Overflow::kSaturating, kSimd);
        EXPECT_EQ(first_mismatch(std::span<const std::uint8_t>(out), want), -1)
            << dtype_str(d) << " " << fp8_format_name(f) << " offset " << offset;
      }
    }
  }
}

TEST_P(Fp8KernelsTargetConcurrency, ThreadCountDoesNotChangeBytes) {
  const std::size_t n = 3 * kMinElementsPerThread + 12345;
  const auto src = random_bytes(n * 4, 5);
  for (DType d : kWideDTypes) {
    const auto want =
        fp8_internal::reference_encode(std::span<const std::byte>(src.data(), n * element_size(d)),
                                       d, Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating);
    for (std::size_t threads : {1, 2, 3, 7}) {
      KernelOptions opt = kSimd;
      opt.threads = threads;
      std::vector<std::uint8_t> got(n, 0);
      fp8_encode_fast(src, d, n, got, Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating, opt);
      EXPECT_EQ(first_mismatch(got, want), -1) << dtype_str(d) << " threads=" << threads;
    }
  }
  const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(src.data()), n);
  for (DType d : kWideDTypes) {
    const auto want = fp8_internal::reference_decode(codes, d, Fp8Format::kE5M2);
    for (std::size_t threads : {1, 2, 3, 7}) {
      KernelOptions opt = kSimd;
      opt.threads = threads;
      std::vector<std::byte> got(want.size());
      fp8_decode_fast(codes, n, got, d, Fp8Format::kE5M2, opt);
      EXPECT_EQ(first_mismatch(got, want, element_size(d)), -1)
          << dtype_str(d) << " threads=" << threads;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Target-independent.

TEST(Fp8Kernels, TargetsAreListedBestFirstAndEndInAFallback) {
  const auto targets = fp8_simd_targets();
  ASSERT_FALSE(targets.empty());
  for (std::size_t i = 1; i < targets.size(); ++i) EXPECT_LT(targets[i - 1], targets[i]);
  // The last one is the scalar fallback every CPU runs.
  EXPECT_THAT(fp8_simd_target_name(targets.back()),
              ::testing::AnyOf(std::string("SCALAR"), std::string("EMU128")));
  EXPECT_EQ(fp8_active_simd_target(kSimd), targets.front());
}

TEST(Fp8Kernels, EveryExplicitTargetMatchesReference) {
  const auto src = fp8_internal::as_bytes(fp8_internal::dense_f32_sample(1 << 14));
  const auto codes = fp8_internal::all_codes();
  for (std::int64_t t : fp8_simd_targets()) {
    KernelOptions opt = kSimd;
    opt.simd_target = t;
    ASSERT_EQ(fp8_active_simd_target(opt), t);
    for (Fp8Format f : kFormats) {
      for (Fp8Overflow o : kOverflows) {
        EXPECT_TRUE(EncodeMatches(src, DType::kFloat32, f, o, opt)) << fp8_simd_target_name(t);
      }
      for (DType d : kWideDTypes) {
        EXPECT_TRUE(DecodeMatches(codes, d, f, opt)) << fp8_simd_target_name(t);
      }
    }
  }
}

TEST(Fp8Kernels, ScalarAndAutoBackendsMatchReference) {
  const auto src = fp8_internal::all_16bit_patterns();
  const auto codes = fp8_internal::all_codes();
  for (Fp8Backend b : {Fp8Backend::kScalar, Fp8Backend::kAuto}) {
    const KernelOptions opt{.threads = 2, .backend = b};
    for (Fp8Format f : kFormats) {
      EXPECT_TRUE(EncodeMatches(src, DType::kFloat16, f, Fp8Overflow::kSaturating, opt))
          << fp8_backend_name(b);
      EXPECT_TRUE(DecodeMatches(codes, DType::kBFloat16, f, opt)) << fp8_backend_name(b);
    }
  }
  EXPECT_EQ(fp8_resolve_backend({}), Fp8Backend::kSimd);
  EXPECT_EQ(fp8_resolve_backend({.backend = Fp8Backend::kScalar}), Fp8Backend::kScalar);
}

TEST(Fp8KernelsConcurrency, ThreadsSplitScalarBackendToo) {
  const std::size_t n = 2 * kMinElementsPerThread + 77;
  const auto src = random_bytes(n * 2, 11);
  EXPECT_TRUE(EncodeMatches(src, DType::kBFloat16, Fp8Format::kE5M2, Fp8Overflow::kSaturating,
                            {.threads = 3, .backend = Fp8Backend::kScalar}));
}

// Runs `call` against the reference and the fast kernels on buffers pre-filled with a guard;
// both must throw std::invalid_argument with the same message and leave the buffer alone.
void ExpectSameError(const std::function<void(bool fast, std::span<std::uint8_t> buf)>& call) {
  std::vector<std::uint8_t> ref_buf(64, 0x5A);
  std::vector<std::uint8_t> fast_buf(64, 0x5A);
  std::string ref_what;
  std::string fast_what;
  try {
    call(false, ref_buf);
    ADD_FAILURE() << "the reference did not throw";
  } catch (const std::invalid_argument& e) {
    ref_what = e.what();
  }
  try {
    call(true, fast_buf);
    ADD_FAILURE() << "the fast kernel did not throw (reference: " << ref_what << ")";
  } catch (const std::invalid_argument& e) {
    fast_what = e.what();
  }
  EXPECT_EQ(fast_what, ref_what);
  EXPECT_FALSE(fast_what.empty());
  EXPECT_TRUE(std::all_of(fast_buf.begin(), fast_buf.end(), [](auto b) { return b == 0x5A; }))
      << "the fast kernel wrote before throwing: " << fast_what;
}

TEST(Fp8Kernels, EncodeErrorsMatchReferenceAndWriteNothing) {
  const std::vector<std::byte> src(40, std::byte{0x3C});  // 10 f32, 20 f16
  const auto encode = [&](std::span<const std::byte> s, DType d, std::size_t n, Fp8Format f,
                          Fp8Overflow o) {
    return [=](bool fast, std::span<std::uint8_t> dst) {
      if (fast) {
        fp8_encode_fast(s, d, n, dst, f, o, kSimd);
      } else {
        fp8_encode(s, d, n, dst, f, o);
      }
    };
  };
  const auto e4 = Fp8Format::kE4M3FN;
  const auto ns = Fp8Overflow::kNonSaturating;
  ExpectSameError(encode(src, DType::kFloat32, 11, e4, ns));     // short source
  ExpectSameError(encode(src, DType::kFloat16, 21, e4, ns));     // short source
  ExpectSameError(encode(src, DType::kFloat16, 65, e4, ns));     // short source first
  ExpectSameError([&](bool fast, std::span<std::uint8_t> dst) {  // short destination
    const auto d = dst.first(9);
    fast ? fp8_encode_fast(src, DType::kFloat32, 10, d, e4, ns, kSimd)
         : fp8_encode(src, DType::kFloat32, 10, d, e4, ns);
  });
  for (DType bad : {DType::kUInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    ExpectSameError(encode(src, bad, 4, e4, ns));
  }
  ExpectSameError(encode(src, DType::kFloat32, 4, static_cast<Fp8Format>(9), ns));
  ExpectSameError(encode(src, DType::kFloat32, 4, e4, static_cast<Fp8Overflow>(9)));
  ExpectSameError(encode(src, DType::kFloat32, SIZE_MAX / 2, e4, ns));  // byte size overflows
}

TEST(Fp8Kernels, DecodeErrorsMatchReferenceAndWriteNothing) {
  const std::vector<std::uint8_t> codes(32, 0x38);  // the destination buffer has 64 bytes
  const auto decode = [&](std::size_t n, DType d, Fp8Format f) {
    return [=](bool fast, std::span<std::uint8_t> dst) {
      const auto out = std::as_writable_bytes(dst);
      if (fast) {
        fp8_decode_fast(codes, n, out, d, f, kSimd);
      } else {
        fp8_decode(codes, n, out, d, f);
      }
    };
  };
  ExpectSameError(decode(33, DType::kFloat16, Fp8Format::kE5M2));     // short source
  ExpectSameError(decode(17, DType::kFloat32, Fp8Format::kE5M2));     // short destination
  ExpectSameError(decode(33, DType::kBFloat16, Fp8Format::kE4M3FN));  // both: source first
  for (DType bad : {DType::kUInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    ExpectSameError(decode(4, bad, Fp8Format::kE4M3FN));
  }
  ExpectSameError(decode(4, DType::kFloat32, static_cast<Fp8Format>(3)));
  ExpectSameError(decode(SIZE_MAX / 2, DType::kFloat32, Fp8Format::kE4M3FN));
}

TEST(Fp8Kernels, OptionErrorsThrowBeforeWriting) {
  const std::vector<std::byte> src(64, std::byte{0x40});
  std::vector<std::uint8_t> dst(16, 0x5A);
  const auto call = [&](const KernelOptions& opt) {
    fp8_encode_fast(src, DType::kFloat32, 16, dst, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating,
                    opt);
  };
  EXPECT_THAT([&] { call({.threads = 0}); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("threads")));
  EXPECT_THROW(call({.backend = static_cast<Fp8Backend>(17)}), std::invalid_argument);
  // Not a single target; a target that was never compiled (bit 0 is not an x86 target).
  EXPECT_THROW(call({.backend = Fp8Backend::kSimd, .simd_target = 3}), std::invalid_argument);
  EXPECT_THAT([&] { call({.backend = Fp8Backend::kSimd, .simd_target = 1}); },
              ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("not compiled in")));
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](auto b) { return b == 0x5A; }));
}

TEST(Fp8Kernels, CudaBackendWithoutGpuThrowsBeforeWriting) {
  if (fp8_cuda_available()) GTEST_SKIP() << "a CUDA GPU is present (fp8_kernels_cuda_test)";
  const std::vector<std::byte> src(64, std::byte{0x40});
  std::vector<std::uint8_t> dst(16, 0x5A);
  const KernelOptions opt{.backend = Fp8Backend::kCuda};
  EXPECT_THAT(
      [&] {
        fp8_encode_fast(src, DType::kFloat32, 16, dst, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating,
                        opt);
      },
      ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("cuda")));
  std::vector<std::byte> out(64, std::byte{0x5A});
  EXPECT_THROW(fp8_decode_fast(dst, 16, out, DType::kFloat32, Fp8Format::kE5M2, opt),
               std::runtime_error);
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](auto b) { return b == 0x5A; }));
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](auto b) { return b == std::byte{0x5A}; }));
}

TEST(Fp8Kernels, ZeroCountAcceptsEmptyBuffers) {
  for (Fp8Backend b : {Fp8Backend::kAuto, Fp8Backend::kScalar, Fp8Backend::kSimd}) {
    EXPECT_NO_THROW(fp8_encode_fast({}, DType::kFloat16, 0, {}, Fp8Format::kE5M2,
                                    Fp8Overflow::kNonSaturating, {.backend = b}));
    EXPECT_NO_THROW(
        fp8_decode_fast({}, 0, {}, DType::kBFloat16, Fp8Format::kE4M3FN, {.backend = b}));
  }
}

TEST(Fp8KernelsConcurrency, RooflineCopyCopiesEveryByteWhateverTheSplit) {
  // Element counts that split into 1, 2 and 3 ranges; byte counts that are not a multiple of
  // the element count (the scaled boundaries must still tile the copy exactly).
  for (std::size_t elements : {std::size_t{1}, kMinElementsPerThread, 2 * kMinElementsPerThread,
                               3 * kMinElementsPerThread + 77}) {
    for (std::size_t bytes : {std::size_t{1}, std::size_t{4095}, elements * 3 / 2 + 1}) {
      const auto src = random_bytes(bytes, 11);
      for (std::size_t threads : {1, 2, 3, 7}) {
        for (std::size_t piece : {std::size_t{0}, std::size_t{2048}, std::size_t{5}}) {
          std::vector<std::byte> dst(bytes + 16, std::byte{0x5A});
          fp8_roofline_copy(dst, src, elements, {.threads = threads}, piece);
          EXPECT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0)
              << elements << " elements, " << bytes << " bytes, threads " << threads << ", pieces "
              << piece;
          EXPECT_TRUE(std::all_of(dst.begin() + static_cast<std::ptrdiff_t>(bytes), dst.end(),
                                  [](std::byte b) { return b == std::byte{0x5A}; }));
        }
      }
    }
  }
}

TEST(Fp8Kernels, RooflineCopyRejectsBadArguments) {
  const std::vector<std::byte> src(64, std::byte{1});
  std::vector<std::byte> dst(64);
  std::vector<std::byte> short_dst(63);
  EXPECT_THROW(fp8_roofline_copy(dst, src, 8, {.threads = 0}), std::invalid_argument);
  EXPECT_THROW(fp8_roofline_copy(short_dst, src, 8, {}), std::invalid_argument);
  EXPECT_THROW(fp8_roofline_copy(dst, src, 0, {}), std::invalid_argument);
  EXPECT_NO_THROW(fp8_roofline_copy({}, {}, 0, {}));
}

TEST(Fp8Kernels, BackendNamesRoundTrip) {
  for (Fp8Backend b :
       {Fp8Backend::kAuto, Fp8Backend::kScalar, Fp8Backend::kSimd, Fp8Backend::kCuda}) {
    EXPECT_EQ(parse_fp8_backend(fp8_backend_name(b)), b);
  }
  EXPECT_EQ(fp8_backend_name(Fp8Backend::kSimd), "simd");
  EXPECT_EQ(parse_fp8_backend("SIMD"), std::nullopt);
  EXPECT_EQ(fp8_backend_name(static_cast<Fp8Backend>(42)), "invalid");
}

}  // namespace
}  // namespace lmcache::fp8
