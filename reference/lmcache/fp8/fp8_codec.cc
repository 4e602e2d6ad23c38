// File: lmcache/fp8/fp8_codec.cc
//
// The scalar reference fp8 codec. Everything works on raw bit patterns with integer arithmetic,
// so each conversion rounds exactly once (no float multiply that could double-round) and the
// result does not depend on the host's FPU modes (FTZ/DAZ, x87 precision).
//
// Encoding in one paragraph: a finite |x| = sig * 2^(exp - 23) (sig the 24-bit significand) is
// placed on the fp8 grid of its binade, clamped below to the fp8 minimum normal exponent so that
// fp8 subnormals share its fixed quantum. Within that binade fp8 codes are consecutive integers,
// so code = base + RNE(|x| / quantum), and a carry out of the mantissa lands on the next
// binade's first code on its own. The grid continued past the largest finite code is exactly the
// "virtual v[N]" of docs/fp8.md §3.5 (480 for e4m3fn, 65536 for e5m2), so "rounded code >= N"
// is precisely the overflow condition.
#include "lmcache/fp8/fp8_codec.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace lmcache {
namespace {

// The shape of one fp8 format, in the terms the encoder and decoder need.
struct Fp8Params {
  int mantissa_bits;         // 3 (e4m3fn) or 2 (e5m2)
  int exponent_bias;         // 7 or 15
  std::uint32_t overflow;    // N: the first code past the finite grid (NaN 0x7F / inf 0x7C)
  std::uint32_t max_finite;  // N - 1: 0x7E (448) / 0x7B (57344)
  bool has_inf;              // e5m2 only
};

constexpr Fp8Params kE4M3FN{3, 7, 0x7F, 0x7E, false};
constexpr Fp8Params kE5M2{2, 15, 0x7C, 0x7B, true};

constexpr std::uint32_t kF32SignMask = 0x80000000u;
constexpr std::uint32_t kF32ExpMask = 0x7F800000u;  // also the bits of +inf
constexpr std::uint32_t kF32MantMask = 0x007FFFFFu;
constexpr std::uint8_t kFp8NanCode = 0x7F;  // the NaN both formats produce on encode

// Throws for an enum value outside the declared ones (a cast from a bad integer): a bad format
// must not silently be treated as one of the two real ones.
const Fp8Params& params_for(Fp8Format format) {
  switch (format) {
    case Fp8Format::kE4M3FN:
      return kE4M3FN;
    case Fp8Format::kE5M2:
      return kE5M2;
  }
  throw std::invalid_argument("invalid fp8 format value " +
                              std::to_string(static_cast<int>(format)));
}

void check_overflow(Fp8Overflow overflow) {
  if (overflow != Fp8Overflow::kNonSaturating && overflow != Fp8Overflow::kSaturating) {
    throw std::invalid_argument("invalid fp8 overflow value " +
                                std::to_string(static_cast<int>(overflow)));
  }
}

std::uint32_t f32_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Exact float16 -> float32 widening on bits (every f16 value, NaN payloads included, fits).
std::uint32_t f16_to_f32_bits(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return sign | kF32ExpMask | (mant << 13);  // inf / NaN (payload kept)
  if (exp != 0) return sign | ((exp - 15 + 127) << 23) | (mant << 13);
  if (mant == 0) return sign;  // +-0
  // Subnormal: mant * 2^-24. Normalise so the leading one becomes the implicit bit.
  int e = -14;  // unbiased exponent of the implicit bit once mant has been shifted into place
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return sign | (static_cast<std::uint32_t>(e + 127) << 23) | ((mant & 0x3FFu) << 13);
}

// Exact bfloat16 -> float32 widening: bf16 is the top half of an f32.
std::uint32_t bf16_to_f32_bits(std::uint16_t b) { return static_cast<std::uint32_t>(b) << 16; }

// The core encoder: float32 bits -> fp8 code, one RNE step, sign always kept.
std::uint8_t encode_f32_bits(std::uint32_t bits, const Fp8Params& p, Fp8Overflow overflow) {
  const std::uint32_t sign = (bits & kF32SignMask) ? 0x80u : 0x00u;
  const std::uint32_t a = bits & ~kF32SignMask;
  const bool saturate = overflow == Fp8Overflow::kSaturating;

  if (a > kF32ExpMask) return static_cast<std::uint8_t>(kFp8NanCode | sign);  // NaN, sign kept
  if (a == kF32ExpMask) {  // +-inf: NaN (e4m3fn) or inf (e5m2), unless saturating
    return static_cast<std::uint8_t>((saturate ? p.max_finite : p.overflow) | sign);
  }

  // |x| = sig * 2^(exp - 23) with sig < 2^24; f32 subnormals have no implicit bit and the
  // exponent of the smallest normal binade.
  const int biased = static_cast<int>(a >> 23);
  const std::uint32_t sig = (biased == 0) ? (a & kF32MantMask) : ((a & kF32MantMask) | 1u << 23);
  const int exp = (biased == 0) ? -126 : biased - 127;

  // fp8 binade: exp, but never below the fp8 minimum normal exponent, so every subnormal uses
  // the quantum 2^(min_exp - mantissa_bits).
  const int min_exp = 1 - p.exponent_bias;
  const int fp8_exp = exp < min_exp ? min_exp : exp;
  // quantum = 2^(fp8_exp - mantissa_bits); |x| / quantum = sig / 2^shift.
  const int shift = 23 - p.mantissa_bits + (fp8_exp - exp);

  std::uint32_t q;  // RNE(|x| / quantum)
  if (shift > 24) {
    q = 0;  // sig < 2^24 <= 2^(shift - 1): strictly below half a quantum
  } else {
    q = sig >> shift;
    const std::uint32_t rem = sig & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // ties to even (q's parity is the code's)
  }

  // Codes of the binade fp8_exp start at (fp8_exp + bias - 1) << mantissa_bits, where q counts
  // from 2^mantissa_bits (the implicit bit); for subnormals the base is 0 and q is the code.
  // Computed in int64: large f32 exponents give bases far beyond 8 bits.
  const std::int64_t base = static_cast<std::int64_t>(fp8_exp + p.exponent_bias - 1)
                            << p.mantissa_bits;
  const std::int64_t code = base + q;

  if (code >= static_cast<std::int64_t>(p.overflow)) {
    return static_cast<std::uint8_t>((saturate ? p.max_finite : p.overflow) | sign);
  }
  return static_cast<std::uint8_t>(static_cast<std::uint32_t>(code) | sign);
}

// fp8 code -> float32 bits. Finite codes (and e5m2 inf) are exact; NaNs follow §4 of the notes:
// quiet bit set, fp8 mantissa at the top of the f32 mantissa, sign kept.
std::uint32_t decode_f32_bits(std::uint8_t code, const Fp8Params& p) {
  const std::uint32_t sign = (code & 0x80u) ? kF32SignMask : 0u;
  const int m_bits = p.mantissa_bits;
  const std::uint32_t exp_field = (code & 0x7Fu) >> m_bits;
  const std::uint32_t mant = code & ((1u << m_bits) - 1u);
  const std::uint32_t exp_all_ones = (1u << (7 - m_bits)) - 1u;

  if (!p.has_inf && (code & 0x7Fu) == 0x7Fu) {
    // e4m3fn NaN: c10 ORs the mantissa 0b111 under an all-ones exponent -> 0x7FF00000.
    return sign | kF32ExpMask | (mant << (23 - m_bits));
  }
  if (p.has_inf && exp_field == exp_all_ones) {
    // e5m2 is the top byte of an fp16: inf stays inf; NaNs (0x7D..0x7F) widen as fp16 NaNs and
    // are quieted on x86 (vcvtph2ps / mulss), so the quiet bit is forced.
    if (mant == 0) return sign | kF32ExpMask;
    return sign | kF32ExpMask | 0x00400000u | (mant << (23 - m_bits));
  }
  if (exp_field == 0) {
    if (mant == 0) return sign;  // +-0
    // Subnormal: mant * 2^(min_exp - m_bits). Normalise so its leading one is the implicit bit.
    int e = 1 - p.exponent_bias;  // exponent of the implicit bit once shifted into place
    std::uint32_t m = mant;
    while ((m & (1u << m_bits)) == 0) {
      m <<= 1;
      --e;
    }
    return sign | (static_cast<std::uint32_t>(e + 127) << 23) |
           ((m & ((1u << m_bits) - 1u)) << (23 - m_bits));
  }
  const int e = static_cast<int>(exp_field) - p.exponent_bias;
  return sign | (static_cast<std::uint32_t>(e + 127) << 23) | (mant << (23 - m_bits));
}

// float32 bits -> float16 bits for values that fit exactly (every decoded fp8 value), as x86
// vcvtps2ph does it: NaNs keep their sign and the top 10 mantissa bits (already quiet here).
std::uint16_t f32_to_f16_bits_exact(std::uint32_t f) {
  const std::uint16_t sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t a = f & ~kF32SignMask;
  if (a >= kF32ExpMask) {  // inf / NaN
    return static_cast<std::uint16_t>(sign | 0x7C00u | ((a & kF32MantMask) >> 13));
  }
  if (a == 0) return sign;
  const int e = static_cast<int>(a >> 23) - 127;
  const std::uint32_t mant = a & kF32MantMask;
  if (e >= -14) {  // f16 normal
    return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e + 15) << 10) |
                                      (mant >> 13));
  }
  // f16 subnormal (only e5m2 subnormals land here): value = ((1 << 23) | mant) * 2^(e - 23),
  // f16 quantum 2^-24, so the f16 mantissa is the significand shifted right by -e - 1.
  return static_cast<std::uint16_t>(sign | (((1u << 23) | mant) >> (-e - 1)));
}

