#include "lmcache/conformance/buffers.h"

#include <algorithm>
#include <array>
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

// splitmix64: a tiny, well-mixed generator; fills are reproducible from a 64-bit seed. Its k-th
// draw is mix(seed + k * kGamma).
struct SplitMix64 {
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  std::uint64_t state;
  static std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint64_t operator()() { return mix(state += kGamma); }
  static double uniform_of(std::uint64_t draw) {
    return static_cast<double>(draw >> 11) * 0x1.0p-53;
  }
};

Fp8Format format_of(DType dtype) {
  return dtype == DType::kFloat8E4M3FN ? Fp8Format::kE4M3FN : Fp8Format::kE5M2;
}

// Every code's value, per fp8 dtype: the comparisons read fp8 elements by the million.
const std::array<float, 256>& fp8_values(DType dtype) {
  static const auto table_for = [](Fp8Format format) {
    std::array<float, 256> values{};
    for (unsigned c = 0; c < 256; ++c) {
      values[c] =
          std::bit_cast<float>(fp8_decode_to_f32_bits(static_cast<std::uint8_t>(c), format));
    }
    return values;
  };
  static const std::array<float, 256> e4m3fn = table_for(Fp8Format::kE4M3FN);
  static const std::array<float, 256> e5m2 = table_for(Fp8Format::kE5M2);
  return format_of(dtype) == Fp8Format::kE4M3FN ? e4m3fn : e5m2;
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
    const float v = static_cast<float>(mant) * 0x1p-24f;  // exact: mant < 2^10
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
    case DType::kFloat8E5M2:
      return fp8_values(dtype)[std::to_integer<std::uint8_t>(*p)];
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
  // Byte k of draw j (1-based) goes to position 8(j - 1) + k: on a little-endian host that is
  // the draw's memory image, copied eight bytes at a time. Whole words first, in a loop with no
  // length test (three times faster than one with it; the kit fills chunk-sized objects by the
  // thousand), then the tail.
  SplitMix64 rng{seed};
  const std::size_t words = bytes.size() / 8;
  auto put = [&bytes](std::size_t at, std::uint64_t r, std::size_t n) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(bytes.data() + at, &r, n);
    } else {
      for (std::size_t k = 0; k < n; ++k) bytes[at + k] = static_cast<std::byte>(r >> (8 * k));
    }
  };
  for (std::size_t w = 0; w < words; ++w) put(8 * w, rng(), 8);
  if (const std::size_t rest = bytes.size() % 8; rest != 0) put(8 * words, rng(), rest);
}

