#include "lmcache/serde/fp8_serde.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::byte kGuard{0xAB};

// --- Independent element helpers (exact for the values the tests use). ---------------------

std::uint16_t f32_to_bf16_bits(float v) {
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);  // truncation
}
float bf16_bits_to_f32(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}
// Normal numbers and zero only, mantissa truncated: enough for the exact test values.
std::uint16_t f32_to_f16_bits(float v) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000);
  if ((x & 0x7FFFFFFF) == 0) return sign;
  int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (exp << 10) | ((x >> 13) & 0x3FF));
}
float f16_bits_to_f32(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  if ((h & 0x7FFF) == 0) return std::bit_cast<float>(sign);
  std::uint32_t exp = ((h >> 10) & 0x1F) - 15 + 127;
  return std::bit_cast<float>(sign | (exp << 23) | (static_cast<std::uint32_t>(h & 0x3FF) << 13));
}

// Writes / reads element i of a group in its dtype.
void put(MemoryObj& obj, std::size_t group, std::size_t i, float v) {
  std::byte* p = obj.group_bytes(group).data();
  switch (obj.layout().dtypes()[group]) {
    case DType::kFloat32:
      std::memcpy(p + 4 * i, &v, 4);
      break;
    case DType::kFloat16: {
      std::uint16_t b = f32_to_f16_bits(v);
      std::memcpy(p + 2 * i, &b, 2);
      break;
    }
    case DType::kBFloat16: {
      std::uint16_t b = f32_to_bf16_bits(v);
      std::memcpy(p + 2 * i, &b, 2);
      break;
    }
    default:
      FAIL() << "test helper: unsupported dtype";
  }
}

float get(const MemoryObj& obj, std::size_t group, std::size_t i) {
  const std::byte* p = obj.group_bytes(group).data();
  switch (obj.layout().dtypes()[group]) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::kFloat16: {
      std::uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return f16_bits_to_f32(b);
    }
    case DType::kBFloat16: {
      std::uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return bf16_bits_to_f32(b);
    }
    default:
      ADD_FAILURE() << "test helper: unsupported dtype";
      return NAN;
  }
}

// A byte buffer of `n` logical bytes and `physical` allocated bytes, all set to kGuard.
MemoryObjPtr guarded_bytes(std::size_t n, std::size_t physical = 0) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8), physical);
  std::fill(obj->physical_bytes().begin(), obj->physical_bytes().end(), kGuard);
  return obj;
}

bool all_guard(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == kGuard; });
}

std::uint8_t code_at(const MemoryObj& obj, std::size_t i) {
  return static_cast<std::uint8_t>(obj.physical_bytes()[i]);
}

using core_internal::expect_invalid;

// The values exact in both formats, with their codes (docs/fp8.md §2).
const std::vector<float> kExact = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, -0.5f, -4.0f};
const std::vector<std::uint8_t> kE4M3Codes = {0x00, 0x30, 0x38, 0x3C, 0x40, 0x44, 0x48, 0xB0, 0xC8};
const std::vector<std::uint8_t> kE5M2Codes = {0x00, 0x38, 0x3C, 0x3E, 0x40, 0x42, 0x44, 0xB8, 0xC4};

Fp8SerdeOptions opts(Fp8Format f, Fp8Overflow o = Fp8Overflow::kNonSaturating) {
  return Fp8SerdeOptions{f, o};
}

// --- Estimate (ported from LMCache's Python tests). ----------------------------------------------

TEST(Fp8Serde, EstimateIsOneAndAHalfTimesElementsRoundedDown) {
  Fp8Serializer s;
  EXPECT_EQ(
      s.estimate_serialized_size(MemoryLayoutDesc::single({2, 4, 256, 128}, DType::kBFloat16)),
      393216u);
  EXPECT_EQ(s.estimate_serialized_size(
                MemoryLayoutDesc({{4, 8}, {16}}, {DType::kBFloat16, DType::kFloat32})),
            72u);
  EXPECT_EQ(s.estimate_serialized_size(MemoryLayoutDesc::single({273}, DType::kFloat16)), 409u);
  EXPECT_EQ(s.estimate_serialized_size(MemoryLayoutDesc::single({1}, DType::kFloat16)), 1u);
  EXPECT_EQ(s.estimate_serialized_size(MemoryLayoutDesc()), 0u);
}

