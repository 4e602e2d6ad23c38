#include "lmcache/serde/fp8_serde.h"

#include "lmcache/fp8/fp8_kernels.h"  // the fastest backend; byte-identical to fp8_codec

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/serde/async_serde_processor.h"

namespace lmcache {

namespace {

constexpr const char* kSupportedDtypes = "float32, float16, bfloat16";

bool is_supported_float(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

[[noreturn]] void fail(const char* who, const std::string& message) {
  throw std::invalid_argument(std::string(who) + ": " + message);
}

// Every group of the tensor side must be a float type the codec converts.
void check_tensor_side(const char* who, const char* role, const MemoryLayoutDesc& layout) {
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    if (!is_supported_float(layout.dtypes()[g])) {
      fail(who, "unsupported dtype '" + std::string(dtype_name(layout.dtypes()[g])) + "' in " +
                    role + " group " + std::to_string(g) + " (supported: " + kSupportedDtypes +
                    ")");
    }
  }
}

// The byte side must be a flat byte buffer (uint8 groups, any shapes), or fp8 groups of this
// serde's format that match the tensor side group for group.
void check_byte_side(const char* who, const char* role, const MemoryLayoutDesc& bytes,
                     const MemoryLayoutDesc& tensor, Fp8Format format) {
  if (bytes.empty()) return;
  const DType code_dtype = fp8_dtype(format);
  const DType first = bytes.dtypes()[0];
  for (std::size_t g = 0; g < bytes.num_groups(); ++g) {
    DType d = bytes.dtypes()[g];
    if (d != first || (d != DType::kUInt8 && d != code_dtype)) {
      fail(who, std::string("group layout mismatch: ") + role + " group " + std::to_string(g) +
                    " is " + std::string(dtype_name(d)) +
                    "; expected a byte buffer (all uint8 or all " +
                    std::string(fp8_format_name(format)) + " groups), layout " + bytes.to_string());
    }
  }
  if (first == DType::kUInt8) return;
  if (bytes.num_groups() != tensor.num_groups()) {
    fail(who, std::string("group layout mismatch: ") + role + " has " +
                  std::to_string(bytes.num_groups()) + " fp8 groups but the tensor side has " +
                  std::to_string(tensor.num_groups()) + " (" + bytes.to_string() + " vs " +
                  tensor.to_string() + ")");
  }
  for (std::size_t g = 0; g < bytes.num_groups(); ++g) {
    if (bytes.group_elements(g) != tensor.group_elements(g)) {
      fail(who, std::string("group layout mismatch: ") + role + " group " + std::to_string(g) +
                    " has " + std::to_string(bytes.group_elements(g)) +
                    " elements but the tensor side has " +
                    std::to_string(tensor.group_elements(g)));
    }
  }
}

// options.simd_target as a Highway target bit (0 = the best one).
std::int64_t resolve_simd_target(const Fp8SerdeOptions& options) {
  if (options.simd_target.empty()) return 0;
  if (options.kernel == Fp8SerdeKernel::kScalar || options.kernel == Fp8SerdeKernel::kCuda) {
    fail("fp8 serde", "'simd_target' applies to kernel simd or auto only (kernel is " +
                          std::string(fp8_serde_kernel_name(options.kernel)) + ")");
  }
  std::string available;
  for (std::int64_t t : fp8::fp8_simd_targets()) {
    const std::string name = fp8::fp8_simd_target_name(t);
    if (name == options.simd_target) return t;
    available += (available.empty() ? "" : ", ") + name;
  }
  fail("fp8 serde", "'simd_target' '" + options.simd_target +
                        "' is not available here (available: " + available + ")");
}

// How one serialize / deserialize calls the kernels: on the caller's thread (the processor's
// pool provides the parallelism), on the configured backend and target.
fp8::KernelOptions kernel_options(const Fp8SerdeOptions& options, std::int64_t target) {
  fp8::KernelOptions k;
  k.threads = 1;
  switch (options.kernel) {
    case Fp8SerdeKernel::kAuto:
      k.backend = fp8::Fp8Backend::kAuto;
      break;
    case Fp8SerdeKernel::kScalar:
      k.backend = fp8::Fp8Backend::kScalar;
      break;
    case Fp8SerdeKernel::kSimd:
      k.backend = fp8::Fp8Backend::kSimd;
      break;
    case Fp8SerdeKernel::kCuda:
      k.backend = fp8::Fp8Backend::kCuda;
      break;
  }
  k.simd_target = target;
  return k;
}

}  // namespace

std::string_view fp8_serde_kernel_name(Fp8SerdeKernel kernel) {
  switch (kernel) {
    case Fp8SerdeKernel::kAuto:
      return "auto";
    case Fp8SerdeKernel::kScalar:
      return "scalar";
    case Fp8SerdeKernel::kSimd:
      return "simd";
    case Fp8SerdeKernel::kCuda:
      return "cuda";
  }
  return "?";
}

Fp8Serializer::Fp8Serializer(Fp8SerdeOptions options)
    : options_(std::move(options)), simd_target_bit_(resolve_simd_target(options_)) {}

Fp8Deserializer::Fp8Deserializer(Fp8SerdeOptions options)
    : options_(std::move(options)), simd_target_bit_(resolve_simd_target(options_)) {}

std::size_t Fp8Serializer::serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  static constexpr const char* kWho = "fp8 serializer";
  const MemoryLayoutDesc& layout = src.layout();
  check_tensor_side(kWho, "source", layout);
  check_byte_side(kWho, "destination", dst.layout(), layout, options_.format);
  const std::size_t need = layout.total_elements();
  // The logical size, as the deserializer checks its source: a narrowed destination offers
  // only its size() bytes.
  if (dst.size() < need) {
    fail(kWho, "destination buffer too small: got " + std::to_string(dst.size()) + " bytes, need " +
                   std::to_string(need));
  }
  auto* out = reinterpret_cast<std::uint8_t*>(dst.data());
  std::size_t offset = 0;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const std::size_t n = layout.group_elements(g);
    if (n == 0) continue;
    fp8::fp8_encode_fast(src.group_bytes(g), layout.dtypes()[g], n,
                         std::span<std::uint8_t>(out + offset, n), options_.format,
                         options_.overflow, kernel_options(options_, simd_target_bit_));
    offset += n;
  }
  return need;
}

