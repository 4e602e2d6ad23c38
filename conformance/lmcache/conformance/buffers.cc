#include "lmcache/conformance/buffers.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::conformance {

namespace {

// splitmix64: a tiny, well-mixed generator; fills are reproducible from a 64-bit seed.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t operator()() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }
};

Fp8Format format_of(DType dtype) {
  return dtype == DType::kFloat8E4M3FN ? Fp8Format::kE4M3FN : Fp8Format::kE5M2;
}

// The largest value of `dtype` that is <= bound (bound > 0).
double representable_at_most(DType dtype, double bound) {
  std::byte buf[4];
  write_element(dtype, buf, bound);
  double v = read_element(dtype, buf);
  if (v <= bound) return v;
  switch (dtype) {
    case DType::kFloat32:
      return std::nextafter(static_cast<float>(bound), 0.0f);
    case DType::kFloat16: {
      std::uint16_t bits = float_to_half_bits(static_cast<float>(v));
      return half_bits_to_float(static_cast<std::uint16_t>(bits - 1));
    }
    case DType::kBFloat16: {
      std::uint16_t bits = float_to_bf16_bits(static_cast<float>(v));
      return bf16_bits_to_float(static_cast<std::uint16_t>(bits - 1));
    }
    default:
      return std::floor(bound);
  }
}

bool is_non_finite(double v) { return !std::isfinite(v); }

// double -> float with round-to-nearest-even and overflow to +-inf, without the undefined
// behaviour of converting an out-of-range double.
float to_float(double value) {
  if (std::isfinite(value) && std::fabs(value) > FLT_MAX) {
    // Halfway between FLT_MAX and 2^128 and above rounds to infinity.
    const double inf_threshold = std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
    float mag =
        std::fabs(value) >= inf_threshold ? std::numeric_limits<float>::infinity() : FLT_MAX;
    return value < 0 ? -mag : mag;
  }
  return static_cast<float>(value);
}

}  // namespace

std::uint16_t float_to_half_bits(float value) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) {  // inf or NaN (NaN stays quiet NaN)
    return static_cast<std::uint16_t>(
        sign | 0x7C00u | (absx > 0x7F800000u ? (0x200u | ((absx >> 13) & 0x3FFu)) : 0u));
  }
  if (absx >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (absx < 0x38800000u) {  // below 2^-14: a half subnormal (or zero)
    float v = std::bit_cast<float>(absx);
    auto m = static_cast<std::uint32_t>(std::nearbyint(v * 16777216.0f));  // units of 2^-24
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t odd = (absx >> 13) & 1u;
  absx += 0xFFFu + odd;  // round to nearest even at bit 13
  absx -= 112u << 23;    // rebias the exponent from 127 to 15
  return static_cast<std::uint16_t>(sign | (absx >> 13));
}

float half_bits_to_float(std::uint16_t bits) {
  std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  std::uint32_t exp = (bits >> 10) & 0x1Fu;
  std::uint32_t mant = bits & 0x3FFu;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16_bits(float value) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>(x >> 16);
}

float bf16_bits_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

bool is_float_dtype(DType dtype) { return dtype != DType::kUInt8; }

double read_element(DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::kUInt8:
      return static_cast<double>(std::to_integer<std::uint8_t>(*p));
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kFloat16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return half_bits_to_float(b);
    }
    case DType::kBFloat16: {
      std::uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_bits_to_float(b);
    }
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2: {
      std::uint32_t bits =
          fp8_decode_to_f32_bits(std::to_integer<std::uint8_t>(*p), format_of(dtype));
      return std::bit_cast<float>(bits);
    }
  }
  return 0.0;
}

