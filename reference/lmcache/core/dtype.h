// File: lmcache/core/dtype.h
//
// The element types a MemoryObj group may hold, named exactly as PyTorch names them.
// Debian's libtorch 1.13 has no float8 dtypes, so this enum, not c10::ScalarType, is the
// project's vocabulary; typed tensor views of fp8 groups are uint8 (see tensor_view.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lmcache {

enum class DType : std::uint8_t {
  kUInt8,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat8E4M3FN,
  kFloat8E5M2,
};

// Every dtype, in declaration order.
std::span<const DType> all_dtypes();

// dtype_name()
//
// The PyTorch name without the "torch." prefix: "uint8", "float16", "bfloat16", "float32",
// "float8_e4m3fn", "float8_e5m2".
std::string_view dtype_name(DType dtype);

// parse_dtype()
//
// Inverse of dtype_name(); also accepts a "torch." prefix. Returns nullopt for any other name.
std::optional<DType> parse_dtype(std::string_view name);

// dtype_from_name()
//
// Like parse_dtype() but throws std::invalid_argument naming the value and the known names.
DType dtype_from_name(std::string_view name);

// element_size()
//
// Bytes per element.
std::size_t element_size(DType dtype);

// is_fp8()
bool is_fp8(DType dtype);

}  // namespace lmcache
