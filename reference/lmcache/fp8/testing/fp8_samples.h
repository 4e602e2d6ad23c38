// File: lmcache/fp8/testing/fp8_samples.h
//
// Test inputs for the fp8 kernels, shared by the CPU and CUDA tests: every 16-bit pattern, and
// a dense float32 sample that covers every exponent and every rounding decision the encoder
// makes. Expected bytes always come from the scalar reference codec (the oracle).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::fp8_internal {

inline constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3FN, Fp8Format::kE5M2};
inline constexpr Fp8Overflow kOverflows[] = {Fp8Overflow::kNonSaturating, Fp8Overflow::kSaturating};
inline constexpr DType kWideDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

inline std::string mode_name(Fp8Format f, Fp8Overflow o) {
  return std::string(fp8_format_name(f)) + "/" + std::string(fp8_overflow_name(o));
}

inline float f32_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline std::uint32_t bits_of(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// Every 16-bit pattern, as the raw bytes of a float16 / bfloat16 buffer.
inline std::vector<std::byte> all_16bit_patterns() {
  std::vector<std::byte> out(65536 * 2);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto v = static_cast<std::uint16_t>(i);
    std::memcpy(out.data() + 2 * i, &v, 2);
  }
  return out;
}

// dense_f32_sample()
//
// float32 bit patterns, both signs of each:
//   - every exponent (0..255) with assorted mantissas (0, 1, max, halves, quarters, random);
//   - for both formats, every value of the fp8 grid (decoded by the reference), the virtual
//     v[N], and every midpoint between neighbours (the rounding ties, including the overflow
//     thresholds 464 / 61440 and the subnormal ties 2^-10 / 2^-17), each with its neighbours
//     up to 3 ulps away;
//   - `random_count` uniformly random bit patterns (NaN payloads included).
inline std::vector<std::uint32_t> dense_f32_sample(std::size_t random_count = 1 << 18,
                                                   std::uint32_t seed = 20261130) {
  std::vector<std::uint32_t> mags;
  std::mt19937 rng(seed);
  for (std::uint32_t e = 0; e < 256; ++e) {
    for (std::uint32_t m : {0x000000u, 0x000001u, 0x7FFFFFu, 0x400000u, 0x200000u, 0x600000u,
                            0x100000u, 0x080000u, 0x0FFFFFu, 0x3FFFFFu, 0x400001u}) {
      mags.push_back(e << 23 | m);
    }
    for (int k = 0; k < 8; ++k) mags.push_back(e << 23 | (rng() & 0x7FFFFFu));
  }
  const auto around = [&](std::uint32_t center) {
    for (int d = -3; d <= 3; ++d) {
      const std::int64_t b = static_cast<std::int64_t>(center) + d;
      if (b >= 0 && b <= 0x7FFFFFFF) mags.push_back(static_cast<std::uint32_t>(b));
    }
  };
  for (Fp8Format f : kFormats) {
    const unsigned n = f == Fp8Format::kE4M3FN ? 0x7F : 0x7C;
    std::vector<double> grid;
    for (unsigned c = 0; c < n; ++c) {
      grid.push_back(f32_from_bits(fp8_decode_to_f32_bits(static_cast<std::uint8_t>(c), f)));
    }
    grid.push_back(f == Fp8Format::kE4M3FN ? 480.0 : 65536.0);  // virtual v[N]
    for (std::size_t i = 0; i < grid.size(); ++i) {
      around(bits_of(static_cast<float>(grid[i])));
      if (i + 1 < grid.size()) around(bits_of(static_cast<float>((grid[i] + grid[i + 1]) / 2)));
    }
  }
  std::vector<std::uint32_t> out;
  out.reserve(2 * mags.size() + random_count);
  for (std::uint32_t m : mags) {
    out.push_back(m);
    out.push_back(m | 0x80000000u);
  }
  for (std::size_t i = 0; i < random_count; ++i) out.push_back(static_cast<std::uint32_t>(rng()));
  return out;
}

inline std::vector<std::byte> as_bytes(std::span<const std::uint32_t> words) {
  std::vector<std::byte> out(words.size() * 4);
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

// Every fp8 code, repeated `repeats` times in a shuffled order, plus a few extra so the length
// is not a multiple of any vector length.
inline std::vector<std::uint8_t> all_codes(int repeats = 3, std::uint32_t seed = 7) {
  std::vector<std::uint8_t> out;
  for (int r = 0; r < repeats; ++r) {
    for (int c = 0; c < 256; ++c) out.push_back(static_cast<std::uint8_t>(c));
  }
  std::mt19937 rng(seed);
  for (std::size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[rng() % i]);
  for (int c : {0x7F, 0xFF, 0x80, 0x00, 0x7D}) out.push_back(static_cast<std::uint8_t>(c));
  return out;
}

// Reference outputs.
inline std::vector<std::uint8_t> reference_encode(std::span<const std::byte> src, DType dtype,
                                                  Fp8Format f, Fp8Overflow o) {
  const std::size_t n = src.size() / element_size(dtype);
  std::vector<std::uint8_t> out(n);
  fp8_encode(src, dtype, n, out, f, o);
  return out;
}

inline std::vector<std::byte> reference_decode(std::span<const std::uint8_t> src, DType dtype,
                                               Fp8Format f) {
  std::vector<std::byte> out(src.size() * element_size(dtype));
  fp8_decode(src, src.size(), out, dtype, f);
  return out;
}

// The index of the first differing element (of `elem` bytes), or -1.
inline long first_mismatch(std::span<const std::byte> a, std::span<const std::byte> b,
                           std::size_t elem) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<long>(i / elem);
  }
  return -1;
}

inline long first_mismatch(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  return first_mismatch(std::as_bytes(a), std::as_bytes(b), 1);
}

}  // namespace lmcache::fp8_internal
