// File: lmcache/fp8/fp8_codec_test.cc
//
// Tests for the scalar reference fp8 codec. The codec is checked against an independent
// brute-force model written here (it shares no code with fp8_codec.cc): the grid of finite fp8
// magnitudes is built with ldexp, and |x| is rounded by comparing it, in double, with the
// midpoints of adjacent grid values (exact in double), ties to the even code, plus the
// "virtual v[N]" overflow rule of docs/fp8.md §3.5. The model itself is pinned
// to the worked examples of §3, which were checked against PyTorch.
#include "lmcache/fp8/fp8_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace lmcache {
namespace {

using ::testing::HasSubstr;

constexpr std::array kFormats = {Fp8Format::kE4M3FN, Fp8Format::kE5M2};
constexpr std::array kOverflows = {Fp8Overflow::kNonSaturating, Fp8Overflow::kSaturating};

std::string mode_name(Fp8Format f, Fp8Overflow o) {
  return std::string(fp8_format_name(f)) + "/" + std::string(fp8_overflow_name(o));
}

float f32_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// ---------------------------------------------------------------------------------------------
// The model.

// Value of a finite fp8 code's magnitude (code & 0x7F), by the textbook formula. Also valid
// for the first code past the finite grid, which gives the virtual v[N].
double model_fp8_magnitude(unsigned code, Fp8Format format) {
  const bool e4 = format == Fp8Format::kE4M3FN;
  const int m_bits = e4 ? 3 : 2;
  const int bias = e4 ? 7 : 15;
  const unsigned mag = code & 0x7F;
  const int e = static_cast<int>(mag >> m_bits);
  const int m = static_cast<int>(mag & ((1u << m_bits) - 1));
  if (e == 0) return std::ldexp(m, 1 - bias - m_bits);      // subnormal
  return std::ldexp((1 << m_bits) + m, e - bias - m_bits);  // normal
}

// N: the first code past the finite magnitudes (NaN for e4m3fn, inf for e5m2).
unsigned model_n(Fp8Format format) { return format == Fp8Format::kE4M3FN ? 0x7F : 0x7C; }

struct ModelGrid {
  unsigned n;
  std::vector<double> v;    // v[0..n]; v[n] is virtual
  std::vector<double> mid;  // mid[i] = (v[i] + v[i+1]) / 2, exact in double
};

const ModelGrid& model_grid(Fp8Format format) {
  static const auto build = [](Fp8Format f) {
    ModelGrid g;
    g.n = model_n(f);
    for (unsigned c = 0; c <= g.n; ++c) g.v.push_back(model_fp8_magnitude(c, f));
    for (unsigned i = 0; i < g.n; ++i) g.mid.push_back((g.v[i] + g.v[i + 1]) / 2);
    return g;
  };
  static const ModelGrid e4 = build(Fp8Format::kE4M3FN);
  static const ModelGrid e5 = build(Fp8Format::kE5M2);
  return format == Fp8Format::kE4M3FN ? e4 : e5;
}

// Encodes sign * magnitude (magnitude may be NaN or inf) by the single-rule form.
std::uint8_t model_encode(bool negative, double magnitude, Fp8Format format, Fp8Overflow overflow) {
  const unsigned sign = negative ? 0x80 : 0x00;
  if (std::isnan(magnitude)) return static_cast<std::uint8_t>(0x7F | sign);
  const ModelGrid& g = model_grid(format);
  unsigned r;
  if (magnitude >= g.v[g.n]) {  // includes inf
    r = g.n;
  } else {
    // i with v[i] <= magnitude < v[i+1].
    const auto it = std::upper_bound(g.v.begin(), g.v.end(), magnitude);
    const unsigned i = static_cast<unsigned>(it - g.v.begin()) - 1;
    if (magnitude > g.mid[i]) {
      r = i + 1;
    } else if (magnitude < g.mid[i]) {
      r = i;
    } else {
      r = (i % 2 == 0) ? i : i + 1;  // tie: the even code
    }
  }
  if (r == g.n && overflow == Fp8Overflow::kSaturating) r = g.n - 1;
  return static_cast<std::uint8_t>(r | sign);
}

// Value of an f16 / bf16 bit pattern, by the textbook formula (NaN and inf as double's).
double model_half_value(std::uint16_t bits, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
  const int m = bits & ((1 << mant_bits) - 1);
  double mag;
  if (e == (1 << exp_bits) - 1) {
    mag =
        m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    mag = std::ldexp(m, 1 - bias - mant_bits);
  } else {
    mag = std::ldexp((1 << mant_bits) + m, e - bias - mant_bits);
  }
  return (bits >> (exp_bits + mant_bits)) ? -mag : mag;
}
double model_f16_value(std::uint16_t bits) { return model_half_value(bits, 5, 10); }
double model_bf16_value(std::uint16_t bits) { return model_half_value(bits, 8, 7); }

std::uint8_t model_encode_f32(std::uint32_t bits, Fp8Format f, Fp8Overflow o) {
  return model_encode(bits >> 31, std::fabs(static_cast<double>(f32_from_bits(bits))), f, o);
}
std::uint8_t model_encode_f16(std::uint16_t bits, Fp8Format f, Fp8Overflow o) {
  return model_encode(bits >> 15, std::fabs(model_f16_value(bits)), f, o);
}
std::uint8_t model_encode_bf16(std::uint16_t bits, Fp8Format f, Fp8Overflow o) {
  return model_encode(bits >> 15, std::fabs(model_bf16_value(bits)), f, o);
}

bool model_is_nan_code(unsigned code, Fp8Format f) {
  const unsigned mag = code & 0x7F;
  return f == Fp8Format::kE4M3FN ? mag == 0x7F : mag >= 0x7D;
}
bool model_is_inf_code(unsigned code, Fp8Format f) {
  return f == Fp8Format::kE5M2 && (code & 0x7F) == 0x7C;
}

// Decoded value of a non-NaN code (inf included).
double model_decode(unsigned code, Fp8Format f) {
  const double mag = model_is_inf_code(code, f) ? std::numeric_limits<double>::infinity()
                                                : model_fp8_magnitude(code, f);
  return (code & 0x80) ? -mag : mag;
}

// ---------------------------------------------------------------------------------------------
// Sanity of the model itself.

TEST(Fp8Model, GridIsSortedAndAnchored) {
  const ModelGrid& e4 = model_grid(Fp8Format::kE4M3FN);
  const ModelGrid& e5 = model_grid(Fp8Format::kE5M2);
  EXPECT_TRUE(std::is_sorted(e4.v.begin(), e4.v.end()));
  EXPECT_TRUE(std::is_sorted(e5.v.begin(), e5.v.end()));
  EXPECT_EQ(e4.v.size(), 128u);
  EXPECT_EQ(e5.v.size(), 125u);
  EXPECT_EQ(e4.v[0x01], std::ldexp(1.0, -9));
  EXPECT_EQ(e4.v[0x08], std::ldexp(1.0, -6));
  EXPECT_EQ(e4.v[0x7E], 448.0);
  EXPECT_EQ(e4.v[0x7F], 480.0);
  EXPECT_EQ(e5.v[0x01], std::ldexp(1.0, -16));
  EXPECT_EQ(e5.v[0x04], std::ldexp(1.0, -14));
  EXPECT_EQ(e5.v[0x7B], 57344.0);
  EXPECT_EQ(e5.v[0x7C], 65536.0);
  // Every midpoint is a float, so the boundary tests below hit the ties exactly.
  for (const ModelGrid* g : {&e4, &e5}) {
    for (double m : g->mid) EXPECT_EQ(static_cast<double>(static_cast<float>(m)), m);
  }
  EXPECT_EQ(model_f16_value(0x7BFF), 65504.0);
  EXPECT_EQ(model_f16_value(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(model_bf16_value(0x43E9), 466.0);
  EXPECT_EQ(model_bf16_value(0x0001), std::ldexp(1.0, -133));
}

// ---------------------------------------------------------------------------------------------
// Names.

TEST(Fp8Codec, Names) {
  EXPECT_EQ(fp8_format_name(Fp8Format::kE4M3FN), "float8_e4m3fn");
  EXPECT_EQ(fp8_format_name(Fp8Format::kE5M2), "float8_e5m2");
  EXPECT_EQ(fp8_overflow_name(Fp8Overflow::kNonSaturating), "nonsaturating");
  EXPECT_EQ(fp8_overflow_name(Fp8Overflow::kSaturating), "saturating");
  EXPECT_EQ(fp8_dtype(Fp8Format::kE4M3FN), DType::kFloat8E4M3FN);
  EXPECT_EQ(fp8_dtype(Fp8Format::kE5M2), DType::kFloat8E5M2);
  // The names are the dtype names, so configs can round-trip through parse_dtype().
  for (Fp8Format f : kFormats) EXPECT_EQ(dtype_name(fp8_dtype(f)), fp8_format_name(f));
}

// ---------------------------------------------------------------------------------------------
// Worked examples (docs/fp8.md §3.6), one test case per row, both columns. Each row is
// checked against the codec and against the model, which keeps the model honest.

enum class Src { kF32, kF16, kBF16 };

struct Example {
  const char* name;
  Src src;
  std::uint32_t bits;
  std::uint8_t e4m3fn;
  std::uint8_t e5m2;
};

constexpr Example kExamples[] = {
    {"F32_448", Src::kF32, 0x43E00000, 0x7E, 0x5F},
    {"F32_464Tie", Src::kF32, 0x43E80000, 0x7E, 0x5F},
    {"F32_464PlusUlp", Src::kF32, 0x43E80001, 0x7F, 0x5F},
    {"F32_465", Src::kF32, 0x43E88000, 0x7F, 0x5F},
    {"F32_479_99", Src::kF32, 0x43EFFEB8, 0x7F, 0x5F},
    {"F32_480", Src::kF32, 0x43F00000, 0x7F, 0x60},
    {"F32_Minus465", Src::kF32, 0xC3E88000, 0xFF, 0xDF},
    {"F32_57344", Src::kF32, 0x47600000, 0x7F, 0x7B},
    {"F32_61439_996", Src::kF32, 0x476FFFFF, 0x7F, 0x7B},
    {"F32_61440Tie", Src::kF32, 0x47700000, 0x7F, 0x7C},
    {"F16_65504", Src::kF16, 0x7BFF, 0x7F, 0x7C},
    {"F32_FltMax", Src::kF32, 0x7F7FFFFF, 0x7F, 0x7C},
    {"F32_PlusInf", Src::kF32, 0x7F800000, 0x7F, 0x7C},
    {"F32_MinusInf", Src::kF32, 0xFF800000, 0xFF, 0xFC},
    {"F32_PlusNaN", Src::kF32, 0x7FC00000, 0x7F, 0x7F},
    {"F32_MinusNaN", Src::kF32, 0xFFC00000, 0xFF, 0xFF},
    {"F32_MinusZero", Src::kF32, 0x80000000, 0x80, 0x80},
    {"F32_Minus1em30", Src::kF32, 0x8DA24260, 0x80, 0x80},
    {"F32_2pm9", Src::kF32, 0x3B000000, 0x01, 0x18},
    {"F32_2pm10Tie", Src::kF32, 0x3A800000, 0x00, 0x14},
    {"F32_2pm10PlusUlp", Src::kF32, 0x3A800001, 0x01, 0x14},
    {"F32_3x2pm10Tie", Src::kF32, 0x3B400000, 0x02, 0x1A},
    {"F32_5x2pm10Tie", Src::kF32, 0x3BA00000, 0x02, 0x1D},
    {"F32_15x2pm10Tie", Src::kF32, 0x3C700000, 0x08, 0x24},
    {"F32_2pm16", Src::kF32, 0x37800000, 0x00, 0x01},
    {"F32_2pm17Tie", Src::kF32, 0x37000000, 0x00, 0x00},
    {"F32_3x2pm17Tie", Src::kF32, 0x37C00000, 0x00, 0x02},
    {"F32_1_0625Tie", Src::kF32, 0x3F880000, 0x38, 0x3C},
    {"F32_1_1875Tie", Src::kF32, 0x3F980000, 0x3A, 0x3D},
    {"F32_1_125Tie", Src::kF32, 0x3F900000, 0x39, 0x3C},
    {"F32_1_125PlusUlp", Src::kF32, 0x3F900001, 0x39, 0x3D},
    {"F16_464", Src::kF16, 0x5F40, 0x7E, 0x5F},
    {"F16_464_25", Src::kF16, 0x5F41, 0x7F, 0x5F},
    {"F16_61440", Src::kF16, 0x7B80, 0x7F, 0x7C},
    {"F16_61408", Src::kF16, 0x7B7F, 0x7F, 0x7B},
    {"BF16_464", Src::kBF16, 0x43E8, 0x7E, 0x5F},
    {"BF16_466", Src::kBF16, 0x43E9, 0x7F, 0x5F},
    {"F16_SNaN", Src::kF16, 0x7D01, 0x7F, 0x7F},
};

std::uint8_t codec_encode(Src src, std::uint32_t bits, Fp8Format f, Fp8Overflow o) {
  switch (src) {
    case Src::kF32:
      return fp8_encode_f32(f32_from_bits(bits), f, o);
    case Src::kF16:
      return fp8_encode_f16_bits(static_cast<std::uint16_t>(bits), f, o);
    case Src::kBF16:
      return fp8_encode_bf16_bits(static_cast<std::uint16_t>(bits), f, o);
  }
  return 0;
}

std::uint8_t model_encode_src(Src src, std::uint32_t bits, Fp8Format f, Fp8Overflow o) {
  switch (src) {
    case Src::kF32:
      return model_encode_f32(bits, f, o);
    case Src::kF16:
      return model_encode_f16(static_cast<std::uint16_t>(bits), f, o);
    case Src::kBF16:
      return model_encode_bf16(static_cast<std::uint16_t>(bits), f, o);
  }
  return 0;
}

// Names the row in gtest's failure output instead of dumping its bytes.
void PrintTo(const Example& ex, std::ostream* os) { *os << ex.name; }

class Fp8WorkedExample : public ::testing::TestWithParam<Example> {};

TEST_P(Fp8WorkedExample, MatchesPyTorch) {
  const Example& ex = GetParam();
  const auto e4 = Fp8Format::kE4M3FN;
  const auto e5 = Fp8Format::kE5M2;
  const auto ns = Fp8Overflow::kNonSaturating;
  EXPECT_EQ(codec_encode(ex.src, ex.bits, e4, ns), ex.e4m3fn) << "float8_e4m3fn";
  EXPECT_EQ(codec_encode(ex.src, ex.bits, e5, ns), ex.e5m2) << "float8_e5m2";
  EXPECT_EQ(model_encode_src(ex.src, ex.bits, e4, ns), ex.e4m3fn) << "model float8_e4m3fn";
  EXPECT_EQ(model_encode_src(ex.src, ex.bits, e5, ns), ex.e5m2) << "model float8_e5m2";
}

INSTANTIATE_TEST_SUITE_P(Table, Fp8WorkedExample, ::testing::ValuesIn(kExamples),
                         [](const ::testing::TestParamInfo<Example>& info) {
                           return std::string(info.param.name);
                         });

// ---------------------------------------------------------------------------------------------
// Saturating mode (SATFINITE, docs/fp8.md §3.4).

TEST(Fp8Codec, SaturatingExamples) {
  const auto sat = Fp8Overflow::kSaturating;
  const auto e4 = Fp8Format::kE4M3FN;
  const auto e5 = Fp8Format::kE5M2;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float flt_max = std::numeric_limits<float>::max();

  EXPECT_EQ(fp8_encode_f32(465.0f, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(-465.0f, e4, sat), 0xFE);
  EXPECT_EQ(fp8_encode_f32(464.0f, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(f32_from_bits(0x43E80001), e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(480.0f, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(flt_max, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(inf, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(-inf, e4, sat), 0xFE);
  EXPECT_EQ(fp8_encode_f32(nan, e4, sat), 0x7F);
  EXPECT_EQ(fp8_encode_f32(-nan, e4, sat), 0xFF);
  EXPECT_EQ(fp8_encode_f16_bits(0x7BFF, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_bf16_bits(0x43E9, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f16_bits(0x7D01, e4, sat), 0x7F);

  EXPECT_EQ(fp8_encode_f32(57344.0f, e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f32(f32_from_bits(0x476FFFFF), e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f32(61440.0f, e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f32(-61440.0f, e5, sat), 0xFB);
  EXPECT_EQ(fp8_encode_f32(65536.0f, e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f32(inf, e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f32(-inf, e5, sat), 0xFB);
  EXPECT_EQ(fp8_encode_f32(nan, e5, sat), 0x7F);
  EXPECT_EQ(fp8_encode_f32(-nan, e5, sat), 0xFF);
  EXPECT_EQ(fp8_encode_f16_bits(0x7BFF, e5, sat), 0x7B);
  EXPECT_EQ(fp8_encode_f16_bits(0xFC00, e5, sat), 0xFB);

  // Saturation changes nothing below the overflow threshold.
  EXPECT_EQ(fp8_encode_f32(448.0f, e4, sat), 0x7E);
  EXPECT_EQ(fp8_encode_f32(1.0625f, e4, sat), 0x38);
  EXPECT_EQ(fp8_encode_f32(-0.0f, e5, sat), 0x80);
}

// ---------------------------------------------------------------------------------------------
// Exhaustive and dense comparisons against the model.

TEST(Fp8Codec, EveryFloat16MatchesModel) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      int mismatches = 0;
      for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const std::uint8_t got = fp8_encode_f16_bits(bits, f, o);
        const std::uint8_t want = model_encode_f16(bits, f, o);
        if (got != want && ++mismatches <= 10) {
          ADD_FAILURE() << mode_name(f, o) << " f16 0x" << std::hex << b << ": got 0x" << int{got}
                        << ", want 0x" << int{want};
        }
      }
      EXPECT_EQ(mismatches, 0) << mode_name(f, o);
    }
  }
}

TEST(Fp8Codec, EveryBFloat16MatchesModel) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      int mismatches = 0;
      for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const std::uint8_t got = fp8_encode_bf16_bits(bits, f, o);
        const std::uint8_t want = model_encode_bf16(bits, f, o);
        if (got != want && ++mismatches <= 10) {
          ADD_FAILURE() << mode_name(f, o) << " bf16 0x" << std::hex << b << ": got 0x" << int{got}
                        << ", want 0x" << int{want};
        }
      }
      EXPECT_EQ(mismatches, 0) << mode_name(f, o);
    }
  }
}

// Compares the codec with the model on `inputs` (f32 bits), both signs, all four modes.
void expect_f32_inputs_match_model(const std::vector<std::uint32_t>& inputs) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      int mismatches = 0;
      for (std::uint32_t magnitude_bits : inputs) {
        for (std::uint32_t sign : {0u, 0x80000000u}) {
          const std::uint32_t bits = (magnitude_bits & 0x7FFFFFFFu) | sign;
          const std::uint8_t got = fp8_encode_f32(f32_from_bits(bits), f, o);
          const std::uint8_t want = model_encode_f32(bits, f, o);
          if (got != want && ++mismatches <= 10) {
            ADD_FAILURE() << mode_name(f, o) << " f32 0x" << std::hex << bits << ": got 0x"
                          << int{got} << ", want 0x" << int{want};
          }
        }
      }
      EXPECT_EQ(mismatches, 0) << mode_name(f, o) << " over " << inputs.size() << " inputs";
    }
  }
}

// Every one of the 256 exponent fields (denormals, inf and NaN included) with ~2K mantissas
// each: a prime stride, plus the mantissas next to every kept-bit boundary.
TEST(Fp8Codec, Float32EveryExponentMatchesModel) {
  std::vector<std::uint32_t> inputs;
  for (std::uint32_t e = 0; e < 256; ++e) {
    for (std::uint32_t m = 0; m < (1u << 23); m += 4099) inputs.push_back(e << 23 | m);
    for (std::uint32_t m : {1u, 2u, 3u, 0x3FFFFFu, 0x400000u, 0x400001u, 0x7FFFFEu, 0x7FFFFFu}) {
      inputs.push_back(e << 23 | m);
    }
    // A one in each bit position, and each position's half-way pattern +-1.
    for (int k = 0; k < 23; ++k) {
      const std::uint32_t one = 1u << k;
      inputs.push_back(e << 23 | one);
      inputs.push_back(e << 23 | (one - 1));
      inputs.push_back(e << 23 | (one + 1));
    }
  }
  expect_f32_inputs_match_model(inputs);
}

// Exactly on, and 1 and 2 ulps either side of, every grid value and every rounding midpoint
// (tie) of both formats, the overflow thresholds and the underflow thresholds.
TEST(Fp8Codec, Float32AroundEveryMidpointMatchesModel) {
  std::vector<double> anchors = {464,
                                 480,
                                 448,
                                 57344,
                                 61440,
                                 65536,
                                 65504,
                                 std::ldexp(1.0, -10),
                                 std::ldexp(1.0, -17),  // 0/1 ties
                                 std::ldexp(1.0, -9),
                                 std::ldexp(1.0, -16),  // min subnormals
                                 std::ldexp(1.0, -6),
                                 std::ldexp(1.0, -14)};  // min normals
  for (Fp8Format f : kFormats) {
    const ModelGrid& g = model_grid(f);
    anchors.insert(anchors.end(), g.v.begin(), g.v.end());
    anchors.insert(anchors.end(), g.mid.begin(), g.mid.end());
  }
  std::vector<std::uint32_t> inputs;
  for (double a : anchors) {
    const auto x = static_cast<float>(a);
    ASSERT_EQ(static_cast<double>(x), a);
    const std::uint32_t b = bits_of(x);
    for (std::uint32_t d = 0; d <= 2; ++d) {
      inputs.push_back(b + d);
      if (b >= d) inputs.push_back(b - d);
    }
  }
  expect_f32_inputs_match_model(inputs);
}

TEST(Fp8Codec, Float32RandomMatchesModel) {
  std::mt19937 rng(20240417);
  std::vector<std::uint32_t> inputs(1 << 18);
  for (auto& b : inputs) b = static_cast<std::uint32_t>(rng());
  // Half of them concentrated on the exponents where fp8 rounding happens (2^-20 .. 2^17).
  std::uniform_int_distribution<std::uint32_t> exponent(127 - 20, 127 + 17);
  for (std::size_t i = 0; i < inputs.size(); i += 2) {
    inputs[i] = (inputs[i] & 0x807FFFFFu) | exponent(rng) << 23;
  }
  expect_f32_inputs_match_model(inputs);
}

// Every float32 bit pattern, all four modes: ~8 minutes in Release, so off by default. Run it
// after touching the encoder:
//   fp8_codec_test --gtest_also_run_disabled_tests --gtest_filter='*Exhaustive*'
TEST(Fp8Codec, DISABLED_Float32Exhaustive) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      std::uint64_t mismatches = 0;
      for (std::uint64_t b = 0; b <= 0xFFFFFFFFu; ++b) {
        const auto bits = static_cast<std::uint32_t>(b);
        if (fp8_encode_f32(f32_from_bits(bits), f, o) != model_encode_f32(bits, f, o) &&
            ++mismatches <= 10) {
          ADD_FAILURE() << mode_name(f, o) << " f32 0x" << std::hex << bits;
        }
      }
      EXPECT_EQ(mismatches, 0u) << mode_name(f, o);
    }
  }
}

// Every NaN payload class (quiet, signalling, both signs) is NaN with the input's sign.
TEST(Fp8Codec, NaNKeepsSignInEveryMode) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      for (std::uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA00000u}) {
        EXPECT_EQ(fp8_encode_f32(f32_from_bits(bits), f, o), 0x7F) << mode_name(f, o);
        EXPECT_EQ(fp8_encode_f32(f32_from_bits(bits | 0x80000000u), f, o), 0xFF) << mode_name(f, o);
      }
      EXPECT_EQ(fp8_encode_f16_bits(0x7C01, f, o), 0x7F);
      EXPECT_EQ(fp8_encode_f16_bits(0xFE00, f, o), 0xFF);
      EXPECT_EQ(fp8_encode_bf16_bits(0x7F81, f, o), 0x7F);
      EXPECT_EQ(fp8_encode_bf16_bits(0xFFC0, f, o), 0xFF);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Decode.

// The NaN patterns of docs/fp8.md §4 (x86 CPU `.to()`), for the positive NaN codes.
std::uint32_t expected_nan_f32(unsigned mag, Fp8Format f) {
  if (f == Fp8Format::kE4M3FN) return 0x7FF00000u;
  return mag == 0x7E ? 0x7FC00000u : 0x7FE00000u;  // 0x7D, 0x7F -> 0x7FE00000
}
std::uint16_t expected_nan_f16(unsigned mag, Fp8Format f) {
  if (f == Fp8Format::kE4M3FN) return 0x7F80u;
  return mag == 0x7E ? 0x7E00u : 0x7F00u;  // 0x7D, 0x7F -> 0x7F00
}

TEST(Fp8Codec, EveryCodeDecodesExactly) {
  for (Fp8Format f : kFormats) {
    for (unsigned code = 0; code < 256; ++code) {
      SCOPED_TRACE(std::string(fp8_format_name(f)) + " code " + std::to_string(code));
      const auto c = static_cast<std::uint8_t>(code);
      const std::uint32_t f32 = fp8_decode_to_f32_bits(c, f);
      const std::uint16_t f16 = fp8_decode_to_f16_bits(c, f);
      const std::uint16_t bf16 = fp8_decode_to_bf16_bits(c, f);
      if (model_is_nan_code(code, f)) {
        const bool neg = code & 0x80;
        EXPECT_EQ(f32, expected_nan_f32(code & 0x7F, f) | (neg ? 0x80000000u : 0u));
        EXPECT_EQ(f16, expected_nan_f16(code & 0x7F, f) | (neg ? 0x8000u : 0u));
        EXPECT_EQ(bf16, 0x7FC0u);
        continue;
      }
      const double want = model_decode(code, f);
      // float is exact for every fp8 value, so its bits are the unique expected pattern.
      EXPECT_EQ(f32, bits_of(static_cast<float>(want)));
      // f16 and bf16: compared through the model's widening, which is injective on non-NaN
      // values once the sign is checked too (it tells -0 from +0).
      EXPECT_EQ(model_f16_value(f16), want);
      EXPECT_EQ(f16 >> 15, code >> 7);
      EXPECT_EQ(model_bf16_value(bf16), want);
      EXPECT_EQ(bf16 >> 15, code >> 7);
    }
  }
}

TEST(Fp8Codec, DecodeSpotChecks) {
  const auto e4 = Fp8Format::kE4M3FN;
  const auto e5 = Fp8Format::kE5M2;
  EXPECT_EQ(fp8_decode_to_f32_bits(0x7E, e4), 0x43E00000u);  // 448
  EXPECT_EQ(fp8_decode_to_f16_bits(0x7E, e4), 0x5F00u);
  EXPECT_EQ(fp8_decode_to_bf16_bits(0x7E, e4), 0x43E0u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0x01, e4), 0x3B000000u);  // 2^-9
  EXPECT_EQ(fp8_decode_to_f16_bits(0x01, e4), 0x1800u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0x80, e4), 0x80000000u);  // -0
  EXPECT_EQ(fp8_decode_to_f16_bits(0x80, e4), 0x8000u);
  EXPECT_EQ(fp8_decode_to_bf16_bits(0x80, e4), 0x8000u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0xFF, e4), 0xFFF00000u);
  EXPECT_EQ(fp8_decode_to_f16_bits(0xFF, e4), 0xFF80u);
  EXPECT_EQ(fp8_decode_to_bf16_bits(0xFF, e4), 0x7FC0u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0x7B, e5), 0x47600000u);  // 57344
  EXPECT_EQ(fp8_decode_to_f16_bits(0x01, e5), 0x0100u);      // f16 subnormal 2^-16
  EXPECT_EQ(fp8_decode_to_f16_bits(0x03, e5), 0x0300u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0x7C, e5), 0x7F800000u);  // inf
  EXPECT_EQ(fp8_decode_to_f16_bits(0xFC, e5), 0xFC00u);
  EXPECT_EQ(fp8_decode_to_bf16_bits(0xFC, e5), 0xFF80u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0x7D, e5), 0x7FE00000u);
  EXPECT_EQ(fp8_decode_to_f32_bits(0xFE, e5), 0xFFC00000u);
  EXPECT_EQ(fp8_decode_to_f16_bits(0x7D, e5), 0x7F00u);  // not 0x7D00
  EXPECT_EQ(fp8_decode_to_f16_bits(0xFE, e5), 0xFE00u);
  EXPECT_EQ(fp8_decode_to_bf16_bits(0xFD, e5), 0x7FC0u);
}