// --- Exact round trips for every input x output dtype, both formats. ------------------------

class Fp8ExactRoundTrip : public ::testing::TestWithParam<std::tuple<Fp8Format, DType, DType>> {};

TEST_P(Fp8ExactRoundTrip, ExactValuesAndPyTorchCodes) {
  auto [format, in_dtype, out_dtype] = GetParam();
  const auto n = static_cast<std::int64_t>(kExact.size());
  auto src = MemoryObj::allocate(MemoryLayoutDesc::single({n}, in_dtype));
  for (std::size_t i = 0; i < kExact.size(); ++i) put(*src, 0, i, kExact[i]);

  Fp8Serializer ser(opts(format));
  Fp8Deserializer deser(opts(format));
  auto bytes = guarded_bytes(ser.estimate_serialized_size(src->layout()));
  ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), kExact.size());
  const auto& codes = format == Fp8Format::kE4M3FN ? kE4M3Codes : kE5M2Codes;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    EXPECT_EQ(code_at(*bytes, i), codes[i]) << "element " << i << " = " << kExact[i];
  }
  EXPECT_TRUE(all_guard(bytes->physical_bytes().subspan(kExact.size())));

  bytes->set_used_size(kExact.size());
  auto dst = MemoryObj::allocate(MemoryLayoutDesc::single({n}, out_dtype));
  deser.deserialize(*bytes, *dst, test_key());
  for (std::size_t i = 0; i < kExact.size(); ++i) {
    EXPECT_EQ(get(*dst, 0, i), kExact[i]) << "element " << i;
    EXPECT_EQ(std::signbit(get(*dst, 0, i)), std::signbit(kExact[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDtypes, Fp8ExactRoundTrip,
    ::testing::Combine(::testing::Values(Fp8Format::kE4M3FN, Fp8Format::kE5M2),
                       ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16)),
    [](const auto& info) {
      return std::string(fp8_format_name(std::get<0>(info.param))) + "_" +
             std::string(dtype_name(std::get<1>(info.param))) + "_to_" +
             std::string(dtype_name(std::get<2>(info.param)));
    });

// --- Multi-group objects (ported from LMCache's Python tests). -----------------------------------

MemoryObjPtr filled(const MemoryLayoutDesc& layout, std::size_t salt = 0) {
  auto obj = MemoryObj::allocate(layout);
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      put(*obj, g, i, kExact[(i + g + salt) % kExact.size()]);
    }
  }
  return obj;
}

// The kernel and simd_target options change how the bytes are computed, never the bytes.
TEST(Fp8Serde, EveryKernelChoiceGivesTheSameBytes) {
  const MemoryLayoutDesc layout({{4, 33}, {2, 17}, {70000}},
                                {DType::kBFloat16, DType::kFloat16, DType::kFloat32});
  const auto src = filled(layout, 3);
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    const std::size_t n = layout.total_elements();
    auto reference = MemoryObj::allocate(
        MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
    Fp8Serializer(opts(format)).serialize(*src, *reference, test_key());
    std::vector<Fp8SerdeOptions> choices;
    for (Fp8SerdeKernel k :
         {Fp8SerdeKernel::kAuto, Fp8SerdeKernel::kScalar, Fp8SerdeKernel::kSimd}) {
      Fp8SerdeOptions o = opts(format);
      o.kernel = k;
      choices.push_back(o);
    }
    Fp8SerdeOptions pinned = opts(format);
    pinned.kernel = Fp8SerdeKernel::kSimd;
    pinned.simd_target = "SCALAR";  // compiled into every Highway build
    choices.push_back(pinned);
    for (const Fp8SerdeOptions& o : choices) {
      SCOPED_TRACE(std::string(fp8_serde_kernel_name(o.kernel)) + " " + o.simd_target);
      auto bytes = MemoryObj::allocate(reference->layout());
      ASSERT_EQ(Fp8Serializer(o).serialize(*src, *bytes, test_key()), n);
      EXPECT_TRUE(std::equal(bytes->data(), bytes->data() + n, reference->data()));
      auto back = MemoryObj::allocate(layout);
      auto back_ref = MemoryObj::allocate(layout);
      Fp8Deserializer(o).deserialize(*bytes, *back, test_key());
      Fp8Deserializer(opts(format)).deserialize(*reference, *back_ref, test_key());
      EXPECT_TRUE(std::equal(back->data(), back->data() + back->size(), back_ref->data()));
    }
  }
  expect_invalid(
      [] {
        Fp8SerdeOptions o;
        o.simd_target = "NOT_A_TARGET";
        Fp8Serializer s(o);
      },
      {"'simd_target'", "NOT_A_TARGET"});
}