namespace {

// A wide float dtype's element as raw bits, for the typed fill loop below: per element, inline
// arithmetic instead of write_element's and read_element's dispatch.
template <DType D>
struct WideElement;
template <>
struct WideElement<DType::kFloat32> {
  using Bits = std::uint32_t;
  static Bits encode(double v) { return std::bit_cast<Bits>(to_float(v)); }
  static double decode(Bits b) { return std::bit_cast<float>(b); }
};
template <>
struct WideElement<DType::kFloat16> {
  using Bits = std::uint16_t;
  static Bits encode(double v) { return float_to_half_bits(to_float(v)); }
  static double decode(Bits b) { return half_bits_to_float(b); }
};
template <>
struct WideElement<DType::kBFloat16> {
  using Bits = std::uint16_t;
  static Bits encode(double v) { return float_to_bf16_bits(to_float(v)); }
  static double decode(Bits b) { return bf16_bits_to_float(b); }
};

// 2^e as a double, for e within the normal range (exact, like std::ldexp(1.0, e)).
double power_of_two(int e) {
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}

// The bits `v` leaves in a `D` element once kept within [-top, top]: a finite value that
// rounded past top becomes +-top, one that rounded to infinity becomes zero.
template <DType D>
typename WideElement<D>::Bits settle(double v, double top) {
  using E = WideElement<D>;
  const auto bits = E::encode(v);
  const double stored = E::decode(bits);
  if (std::isfinite(stored) && std::fabs(stored) > top) return E::encode(stored < 0 ? -top : top);
  if (!std::isfinite(stored) && std::isfinite(v)) return E::encode(0.0);
  return bits;
}

template <DType D>
void fill_wide_group(std::span<std::byte> bytes, std::size_t n, const ValueSpec& spec, double bound,
                     SplitMix64& rng) {
  using Bits = typename WideElement<D>::Bits;
  const double top = representable_at_most(D, bound);
  const double tiny = min_subnormal(D);
  const double one = 1.0 <= top ? 1.0 : top;
  std::vector<double> special_values = {0.0,   -0.0,          one, -one, tiny,
                                        -tiny, min_normal(D), top, -top};
  if (spec.allow_nan) special_values.push_back(std::numeric_limits<double>::quiet_NaN());
  if (spec.allow_inf) {
    special_values.push_back(std::numeric_limits<double>::infinity());
    special_values.push_back(-std::numeric_limits<double>::infinity());
  }
  std::vector<Bits> specials;
  for (double v : special_values) specials.push_back(settle<D>(v, top));
  const int min_exp = static_cast<int>(std::floor(std::log2(tiny)));
  const int max_exp = static_cast<int>(std::floor(std::log2(top)));
  const auto exponents = static_cast<std::uint64_t>(max_exp - min_exp + 1);
  for (std::size_t i = 0; i < n; ++i) {
    Bits bits;
    if (rng() % 4 == 0) {
      bits = specials[rng() % specials.size()];
    } else {
      const int e = min_exp + static_cast<int>(rng() % exponents);
      double v = (1.0 + SplitMix64::uniform_of(rng())) * power_of_two(e);
      if (rng() & 1) v = -v;
      bits = settle<D>(v, top);
    }
    std::memcpy(bytes.data() + i * sizeof(Bits), &bits, sizeof(Bits));
  }
}

// Arbitrary codes, with the ones the spec excludes replaced by zero.
void fill_fp8_group(DType dtype, std::span<std::byte> bytes, std::size_t n, const ValueSpec& spec,
                    double bound, SplitMix64& rng) {
  std::array<std::byte, 256> code_for{};
  for (unsigned c = 0; c < 256; ++c) {
    const auto code = static_cast<std::byte>(c);
    const double v = read_element(dtype, &code);
    const bool excluded = (std::isnan(v) && !spec.allow_nan) ||
                          (std::isinf(v) && !spec.allow_inf) ||
                          (std::isfinite(v) && std::fabs(v) > bound);
    code_for[c] = excluded ? std::byte{0} : code;
  }
  for (std::size_t i = 0; i < n; ++i) bytes[i] = code_for[static_cast<std::uint8_t>(rng())];
}

}  // namespace

void fill_values(MemoryObj& obj, const ValueSpec& spec, std::uint64_t seed) {
  const MemoryLayoutDesc& layout = obj.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const DType dtype = layout.dtypes()[g];
    const std::span<std::byte> bytes = obj.group_bytes(g);
    const std::size_t n = layout.group_elements(g);
    SplitMix64 rng{seed * 0x100000001B3ull + g + 1};
    // The largest magnitude the spec allows in this dtype.
    const double largest = max_finite(dtype);
    const double bound = spec.max_abs && *spec.max_abs < largest ? *spec.max_abs : largest;
    switch (dtype) {
      case DType::kUInt8:
        fill_bytes(bytes, rng());
        break;
      case DType::kFloat8E4M3FN:
      case DType::kFloat8E5M2:
        fill_fp8_group(dtype, bytes, n, spec, bound, rng);
        break;
      case DType::kFloat32:
        fill_wide_group<DType::kFloat32>(bytes, n, spec, bound, rng);
        break;
      case DType::kFloat16:
        fill_wide_group<DType::kFloat16>(bytes, n, spec, bound, rng);
        break;
      case DType::kBFloat16:
        fill_wide_group<DType::kBFloat16>(bytes, n, spec, bound, rng);
        break;
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

std::string bytes_difference(std::span<const std::byte> got, std::span<const std::byte> want) {
  const std::size_t common = std::min(got.size(), want.size());
  std::size_t at = 0;
  while (at < common && got[at] == want[at]) ++at;
  if (at == common && got.size() == want.size()) return {};
  return "first difference at byte " + std::to_string(at) + " of " + std::to_string(want.size()) +
         (got.size() != want.size() ? " (" + std::to_string(got.size()) + " bytes given)" : "") +
         ": " + hex_preview(got.subspan(at)) + " instead of " + hex_preview(want.subspan(at));
}

}  // namespace lmcache::conformance