// decode then encode gives back every non-NaN code; saturating mode maps e5m2 inf to max.
TEST(Fp8Codec, EveryCodeRoundTrips) {
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      for (unsigned code = 0; code < 256; ++code) {
        if (model_is_nan_code(code, f)) continue;
        const auto c = static_cast<std::uint8_t>(code);
        std::uint8_t want = c;
        if (model_is_inf_code(code, f) && o == Fp8Overflow::kSaturating) {
          want = static_cast<std::uint8_t>(0x7B | (code & 0x80));
        }
        SCOPED_TRACE(mode_name(f, o) + " code " + std::to_string(code));
        EXPECT_EQ(fp8_encode_f32(f32_from_bits(fp8_decode_to_f32_bits(c, f)), f, o), want);
        EXPECT_EQ(fp8_encode_f16_bits(fp8_decode_to_f16_bits(c, f), f, o), want);
        EXPECT_EQ(fp8_encode_bf16_bits(fp8_decode_to_bf16_bits(c, f), f, o), want);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Buffer functions.

std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xFF);
  return out;
}

constexpr std::array kWideDtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

std::uint8_t scalar_encode_at(const std::byte* p, DType dtype, Fp8Format f, Fp8Overflow o) {
  if (dtype == DType::kFloat32) {
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    return fp8_encode_f32(f32_from_bits(b), f, o);
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return dtype == DType::kFloat16 ? fp8_encode_f16_bits(h, f, o) : fp8_encode_bf16_bits(h, f, o);
}

TEST(Fp8Buffer, EncodeMatchesScalarUnalignedAndLeavesTailAlone) {
  constexpr std::size_t kCount = 4099;
  constexpr std::size_t kSrcOffset = 1;  // misaligns every element
  constexpr std::size_t kDstOffset = 3;
  constexpr std::size_t kTail = 16;
  for (DType dtype : kWideDtypes) {
    const std::size_t elem = element_size(dtype);
    std::vector<std::byte> src = random_bytes(kSrcOffset + kCount * elem, 7);
    for (Fp8Format f : kFormats) {
      for (Fp8Overflow o : kOverflows) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + mode_name(f, o));
        std::vector<std::uint8_t> dst(kDstOffset + kCount + kTail, 0xA5);
        fp8_encode(std::span(src).subspan(kSrcOffset), dtype, kCount,
                   std::span(dst).subspan(kDstOffset), f, o);
        int mismatches = 0;
        for (std::size_t i = 0; i < kCount; ++i) {
          const std::byte* p = src.data() + kSrcOffset + i * elem;
          mismatches += dst[kDstOffset + i] != scalar_encode_at(p, dtype, f, o);
        }
        EXPECT_EQ(mismatches, 0);
        for (std::size_t i = 0; i < kDstOffset; ++i) EXPECT_EQ(dst[i], 0xA5);
        for (std::size_t i = 0; i < kTail; ++i) EXPECT_EQ(dst[kDstOffset + kCount + i], 0xA5);
      }
    }
  }
}