TEST(Fp8Serde, MultiGroupPackedBackToBackAndEachGroupRoundTrips) {
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    SCOPED_TRACE(std::string(fp8_format_name(format)));
    const MemoryLayoutDesc layout({{2, 3}, {4}, {1, 5}},
                                  {DType::kBFloat16, DType::kFloat16, DType::kFloat32});
    auto src = filled(layout);
    Fp8Serializer ser(opts(format));
    Fp8Deserializer deser(opts(format));
    auto bytes = guarded_bytes(ser.estimate_serialized_size(layout));
    ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), 15u);
    const auto& codes = format == Fp8Format::kE4M3FN ? kE4M3Codes : kE5M2Codes;
    std::size_t offset = 0;
    for (std::size_t g = 0; g < layout.num_groups(); ++g) {
      for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
        EXPECT_EQ(code_at(*bytes, offset + i), codes[(i + g) % kExact.size()])
            << "group " << g << " element " << i;
      }
      offset += layout.group_elements(g);
    }
    EXPECT_TRUE(all_guard(bytes->physical_bytes().subspan(15)));

    bytes->set_used_size(15);
    auto same = MemoryObj::allocate(layout);
    deser.deserialize(*bytes, *same, test_key());
    EXPECT_TRUE(std::equal(same->bytes().begin(), same->bytes().end(), src->bytes().begin()))
        << "every group comes back exact, in its own dtype";

    // The destination decides the dtypes: same shapes, other dtypes.
    const MemoryLayoutDesc other({{2, 3}, {4}, {1, 5}},
                                 {DType::kFloat32, DType::kBFloat16, DType::kFloat16});
    auto dst = MemoryObj::allocate(other);
    deser.deserialize(*bytes, *dst, test_key());
    for (std::size_t g = 0; g < layout.num_groups(); ++g) {
      for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
        EXPECT_EQ(get(*dst, g, i), get(*src, g, i)) << "group " << g << " element " << i;
      }
    }
  }
}

TEST(Fp8Serde, EmptyMiddleGroupRoundTrips) {
  const MemoryLayoutDesc layout({{3}, {0}, {2}},
                                {DType::kBFloat16, DType::kFloat32, DType::kFloat16});
  auto src = filled(layout, 2);
  Fp8Serializer ser;
  Fp8Deserializer deser;
  auto bytes = guarded_bytes(ser.estimate_serialized_size(layout));
  ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), 5u);
  bytes->set_used_size(5);
  auto dst = MemoryObj::allocate(layout);
  deser.deserialize(*bytes, *dst, test_key());
  EXPECT_TRUE(std::equal(dst->bytes().begin(), dst->bytes().end(), src->bytes().begin()));
}