void write_element(DType dtype, std::byte* p, double value) {
  switch (dtype) {
    case DType::kUInt8: {
      double m = std::fmod(std::isfinite(value) ? std::floor(value) : 0.0, 256.0);
      if (m < 0) m += 256.0;
      *p = static_cast<std::byte>(static_cast<unsigned>(m));
      return;
    }
    case DType::kFloat32: {
      float f = to_float(value);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::kFloat16: {
      std::uint16_t b = float_to_half_bits(to_float(value));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kBFloat16: {
      std::uint16_t b = float_to_bf16_bits(to_float(value));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      *p = static_cast<std::byte>(
          fp8_encode_f32(to_float(value), format_of(dtype), Fp8Overflow::kNonSaturating));
      return;
  }
}

double max_finite(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 255.0;
    case DType::kFloat32:
      return FLT_MAX;
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return bf16_bits_to_float(0x7F7F);
    case DType::kFloat8E4M3FN:
      return 448.0;
    case DType::kFloat8E5M2:
      return 57344.0;
  }
  return 0.0;
}

double min_subnormal(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 1.0;
    case DType::kFloat32:
      return std::ldexp(1.0, -149);
    case DType::kFloat16:
      return std::ldexp(1.0, -24);
    case DType::kBFloat16:
      return std::ldexp(1.0, -133);
    case DType::kFloat8E4M3FN:
      return std::ldexp(1.0, -9);
    case DType::kFloat8E5M2:
      return std::ldexp(1.0, -16);
  }
  return 1.0;
}

double min_normal(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 1.0;
    case DType::kFloat32:
    case DType::kBFloat16:
      return std::ldexp(1.0, -126);
    case DType::kFloat16:
    case DType::kFloat8E5M2:
      return std::ldexp(1.0, -14);
    case DType::kFloat8E4M3FN:
      return std::ldexp(1.0, -6);
  }
  return 1.0;
}

bool same_bytes(const void* a, const void* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

void fill_bytes(std::span<std::byte> bytes, std::uint64_t seed) {
  SplitMix64 rng{seed};
  std::size_t i = 0;
  while (i < bytes.size()) {
    std::uint64_t r = rng();
    for (int k = 0; k < 8 && i < bytes.size(); ++k, ++i) {
      bytes[i] = static_cast<std::byte>(r >> (8 * k));
    }
  }
}

void fill_values(MemoryObj& obj, const ValueSpec& spec, std::uint64_t seed) {
  const MemoryLayoutDesc& layout = obj.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    DType dtype = layout.dtypes()[g];
    std::span<std::byte> bytes = obj.group_bytes(g);
    std::size_t n = layout.group_elements(g);
    std::size_t es = element_size(dtype);
    SplitMix64 rng{seed * 0x100000001B3ull + g + 1};
    if (dtype == DType::kUInt8) {
      fill_bytes(bytes, rng());
      continue;
    }
    double bound = max_finite(dtype);
    if (spec.max_abs && *spec.max_abs < bound) bound = *spec.max_abs;
    if (dtype == DType::kFloat8E4M3FN || dtype == DType::kFloat8E5M2) {
      // Arbitrary codes, with the ones the spec excludes replaced by zero.
      for (std::size_t i = 0; i < n; ++i) {
        auto code = static_cast<std::byte>(rng());
        double v = read_element(dtype, &code);
        if ((std::isnan(v) && !spec.allow_nan) || (std::isinf(v) && !spec.allow_inf) ||
            (std::isfinite(v) && std::fabs(v) > bound)) {
          code = std::byte{0};
        }
        bytes[i] = code;
      }
      continue;
    }
    const double top = representable_at_most(dtype, bound);
    const double tiny = min_subnormal(dtype);
    std::vector<double> specials = {0.0,  -0.0,  1.0 <= top ? 1.0 : top, -(1.0 <= top ? 1.0 : top),
                                    tiny, -tiny, min_normal(dtype),      top,
                                    -top};
    if (spec.allow_nan) specials.push_back(std::numeric_limits<double>::quiet_NaN());
    if (spec.allow_inf) {
      specials.push_back(std::numeric_limits<double>::infinity());
      specials.push_back(-std::numeric_limits<double>::infinity());
    }
    const int min_exp = static_cast<int>(std::floor(std::log2(tiny)));
    const int max_exp = static_cast<int>(std::floor(std::log2(top)));
    for (std::size_t i = 0; i < n; ++i) {
      std::byte* p = bytes.data() + i * es;
      double v;
      if (rng() % 4 == 0) {
        v = specials[rng() % specials.size()];
      } else {
        int e =
            min_exp + static_cast<int>(rng() % static_cast<std::uint64_t>(max_exp - min_exp + 1));
        v = std::ldexp(1.0 + rng.uniform(), e);
        if (rng() & 1) v = -v;
      }
      write_element(dtype, p, v);
      double stored = read_element(dtype, p);
      if (!is_non_finite(stored) && std::fabs(stored) > top) {
        write_element(dtype, p, stored < 0 ? -top : top);
      } else if (is_non_finite(stored) && !is_non_finite(v)) {
        write_element(dtype, p, 0.0);  // rounding overflowed; keep the case finite
      }
    }
  }
}