TEST(Fp8Buffer, DecodeMatchesScalarUnalignedAndLeavesTailAlone) {
  constexpr std::size_t kCount = 256 * 9 + 5;  // every code several times, then random ones
  constexpr std::size_t kSrcOffset = 1;
  constexpr std::size_t kDstOffset = 3;
  constexpr std::size_t kTail = 16;
  std::vector<std::uint8_t> src(kSrcOffset + kCount);
  std::mt19937 rng(11);
  for (std::size_t i = 0; i < kCount; ++i) {
    src[kSrcOffset + i] = static_cast<std::uint8_t>(i < 256 * 4 ? i : rng());
  }
  for (DType dtype : kWideDtypes) {
    const std::size_t elem = element_size(dtype);
    for (Fp8Format f : kFormats) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + std::string(fp8_format_name(f)));
      std::vector<std::byte> dst(kDstOffset + kCount * elem + kTail, std::byte{0xA5});
      fp8_decode(std::span(src).subspan(kSrcOffset), kCount, std::span(dst).subspan(kDstOffset),
                 dtype, f);
      std::vector<std::byte> want(kCount * elem);
      for (std::size_t i = 0; i < kCount; ++i) {
        const std::uint8_t c = src[kSrcOffset + i];
        if (dtype == DType::kFloat32) {
          const std::uint32_t v = fp8_decode_to_f32_bits(c, f);
          std::memcpy(want.data() + i * 4, &v, 4);
        } else {
          const std::uint16_t v = dtype == DType::kFloat16 ? fp8_decode_to_f16_bits(c, f)
                                                           : fp8_decode_to_bf16_bits(c, f);
          std::memcpy(want.data() + i * 2, &v, 2);
        }
      }
      EXPECT_EQ(std::memcmp(dst.data() + kDstOffset, want.data(), want.size()), 0);
      for (std::size_t i = 0; i < kDstOffset; ++i) EXPECT_EQ(dst[i], std::byte{0xA5});
      for (std::size_t i = 0; i < kTail; ++i) {
        EXPECT_EQ(dst[kDstOffset + kCount * elem + i], std::byte{0xA5});
      }
    }
  }
}

