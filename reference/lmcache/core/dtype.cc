#include "lmcache/core/dtype.h"

#include <array>
#include <stdexcept>

namespace lmcache {
namespace {

constexpr std::array kAllDtypes = {DType::kUInt8,   DType::kFloat16,      DType::kBFloat16,
                                   DType::kFloat32, DType::kFloat8E4M3FN, DType::kFloat8E5M2};

}  // namespace

std::span<const DType> all_dtypes() { return kAllDtypes; }

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return "uint8";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat8E4M3FN:
      return "float8_e4m3fn";
    case DType::kFloat8E5M2:
      return "float8_e5m2";
  }
  return "invalid";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  for (DType d : kAllDtypes) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

DType dtype_from_name(std::string_view name) {
  if (auto d = parse_dtype(name)) return *d;
  std::string known;
  for (DType d : kAllDtypes) {
    if (!known.empty()) known += ", ";
    known += dtype_name(d);
  }
  throw std::invalid_argument("unknown dtype '" + std::string(name) + "' (known: " + known + ")");
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kFloat32:
      return 4;
  }
  return 0;
}

bool is_fp8(DType dtype) { return dtype == DType::kFloat8E4M3FN || dtype == DType::kFloat8E5M2; }

}  // namespace lmcache