GuardedObject::GuardedObject(MemoryLayoutDesc layout, std::size_t physical_size,
                             std::uint64_t fill_seed, std::size_t guard_bytes)
    : guard_(std::max(guard_bytes, kGuardBytes)), physical_size_(physical_size) {
  if (physical_size < layout.total_bytes()) {
    throw std::invalid_argument("GuardedObject: physical size " + std::to_string(physical_size) +
                                " is smaller than the layout's " +
                                std::to_string(layout.total_bytes()) + " bytes");
  }
  const std::size_t total = guard_ + physical_size + guard_;
  storage_ = std::shared_ptr<std::byte[]>(new std::byte[total]);
  std::span<std::byte> all(storage_.get(), total);
  fill_bytes(all, fill_seed ^ 0xC0FFEEull);
  guard_before_.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(guard_));
  guard_after_.assign(all.end() - static_cast<std::ptrdiff_t>(guard_), all.end());
  obj_ = std::make_shared<MemoryObj>(std::shared_ptr<void>(storage_), storage_.get() + guard_,
                                     physical_size, std::move(layout));
}

GuardedObject GuardedObject::Bytes(std::size_t bytes, std::uint64_t fill_seed,
                                   std::size_t guard_bytes) {
  return GuardedObject(byte_layout(bytes), bytes, fill_seed, guard_bytes);
}

std::span<const std::byte> GuardedObject::payload() const {
  return {storage_.get() + guard_, physical_size_};
}

std::vector<std::byte> GuardedObject::snapshot() const {
  auto p = payload();
  return {p.begin(), p.end()};
}

std::string GuardedObject::check_guards() const {
  const std::byte* before = storage_.get();
  const std::byte* after = storage_.get() + guard_ + physical_size_;
  for (std::size_t i = guard_; i-- > 0;) {
    if (before[i] != guard_before_[i]) {
      return "a byte " + std::to_string(guard_ - i) +
             " before the start of the buffer was written (buffer of " +
             std::to_string(physical_size_) + " bytes)";
    }
  }
  std::size_t count = 0;
  std::size_t first = 0;
  for (std::size_t i = 0; i < guard_; ++i) {
    if (after[i] != guard_after_[i]) {
      if (count++ == 0) first = i;
    }
  }
  if (count > 0) {
    return std::to_string(count) + " byte(s) past the end of the " +
           std::to_string(physical_size_) + "-byte buffer were written, the first at end+" +
           std::to_string(first);
  }
  return {};
}

std::string GuardedObject::check_payload_unchanged(const std::vector<std::byte>& before,
                                                   std::size_t from, std::size_t to) const {
  auto now = payload();
  to = std::min({to, now.size(), before.size()});
  for (std::size_t i = from; i < to; ++i) {
    if (now[i] != before[i]) {
      return "byte " + std::to_string(i) + " changed (" +
             hex_preview(std::span<const std::byte>(before.data() + i, 1)) + " -> " +
             hex_preview(now.subspan(i, 1)) + ")";
    }
  }
  return {};
}

std::string describe_element(const MemoryLayoutDesc& layout, std::size_t group, std::size_t index,
                             double expected, double got) {
  std::ostringstream os;
  os << std::setprecision(9) << "group " << group << " element " << index << " ("
     << dtype_name(layout.dtypes()[group]) << "): expected " << expected << ", got " << got;
  return os.str();
}

std::string hex_preview(std::span<const std::byte> bytes, std::size_t max_bytes) {
  std::ostringstream os;
  os << std::hex << std::setfill('0');
  for (std::size_t i = 0; i < bytes.size() && i < max_bytes; ++i) {
    os << (i ? " " : "") << std::setw(2) << std::to_integer<unsigned>(bytes[i]);
  }
  if (bytes.size() > max_bytes) os << " ...";
  return os.str();
}

}  // namespace lmcache::conformance