TEST(Fp8Serde, EmptyLayoutWritesNothing) {
  auto src = MemoryObj::allocate(MemoryLayoutDesc());
  auto bytes = guarded_bytes(4);
  Fp8Serializer ser;
  EXPECT_EQ(ser.serialize(*src, *bytes, test_key()), 0u);
  EXPECT_TRUE(all_guard(bytes->physical_bytes()));
  auto dst = MemoryObj::allocate(MemoryLayoutDesc());
  EXPECT_NO_THROW(Fp8Deserializer().deserialize(*guarded_bytes(0), *dst, test_key()));
}

// --- Padding and guard bytes (ported from LMCache's Python tests). -------------------------------

TEST(Fp8Serde, PaddingIsNeitherSerializedNorTouched) {
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({3, 7}, DType::kFloat16);
  // Source with tail padding set to a pattern.
  auto src = MemoryObj::allocate(layout, layout.total_bytes() + 64);
  std::fill(src->physical_bytes().begin(), src->physical_bytes().end(), kGuard);
  for (std::size_t i = 0; i < 21; ++i) put(*src, 0, i, kExact[i % kExact.size()]);
  Fp8Serializer ser;
  auto bytes = guarded_bytes(ser.estimate_serialized_size(layout));
  ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), 21u) << "padding is not in the payload";
  EXPECT_TRUE(all_guard(src->physical_bytes().subspan(layout.total_bytes())));
  EXPECT_TRUE(all_guard(bytes->physical_bytes().subspan(21)));

  // Destination with tail padding: only the layout's bytes are written.
  bytes->set_used_size(21);
  auto dst = MemoryObj::allocate(layout, layout.total_bytes() + 64);
  std::fill(dst->physical_bytes().begin(), dst->physical_bytes().end(), kGuard);
  Fp8Deserializer().deserialize(*bytes, *dst, test_key());
  EXPECT_TRUE(all_guard(dst->physical_bytes().subspan(layout.total_bytes())));
  EXPECT_TRUE(std::equal(dst->bytes().begin(), dst->bytes().end(), src->bytes().begin()));
}

// --- Short buffers (ported from LMCache's Python tests): rejected, nothing written. --------------

TEST(Fp8Serde, ShortDestinationRejectedWithNothingWritten) {
  const MemoryLayoutDesc layout({{4, 4}, {3}}, {DType::kBFloat16, DType::kFloat32});
  auto src = filled(layout);
  auto bytes = guarded_bytes(18);
  expect_invalid([&] { Fp8Serializer().serialize(*src, *bytes, test_key()); },
                 {"destination buffer too small: got 18 bytes, need 19"});
  EXPECT_TRUE(all_guard(bytes->physical_bytes()));
}

TEST(Fp8Serde, DestinationCapacityIsLogicalSize) {
  // One rule for both directions: the logical size() is what a buffer offers. A destination
  // narrowed below the payload (here by an earlier serialize, to 0) is rejected, with nothing
  // written past its size(), however large its physical buffer; widened back, it is accepted.
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({8}, DType::kFloat32);
  auto src = filled(layout);
  auto bytes = guarded_bytes(12);
  bytes->set_used_size(7);
  expect_invalid([&] { Fp8Serializer().serialize(*src, *bytes, test_key()); },
                 {"destination buffer too small: got 7 bytes, need 8"});
  EXPECT_TRUE(all_guard(bytes->physical_bytes()));
  bytes->set_used_size(bytes->physical_size());
  EXPECT_EQ(Fp8Serializer().serialize(*src, *bytes, test_key()), 8u);
  EXPECT_EQ(code_at(*bytes, 2), kE4M3Codes[2]);
}

TEST(Fp8Serde, ShortSourceRejectedWithNothingWritten) {
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({16}, DType::kBFloat16);
  auto dst = MemoryObj::allocate(layout);
  std::fill(dst->physical_bytes().begin(), dst->physical_bytes().end(), kGuard);
  expect_invalid([&] { Fp8Deserializer().deserialize(*guarded_bytes(15), *dst, test_key()); },
                 {"source buffer too small: got 15 bytes, need 16"});
  EXPECT_TRUE(all_guard(dst->physical_bytes()));
}