TEST(Fp8Buffer, ZeroCountAcceptsEmptyBuffers) {
  for (DType dtype : kWideDtypes) {
    EXPECT_NO_THROW(fp8_encode({}, dtype, 0, {}, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating));
    EXPECT_NO_THROW(fp8_decode({}, 0, {}, dtype, Fp8Format::kE5M2));
  }
}

// Runs `fn`, expects std::invalid_argument, and returns its message ("" if none was thrown).
template <typename Fn>
std::string invalid_argument_message(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (...) {
    ADD_FAILURE() << "threw something other than std::invalid_argument";
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

TEST(Fp8Buffer, EncodeErrorsWriteNothing) {
  const auto f = Fp8Format::kE4M3FN;
  const auto o = Fp8Overflow::kNonSaturating;
  std::vector<std::byte> src(4 * 4, std::byte{0x3F});  // 4 floats (or 8 halves)
  std::vector<std::uint8_t> dst(8, 0xA5);
  const std::vector<std::uint8_t> untouched = dst;

  EXPECT_THAT(invalid_argument_message(
                  [&] { fp8_encode(src, DType::kFloat32, 4, std::span(dst).first(3), f, o); }),
              HasSubstr("destination buffer too small: got 3 bytes, need 4"));
  EXPECT_THAT(invalid_argument_message(
                  [&] { fp8_encode(std::span(src).first(15), DType::kFloat32, 4, dst, f, o); }),
              HasSubstr("source buffer too small: got 15 bytes, need 16"));
  EXPECT_THAT(invalid_argument_message([&] { fp8_encode(src, DType::kFloat16, 9, dst, f, o); }),
              HasSubstr("source buffer too small: got 16 bytes, need 18"));
  EXPECT_THAT(invalid_argument_message([&] {
                fp8_encode(src, DType::kFloat32, std::numeric_limits<std::size_t>::max(), dst, f,
                           o);
              }),
              HasSubstr("overflows"));
  for (DType bad : {DType::kUInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    const std::string msg = invalid_argument_message([&] { fp8_encode(src, bad, 4, dst, f, o); });
    EXPECT_THAT(msg, HasSubstr("unsupported source dtype"));
    EXPECT_THAT(msg, HasSubstr(std::string(dtype_name(bad))));
  }
  EXPECT_EQ(dst, untouched);
}

TEST(Fp8Buffer, DecodeErrorsWriteNothing) {
  const auto f = Fp8Format::kE5M2;
  const std::vector<std::uint8_t> src(4, 0x3C);
  std::vector<std::byte> dst(16, std::byte{0xA5});
  const std::vector<std::byte> untouched = dst;

  EXPECT_THAT(invalid_argument_message(
                  [&] { fp8_decode(src, 4, std::span(dst).first(15), DType::kFloat32, f); }),
              HasSubstr("destination buffer too small: got 15 bytes, need 16"));
  EXPECT_THAT(invalid_argument_message(
                  [&] { fp8_decode(src, 4, std::span(dst).first(7), DType::kBFloat16, f); }),
              HasSubstr("destination buffer too small: got 7 bytes, need 8"));
  EXPECT_THAT(invalid_argument_message(
                  [&] { fp8_decode(std::span(src).first(3), 4, dst, DType::kFloat16, f); }),
              HasSubstr("source buffer too small: got 3 bytes, need 4"));
  for (DType bad : {DType::kUInt8, DType::kFloat8E4M3FN, DType::kFloat8E5M2}) {
    const std::string msg = invalid_argument_message([&] { fp8_decode(src, 4, dst, bad, f); });
    EXPECT_THAT(msg, HasSubstr("unsupported destination dtype"));
    EXPECT_THAT(msg, HasSubstr(std::string(dtype_name(bad))));
  }
  EXPECT_EQ(dst, untouched);
}

TEST(Fp8Buffer, InvalidEnumValuesThrow) {
  const auto bad_format = static_cast<Fp8Format>(7);
  const auto bad_overflow = static_cast<Fp8Overflow>(7);
  std::vector<std::byte> src(4, std::byte{0});
  std::vector<std::uint8_t> dst(1, 0xA5);
  EXPECT_THROW(fp8_encode(src, DType::kFloat32, 1, dst, bad_format, Fp8Overflow::kSaturating),
               std::invalid_argument);
  EXPECT_THROW(fp8_encode(src, DType::kFloat32, 1, dst, Fp8Format::kE5M2, bad_overflow),
               std::invalid_argument);
  EXPECT_THROW(fp8_encode_f32(1.0f, bad_format, Fp8Overflow::kSaturating), std::invalid_argument);
  EXPECT_THROW(fp8_decode_to_f32_bits(0x38, bad_format), std::invalid_argument);
  EXPECT_THROW(fp8_dtype(bad_format), std::invalid_argument);
  EXPECT_EQ(fp8_format_name(bad_format), "invalid");
  EXPECT_EQ(dst[0], 0xA5);
}

}  // namespace
}  // namespace lmcache
