// File: lmcache/fp8/testing/kernel_checks.h
//
// The fast kernels' tests' shared checks: a kernel's output against the scalar reference codec
// (fp8_samples.h), reported as the first element that differs, and their random inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/fp8/testing/fp8_samples.h"

namespace lmcache::fp8_internal {

// The single-threaded SIMD backend: what the checks run unless told otherwise.
inline constexpr fp8::KernelOptions kSimdOneThread{.threads = 1, .backend = fp8::Fp8Backend::kSimd};

// `n` pseudo-random bytes, the same for the same seed.
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  return out;
}

// "0x..." (an AssertionResult streams each value on its own, so std::hex would not stick).
inline std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

// EncodeMatches()
//
// Encodes `src` with the fast kernels (`options`) and the reference; a failure names the first
// element that differs, its input bits and both codes.
inline ::testing::AssertionResult EncodeMatches(
    std::span<const std::byte> src, DType dtype, Fp8Format f, Fp8Overflow o,
    const fp8::KernelOptions& options = kSimdOneThread) {
  const std::size_t n = src.size() / element_size(dtype);
  const auto want = reference_encode(src, dtype, f, o);
  std::vector<std::uint8_t> got(n, 0xA5);
  fp8::fp8_encode_fast(src, dtype, n, got, f, o, options);
  const long i = first_mismatch(got, want);
  if (i < 0) return ::testing::AssertionSuccess();
  std::uint32_t in = 0;
  std::memcpy(&in, src.data() + i * element_size(dtype), element_size(dtype));
  return ::testing::AssertionFailure()
         << dtype_name(dtype) << " " << mode_name(f, o) << " element " << i << " (bits " << hex(in)
         << "): got " << hex(got[i]) << ", want " << hex(want[i]);
}

// DecodeMatches()
//
// Decodes `src` with the fast kernels (`options`) and the reference; a failure names the first
// element that differs, its code and both values' bits.
inline ::testing::AssertionResult DecodeMatches(
    std::span<const std::uint8_t> src, DType dtype, Fp8Format f,
    const fp8::KernelOptions& options = kSimdOneThread) {
  const std::size_t elem = element_size(dtype);
  const auto want = reference_decode(src, dtype, f);
  std::vector<std::byte> got(src.size() * elem, std::byte{0xA5});
  fp8::fp8_decode_fast(src, src.size(), got, dtype, f, options);
  const long i = first_mismatch(got, want, elem);
  if (i < 0) return ::testing::AssertionSuccess();
  std::uint32_t g = 0;
  std::uint32_t w = 0;
  std::memcpy(&g, got.data() + i * elem, elem);
  std::memcpy(&w, want.data() + i * elem, elem);
  return ::testing::AssertionFailure()
         << fp8_format_name(f) << " -> " << dtype_name(dtype) << " element " << i << " (code "
         << hex(src[i]) << "): got " << hex(g) << ", want " << hex(w);
}

}  // namespace lmcache::fp8_internal
