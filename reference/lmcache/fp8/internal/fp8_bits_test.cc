// File: lmcache/fp8/internal/fp8_bits_test.cc
//
// The shared per-element functions (fp8_bits.h, also the CUDA kernels' code) against the
// scalar reference codec: every float16 and bfloat16 pattern, the dense float32 sample, and
// every code decoded to each dtype, bit for bit.
#include "lmcache/fp8/internal/fp8_bits.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "lmcache/fp8/testing/fp8_samples.h"

namespace lmcache::fp8 {
namespace {

namespace fb = fp8_internal::fp8_bits;
using fp8_internal::kFormats;
using fp8_internal::kOverflows;
using fp8_internal::mode_name;

template <Fp8Format kF, bool kSat>
struct Encoders {
  static std::uint8_t f32(std::uint32_t b) { return fb::encode_f32_bits<kF, kSat>(b); }
  static std::uint8_t f16(std::uint16_t b) { return fb::encode_f16_bits<kF, kSat>(b); }
  static std::uint8_t bf16(std::uint16_t b) { return fb::encode_bf16_bits<kF, kSat>(b); }
};

using F32Fn = std::uint8_t (*)(std::uint32_t);
using F16Fn = std::uint8_t (*)(std::uint16_t);

struct Mode {
  Fp8Format format;
  Fp8Overflow overflow;
  F32Fn f32;
  F16Fn f16;
  F16Fn bf16;
};

template <Fp8Format kF, bool kSat>
Mode make_mode() {
  return {kF, kSat ? Fp8Overflow::kSaturating : Fp8Overflow::kNonSaturating,
          &Encoders<kF, kSat>::f32, &Encoders<kF, kSat>::f16, &Encoders<kF, kSat>::bf16};
}

const Mode kModes[] = {make_mode<Fp8Format::kE4M3FN, false>(),
                       make_mode<Fp8Format::kE4M3FN, true>(), make_mode<Fp8Format::kE5M2, false>(),
                       make_mode<Fp8Format::kE5M2, true>()};

TEST(Fp8Bits, EveryFloat16AndBFloat16MatchesReference) {
  for (const Mode& m : kModes) {
    int mismatches = 0;
    for (std::uint32_t i = 0; i < 65536; ++i) {
      const auto h = static_cast<std::uint16_t>(i);
      const std::uint8_t want16 = fp8_encode_f16_bits(h, m.format, m.overflow);
      const std::uint8_t want_bf = fp8_encode_bf16_bits(h, m.format, m.overflow);
      if (m.f16(h) != want16 && ++mismatches < 5) {
        ADD_FAILURE() << mode_name(m.format, m.overflow) << " f16 0x" << std::hex << i << ": got 0x"
                      << int{m.f16(h)} << ", want 0x" << int{want16};
      }
      if (m.bf16(h) != want_bf && ++mismatches < 5) {
        ADD_FAILURE() << mode_name(m.format, m.overflow) << " bf16 0x" << std::hex << i
                      << ": got 0x" << int{m.bf16(h)} << ", want 0x" << int{want_bf};
      }
    }
    EXPECT_EQ(mismatches, 0) << mode_name(m.format, m.overflow);
  }
}

TEST(Fp8Bits, DenseFloat32SampleMatchesReference) {
  const auto sample = fp8_internal::dense_f32_sample();
  ASSERT_GT(sample.size(), 100000u);
  for (const Mode& m : kModes) {
    int mismatches = 0;
    for (std::uint32_t b : sample) {
      const std::uint8_t want =
          fp8_encode_f32(fp8_internal::f32_from_bits(b), m.format, m.overflow);
      if (m.f32(b) != want && ++mismatches < 5) {
        ADD_FAILURE() << mode_name(m.format, m.overflow) << " f32 0x" << std::hex << b << ": got 0x"
                      << int{m.f32(b)} << ", want 0x" << int{want};
      }
    }
    EXPECT_EQ(mismatches, 0) << mode_name(m.format, m.overflow);
  }
}

TEST(Fp8Bits, WorkedExamples) {
  // A few rows of docs/fp8.md §3.6, straight from the table (not via the reference).
  using F = Fp8Format;
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, false>(0x43E80000u)), 0x7E);  // 464 tie
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, false>(0x43E80001u)), 0x7F);  // > 464: NaN
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, true>(0x43E80001u)), 0x7E);   // saturates
  EXPECT_EQ((fb::encode_f32_bits<F::kE5M2, false>(0x47700000u)), 0x7C);    // 61440 -> inf
  EXPECT_EQ((fb::encode_f32_bits<F::kE5M2, false>(0x3F900001u)), 0x3D);    // no fp16 detour
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, false>(0x3A800000u)), 0x00);  // 2^-10 tie
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, false>(0x3A800001u)), 0x01);
  EXPECT_EQ((fb::encode_f32_bits<F::kE4M3FN, false>(0xFFC00000u)), 0xFF);  // -NaN keeps sign
  EXPECT_EQ((fb::encode_f16_bits<F::kE5M2, false>(0x7D01u)), 0x7F);        // f16 sNaN
  EXPECT_EQ((fb::encode_bf16_bits<F::kE4M3FN, false>(0x43E9u)), 0x7F);     // bf16 466
  EXPECT_EQ(fb::decode_f32_bits<F::kE4M3FN>(0x7F), 0x7FF00000u);
  EXPECT_EQ(fb::decode_f32_bits<F::kE5M2>(0xFD), 0xFFE00000u);
  EXPECT_EQ(fb::decode_f16_bits<F::kE5M2>(0x7D), 0x7F00u);
  EXPECT_EQ(fb::decode_bf16_bits<F::kE5M2>(0xFE), 0x7FC0u);
}

TEST(Fp8Bits, EveryCodeDecodesLikeReference) {
  for (Fp8Format f : kFormats) {
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<std::uint8_t>(c);
      const bool e4 = f == Fp8Format::kE4M3FN;
      const std::uint32_t f32 = e4 ? fb::decode_f32_bits<Fp8Format::kE4M3FN>(code)
                                   : fb::decode_f32_bits<Fp8Format::kE5M2>(code);
      const std::uint16_t f16 = e4 ? fb::decode_f16_bits<Fp8Format::kE4M3FN>(code)
                                   : fb::decode_f16_bits<Fp8Format::kE5M2>(code);
      const std::uint16_t bf16 = e4 ? fb::decode_bf16_bits<Fp8Format::kE4M3FN>(code)
                                    : fb::decode_bf16_bits<Fp8Format::kE5M2>(code);
      EXPECT_EQ(f32, fp8_decode_to_f32_bits(code, f)) << fp8_format_name(f) << " code " << c;
      EXPECT_EQ(f16, fp8_decode_to_f16_bits(code, f)) << fp8_format_name(f) << " code " << c;
      EXPECT_EQ(bf16, fp8_decode_to_bf16_bits(code, f)) << fp8_format_name(f) << " code " << c;
    }
  }
}

}  // namespace
}  // namespace lmcache::fp8