TEST(Fp8Serde, DeserializeHonoursNarrowedSourceSize) {
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({16}, DType::kBFloat16);
  auto src = filled(layout);
  Fp8Serializer ser;
  auto bytes = guarded_bytes(ser.estimate_serialized_size(layout));
  ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), 16u);
  bytes->set_used_size(8);
  auto dst = MemoryObj::allocate(layout);
  expect_invalid([&] { Fp8Deserializer().deserialize(*bytes, *dst, test_key()); },
                 {"source buffer too small: got 8 bytes, need 16"});
  // Widened back to the full count it works; bytes past the count are ignored.
  bytes->set_used_size(bytes->physical_size());
  Fp8Deserializer().deserialize(*bytes, *dst, test_key());
  EXPECT_TRUE(std::equal(dst->bytes().begin(), dst->bytes().end(), src->bytes().begin()));
}

// --- Unsupported dtypes and layout mismatches. ----------------------------------------------

TEST(Fp8Serde, UnsupportedSourceDtypeNamedWithItsGroup) {
  const MemoryLayoutDesc layout({{4}, {4}}, {DType::kFloat32, DType::kUInt8});
  auto src = MemoryObj::allocate(layout);
  auto bytes = guarded_bytes(16);
  expect_invalid([&] { Fp8Serializer().serialize(*src, *bytes, test_key()); },
                 {"unsupported dtype 'uint8'", "group 1"});
  EXPECT_TRUE(all_guard(bytes->physical_bytes()));
  auto fp8 = MemoryObj::allocate(MemoryLayoutDesc::single({4}, DType::kFloat8E4M3FN));
  expect_invalid([&] { Fp8Serializer().serialize(*fp8, *bytes, test_key()); },
                 {"unsupported dtype 'float8_e4m3fn'", "group 0"});
}

TEST(Fp8Serde, UnsupportedDestinationDtypeRejectedWithNothingWritten) {
  auto bytes = guarded_bytes(8);
  auto dst = MemoryObj::allocate(MemoryLayoutDesc({{4}, {4}}, {DType::kFloat16, DType::kUInt8}));
  std::fill(dst->physical_bytes().begin(), dst->physical_bytes().end(), kGuard);
  expect_invalid([&] { Fp8Deserializer().deserialize(*bytes, *dst, test_key()); },
                 {"unsupported dtype 'uint8'", "group 1"});
  EXPECT_TRUE(all_guard(dst->physical_bytes()));
}

TEST(Fp8Serde, GroupLayoutMismatchRejected) {
  const MemoryLayoutDesc layout({{4}, {2}}, {DType::kFloat32, DType::kFloat32});
  auto tensor = filled(layout);

  // A byte side typed as this serde's fp8 format must match the groups one to one.
  auto fp8_match = MemoryObj::allocate(
      MemoryLayoutDesc({{2, 2}, {2}}, {DType::kFloat8E4M3FN, DType::kFloat8E4M3FN}));
  EXPECT_EQ(Fp8Serializer().serialize(*tensor, *fp8_match, test_key()), 6u);
  auto back = MemoryObj::allocate(layout);
  Fp8Deserializer().deserialize(*fp8_match, *back, test_key());
  EXPECT_TRUE(std::equal(back->bytes().begin(), back->bytes().end(), tensor->bytes().begin()));

  auto fp8_counts = MemoryObj::allocate(
      MemoryLayoutDesc({{3}, {3}}, {DType::kFloat8E4M3FN, DType::kFloat8E4M3FN}));
  expect_invalid([&] { Fp8Serializer().serialize(*tensor, *fp8_counts, test_key()); },
                 {"group layout mismatch", "group 0"});
  expect_invalid([&] { Fp8Deserializer().deserialize(*fp8_counts, *back, test_key()); },
                 {"group layout mismatch"});
  auto fp8_groups = MemoryObj::allocate(MemoryLayoutDesc::single({6}, DType::kFloat8E4M3FN));
  expect_invalid([&] { Fp8Deserializer().deserialize(*fp8_groups, *back, test_key()); },
                 {"group layout mismatch", "1 fp8 groups", "2"});

  // The other fp8 format, or a non-byte dtype, is a mismatch too.
  auto e5m2 =
      MemoryObj::allocate(MemoryLayoutDesc({{4}, {2}}, {DType::kFloat8E5M2, DType::kFloat8E5M2}));
  expect_invalid([&] { Fp8Deserializer().deserialize(*e5m2, *back, test_key()); },
                 {"group layout mismatch", "float8_e5m2"});
  auto floats = MemoryObj::allocate(MemoryLayoutDesc::single({8}, DType::kFloat32));
  std::fill(floats->physical_bytes().begin(), floats->physical_bytes().end(), kGuard);
  expect_invalid([&] { Fp8Serializer().serialize(*tensor, *floats, test_key()); },
                 {"group layout mismatch", "float32"});
  EXPECT_TRUE(all_guard(floats->physical_bytes()));
}