std::size_t Fp8Serializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  // int(1.5 * n) without going through floating point.
  const std::size_t n = layout.total_elements();
  return n + n / 2;
}

void Fp8Deserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  static constexpr const char* kWho = "fp8 deserializer";
  const MemoryLayoutDesc& layout = dst.layout();
  check_tensor_side(kWho, "destination", layout);
  check_byte_side(kWho, "source", src.layout(), layout, options_.format);
  const std::size_t need = layout.total_elements();
  const std::size_t have = src.size();  // logical: honours a narrowed source
  if (have < need) {
    fail(kWho, "source buffer too small: got " + std::to_string(have) + " bytes, need " +
                   std::to_string(need));
  }
  const auto* in = reinterpret_cast<const std::uint8_t*>(src.data());
  std::size_t offset = 0;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    const std::size_t n = layout.group_elements(g);
    if (n == 0) continue;
    fp8::fp8_decode_fast(std::span<const std::uint8_t>(in + offset, n), n, dst.group_bytes(g),
                         layout.dtypes()[g], options_.format,
                         kernel_options(options_, simd_target_bit_));
    offset += n;
  }
}

Fp8SerdeConfig Fp8SerdeConfig::from_json(const Json& kwargs) {
  ConfigReader reader(kwargs, "fp8 serde config");
  Fp8SerdeConfig out;

  const std::string e4m3(fp8_format_name(Fp8Format::kE4M3FN));
  const std::string e5m2(fp8_format_name(Fp8Format::kE5M2));
  const std::string dtype = reader.get_string("fp8_dtype", e4m3);
  if (dtype == e4m3) {
    out.options.format = Fp8Format::kE4M3FN;
  } else if (dtype == e5m2) {
    out.options.format = Fp8Format::kE5M2;
  } else {
    reader.error("'fp8_dtype' must be one of " + e4m3 + ", " + e5m2 + ", got '" + dtype + "'");
  }

  out.max_workers = static_cast<std::size_t>(
      reader.get_int("max_workers", 1, 1, static_cast<std::int64_t>(kMaxWorkers)));

  const std::string nonsat(fp8_overflow_name(Fp8Overflow::kNonSaturating));
  const std::string sat(fp8_overflow_name(Fp8Overflow::kSaturating));
  const std::string overflow = reader.get_string("overflow", nonsat);
  if (overflow == nonsat) {
    out.options.overflow = Fp8Overflow::kNonSaturating;
  } else if (overflow == sat) {
    out.options.overflow = Fp8Overflow::kSaturating;
  } else {
    reader.error("'overflow' must be one of " + nonsat + ", " + sat + ", got '" + overflow + "'");
  }

  const std::string kernel = reader.get_string("kernel", "auto");
  bool known_kernel = false;
  for (Fp8SerdeKernel k : {Fp8SerdeKernel::kAuto, Fp8SerdeKernel::kScalar, Fp8SerdeKernel::kSimd,
                           Fp8SerdeKernel::kCuda}) {
    if (kernel == fp8_serde_kernel_name(k)) {
      out.options.kernel = k;
      known_kernel = true;
    }
  }
  if (!known_kernel) {
    reader.error("'kernel' must be one of auto, scalar, simd, cuda, got '" + kernel + "'");
  }
  out.options.simd_target = reader.get_string("simd_target", "");
  resolve_simd_target(out.options);  // a target this CPU lacks is a config error

  reader.finish();
  return out;
}

SerdeProcessorPtr make_fp8_serde_processor(const Json& kwargs) {
  const Fp8SerdeConfig config = Fp8SerdeConfig::from_json(kwargs);
  return std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(config.options),
                                               std::make_shared<Fp8Deserializer>(config.options),
                                               config.max_workers);
}

}  // namespace lmcache