// float32 bits -> bfloat16 bits for values that fit exactly: the top half, except that c10's
// round_to_nearest_even turns every NaN into 0x7FC0 (sign dropped).
std::uint16_t f32_to_bf16_bits_exact(std::uint32_t f) {
  if ((f & ~kF32SignMask) > kF32ExpMask) return 0x7FC0u;
  return static_cast<std::uint16_t>(f >> 16);
}

template <typename T>
T load_unaligned(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store_unaligned(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// count * element size, throwing instead of wrapping around.
std::size_t checked_bytes(std::size_t count, std::size_t elem, const char* what) {
  if (elem != 0 && count > std::numeric_limits<std::size_t>::max() / elem) {
    throw std::invalid_argument(std::string(what) + ": element count " + std::to_string(count) +
                                " overflows the byte size");
  }
  return count * elem;
}

void check_size(const char* which, std::size_t got, std::size_t need) {
  if (got < need) {
    throw std::invalid_argument(std::string(which) + " buffer too small: got " +
                                std::to_string(got) + " bytes, need " + std::to_string(need));
  }
}

bool is_wide_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

}  // namespace

std::string_view fp8_format_name(Fp8Format format) {
  switch (format) {
    case Fp8Format::kE4M3FN:
      return "float8_e4m3fn";
    case Fp8Format::kE5M2:
      return "float8_e5m2";
  }
  return "invalid";
}

std::string_view fp8_overflow_name(Fp8Overflow overflow) {
  switch (overflow) {
    case Fp8Overflow::kNonSaturating:
      return "nonsaturating";
    case Fp8Overflow::kSaturating:
      return "saturating";
  }
  return "invalid";
}

DType fp8_dtype(Fp8Format format) {
  switch (format) {
    case Fp8Format::kE4M3FN:
      return DType::kFloat8E4M3FN;
    case Fp8Format::kE5M2:
      return DType::kFloat8E5M2;
  }
  throw std::invalid_argument("invalid fp8 format value " +
                              std::to_string(static_cast<int>(format)));
}

std::uint8_t fp8_encode_f32(float x, Fp8Format format, Fp8Overflow overflow) {
  check_overflow(overflow);
  return encode_f32_bits(f32_bits(x), params_for(format), overflow);
}

std::uint8_t fp8_encode_f16_bits(std::uint16_t bits, Fp8Format format, Fp8Overflow overflow) {
  check_overflow(overflow);
  return encode_f32_bits(f16_to_f32_bits(bits), params_for(format), overflow);
}

std::uint8_t fp8_encode_bf16_bits(std::uint16_t bits, Fp8Format format, Fp8Overflow overflow) {
  check_overflow(overflow);
  return encode_f32_bits(bf16_to_f32_bits(bits), params_for(format), overflow);
}

std::uint32_t fp8_decode_to_f32_bits(std::uint8_t code, Fp8Format format) {
  return decode_f32_bits(code, params_for(format));
}

// PyTorch converts fp8 -> float -> Half; both steps are exact for finite values, so narrowing
// our f32 result is the same computation.
std::uint16_t fp8_decode_to_f16_bits(std::uint8_t code, Fp8Format format) {
  return f32_to_f16_bits_exact(decode_f32_bits(code, params_for(format)));
}

std::uint16_t fp8_decode_to_bf16_bits(std::uint8_t code, Fp8Format format) {
  return f32_to_bf16_bits_exact(decode_f32_bits(code, params_for(format)));
}

void fp8_check_encode_args(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                           std::span<const std::uint8_t> dst, Fp8Format format,
                           Fp8Overflow overflow) {
  (void)params_for(format);
  check_overflow(overflow);
  if (!is_wide_float(src_dtype)) {
    throw std::invalid_argument("fp8_encode: unsupported source dtype '" +
                                std::string(dtype_name(src_dtype)) +
                                "' (expected float32, float16 or bfloat16)");
  }
  check_size("source", src.size(), checked_bytes(count, element_size(src_dtype), "fp8_encode"));
  check_size("destination", dst.size(), count);
}

void fp8_check_decode_args(std::span<const std::uint8_t> src, std::size_t count,
                           std::span<const std::byte> dst, DType dst_dtype, Fp8Format format) {
  (void)params_for(format);
  if (!is_wide_float(dst_dtype)) {
    throw std::invalid_argument("fp8_decode: unsupported destination dtype '" +
                                std::string(dtype_name(dst_dtype)) +
                                "' (expected float32, float16 or bfloat16)");
  }
  check_size("source", src.size(), count);
  check_size("destination", dst.size(),
             checked_bytes(count, element_size(dst_dtype), "fp8_decode"));
}

void fp8_encode(std::span<const std::byte> src, DType src_dtype, std::size_t count,
                std::span<std::uint8_t> dst, Fp8Format format, Fp8Overflow overflow) {
  // Validate everything before the first write, so a throw leaves dst untouched.
  fp8_check_encode_args(src, src_dtype, count, dst, format, overflow);
  const Fp8Params& p = params_for(format);
  const std::size_t elem = element_size(src_dtype);

  const std::byte* in = src.data();
  for (std::size_t i = 0; i < count; ++i, in += elem) {
    std::uint32_t bits;
    switch (src_dtype) {
      case DType::kFloat16:
        bits = f16_to_f32_bits(load_unaligned<std::uint16_t>(in));
        break;
      case DType::kBFloat16:
        bits = bf16_to_f32_bits(load_unaligned<std::uint16_t>(in));
        break;
      default:  // kFloat32; the others were rejected above
        bits = load_unaligned<std::uint32_t>(in);
        break;
    }
    dst[i] = encode_f32_bits(bits, p, overflow);
  }
}

void fp8_decode(std::span<const std::uint8_t> src, std::size_t count, std::span<std::byte> dst,
                DType dst_dtype, Fp8Format format) {
  fp8_check_decode_args(src, count, dst, dst_dtype, format);
  const Fp8Params& p = params_for(format);
  const std::size_t elem = element_size(dst_dtype);

  std::byte* out = dst.data();
  for (std::size_t i = 0; i < count; ++i, out += elem) {
    const std::uint32_t f = decode_f32_bits(src[i], p);
    switch (dst_dtype) {
      case DType::kFloat16:
        store_unaligned(out, f32_to_f16_bits_exact(f));
        break;
      case DType::kBFloat16:
        store_unaligned(out, f32_to_bf16_bits_exact(f));
        break;
      default:  // kFloat32
        store_unaligned(out, f);
        break;
    }
  }
}

}  // namespace lmcache