// --- Options, determinism, statistics. ------------------------------------------------------

TEST(Fp8Serde, OverflowOptionIsHonoured) {
  auto src = MemoryObj::allocate(MemoryLayoutDesc::single({3}, DType::kFloat32));
  put(*src, 0, 0, 1000.0f);
  put(*src, 0, 1, -1000.0f);
  put(*src, 0, 2, INFINITY);
  struct Case {
    Fp8Format format;
    Fp8Overflow overflow;
    std::vector<std::uint8_t> codes;
  };
  for (const Case& c : {Case{Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating, {0x7F, 0xFF, 0x7F}},
                        Case{Fp8Format::kE4M3FN, Fp8Overflow::kSaturating, {0x7E, 0xFE, 0x7E}},
                        Case{Fp8Format::kE5M2, Fp8Overflow::kNonSaturating, {0x64, 0xE4, 0x7C}},
                        Case{Fp8Format::kE5M2, Fp8Overflow::kSaturating, {0x64, 0xE4, 0x7B}}}) {
    auto bytes = guarded_bytes(3);
    Fp8Serializer(opts(c.format, c.overflow)).serialize(*src, *bytes, test_key());
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(code_at(*bytes, i), c.codes[i])
          << fp8_format_name(c.format) << " " << fp8_overflow_name(c.overflow) << " element " << i;
    }
  }
}

TEST(Fp8Serde, SerializeIsDeterministic) {
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({1000}, DType::kFloat32);
  auto src = MemoryObj::allocate(layout);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (std::size_t i = 0; i < 1000; ++i) put(*src, 0, i, normal(rng));
  Fp8Serializer ser;
  auto a = guarded_bytes(1000), b = guarded_bytes(1000);
  ser.serialize(*src, *a, test_key());
  ser.serialize(*src, *b, test_key());
  EXPECT_TRUE(std::equal(a->bytes().begin(), a->bytes().end(), b->bytes().begin()));
}

double correlation(const std::vector<double>& x, const std::vector<double>& y) {
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= x.size();
  my /= y.size();
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

// Ported from LMCache's Python tests: randn bfloat16 data survives with correlation > 0.99, per
// group.
TEST(Fp8Serde, RandnRoundTripCorrelationPerGroup) {
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    SCOPED_TRACE(std::string(fp8_format_name(format)));
    const MemoryLayoutDesc layout({{2, 4, 64, 16}, {512}, {33, 7}},
                                  {DType::kBFloat16, DType::kFloat16, DType::kFloat32});
    auto src = MemoryObj::allocate(layout);
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t g = 0; g < layout.num_groups(); ++g) {
      for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
        float v = normal(rng);
        // Through the group's dtype so that the source value is what get() reads back.
        if (layout.dtypes()[g] == DType::kBFloat16) v = bf16_bits_to_f32(f32_to_bf16_bits(v));
        if (layout.dtypes()[g] == DType::kFloat16) v = std::round(v * 1024.0f) / 1024.0f;
        put(*src, g, i, v);
      }
    }
    Fp8Serializer ser(opts(format));
    auto bytes = guarded_bytes(ser.estimate_serialized_size(layout));
    ASSERT_EQ(ser.serialize(*src, *bytes, test_key()), layout.total_elements());
    bytes->set_used_size(layout.total_elements());
    auto dst = MemoryObj::allocate(layout);
    Fp8Deserializer(opts(format)).deserialize(*bytes, *dst, test_key());
    for (std::size_t g = 0; g < layout.num_groups(); ++g) {
      std::vector<double> x, y;
      for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
        x.push_back(get(*src, g, i));
        y.push_back(get(*dst, g, i));
      }
      EXPECT_GT(correlation(x, y), 0.99) << "group " << g;
    }
  }
}

