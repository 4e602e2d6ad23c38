// File: lmcache/fp8/fp8_codec.h
//
// The scalar reference fp8 codec: bit-exact with PyTorch's float8_e4m3fn / float8_e5m2 casts
// (docs/fp8.md). It is the oracle every fast backend (SIMD, CUDA) must match
// byte for byte, so it favours obvious correctness over speed.
//
// Encoding: float16 and bfloat16 inputs are widened exactly to float32 first, then rounded once
// (round to nearest, ties to even) to the fp8 grid; e5m2 never goes through fp16. The sign bit
// is always kept (-0.0 -> 0x80, -NaN -> 0xFF).
//   nonsaturating (PyTorch <= 2.11): e4m3fn |x| > 464 and +-inf -> NaN (0x7F|s);
//                                    e5m2 |x| >= 61440 and +-inf -> inf (0x7C|s).
//   saturating (SATFINITE):          finite overflow and +-inf -> +-max finite
//                                    (e4m3fn 0x7E|s, e5m2 0x7B|s); NaN -> 0x7F|s.
// Decoding is exact for every finite code and e5m2 inf. NaN codes decode to the NaN bit patterns
// PyTorch's x86 CPU `.to()` produces (docs/fp8.md §4).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "lmcache/core/dtype.h"

namespace lmcache {

enum class Fp8Format : std::uint8_t { kE4M3FN, kE5M2 };
enum class Fp8Overflow : std::uint8_t { kNonSaturating, kSaturating };

// "float8_e4m3fn" / "float8_e5m2"; "nonsaturating" / "saturating".
std::string_view fp8_format_name(Fp8Format format);
std::string_view fp8_overflow_name(Fp8Overflow overflow);
DType fp8_dtype(Fp8Format format);

// Scalar conversions of one value. f16/bf16 values are passed as their raw bits.
std::uint8_t fp8_encode_f32(float x, Fp8Format format, Fp8Overflow overflow);
std::uint8_t fp8_encode_f16_bits(std::uint16_t bits, Fp8Format format, Fp8Overflow overflow);
std::uint8_t fp8_encode_bf16_bits(std::uint16_t bits, Fp8Format format, Fp8Overflow overflow);
std::uint32_t fp8_decode_to_f32_bits(std::uint8_t code, Fp8Format format);
std::uint16_t fp8_decode_to_f16_bits(std::uint8_t code, Fp8Format format);
std::uint16_t fp8_decode_to_bf16_bits(std::uint8_t code, Fp8Format format);

// fp8_encode()
//
// Encodes `count` elements of `src_dtype` (float32, float16 or bfloat16) read from `src` into
// `dst[0..count)`. `src` must hold count * element_size(src_dtype) bytes and `dst` at least
// count bytes; unaligned buffers are fine. Throws std::invalid_argument (nothing written) for
// an unsupported dtype or short buffers.
void fp8_encode(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                std::span<std::uint8_t> dst, Fp8Format format, Fp8Overflow overflow);

// fp8_check_encode_args() / fp8_check_decode_args()
//
// The argument checks of fp8_encode() / fp8_decode(), with their exact messages, for other
// backends of the same conversion (devices/ fp8_encode_fast) to throw what the reference would.
void fp8_check_encode_args(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                           std::span<const std::uint8_t> dst, Fp8Format format,
                           Fp8Overflow overflow);
void fp8_check_decode_args(std::span<const std::uint8_t> src, std::size_t count,
                           std::span<const std::byte> dst, DType dst_dtype, Fp8Format format);

// fp8_decode()
//
// Decodes `count` codes from `src` into `dst` as `dst_dtype` (float32, float16 or bfloat16).
// Same buffer rules and errors as fp8_encode().
void fp8_decode(std::span<const std::uint8_t> src, std::size_t count, std::span<std::byte> dst,
                DType dst_dtype, Fp8Format format);

}  // namespace lmcache