// --- Through the processor (ported from LMCache's Python tests). ---------------------------------

TEST(Fp8SerdeConcurrency, ThroughProcessorNarrowsTempAndRoundTripsExactly) {
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    SCOPED_TRACE(std::string(fp8_format_name(format)));
    AsyncSerdeProcessor p(std::make_shared<Fp8Serializer>(opts(format)),
                          std::make_shared<Fp8Deserializer>(opts(format)), 2);
    const MemoryLayoutDesc layout({{4, 9}, {5}}, {DType::kBFloat16, DType::kFloat32});
    std::vector<MemoryObjPtr> srcs, temps, dsts;
    for (std::size_t k = 0; k < 3; ++k) {
      srcs.push_back(filled(layout, k));
      auto temp = MemoryObj::allocate(serialized_layout_desc(layout, p));
      std::fill(temp->physical_bytes().begin(), temp->physical_bytes().end(), kGuard);
      temps.push_back(temp);
      dsts.push_back(MemoryObj::allocate(layout));
    }
    const std::size_t numel = layout.total_elements();

    TaskId s = p.submit_serialize(srcs, temps, test_keys(srcs.size()));
    ASSERT_TRUE(wait_readable(p.get_serialize_event_fd(), 5000ms));
    EXPECT_EQ(consume_fd(p.get_serialize_event_fd()), 1u);
    ASSERT_EQ(p.query_serialize_result(s), std::optional<bool>(true));
    for (const auto& temp : temps) {
      EXPECT_EQ(temp->size(), numel) << "one byte per element after narrowing";
      EXPECT_TRUE(all_guard(temp->physical_bytes().subspan(numel))) << "bytes past n untouched";
    }

    TaskId d = p.submit_deserialize(temps, dsts, test_keys(temps.size()));
    ASSERT_TRUE(wait_readable(p.get_deserialize_event_fd(), 5000ms));
    EXPECT_EQ(consume_fd(p.get_deserialize_event_fd()), 1u);
    ASSERT_EQ(p.query_deserialize_result(d), std::optional<bool>(true));
    for (std::size_t k = 0; k < 3; ++k) {
      EXPECT_TRUE(
          std::equal(dsts[k]->bytes().begin(), dsts[k]->bytes().end(), srcs[k]->bytes().begin()))
          << "object " << k;
    }
  }
}

TEST(Fp8SerdeConcurrency, ThroughProcessorShortTempFailsTheTask) {
  AsyncSerdeProcessor p(std::make_shared<Fp8Serializer>(), std::make_shared<Fp8Deserializer>());
  auto src = filled(MemoryLayoutDesc::single({10}, DType::kFloat32));
  auto temp = guarded_bytes(9);
  TaskId s = p.submit_serialize({src}, {temp}, test_keys(1));
  ASSERT_TRUE(wait_readable(p.get_serialize_event_fd(), 5000ms));
  EXPECT_EQ(p.query_serialize_result(s), std::optional<bool>(false));
  EXPECT_THAT(p.failure_message(s).value_or(""), HasSubstr("destination buffer too small"));
  EXPECT_EQ(temp->size(), 9u);
  EXPECT_TRUE(all_guard(temp->physical_bytes()));
}

}  // namespace
}  // namespace lmcache
