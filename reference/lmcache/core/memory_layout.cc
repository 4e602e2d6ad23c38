#include "lmcache/core/memory_layout.h"

#include <stdexcept>
#include <utility>

namespace lmcache {

MemoryLayoutDesc::MemoryLayoutDesc(std::vector<Shape> shapes, std::vector<DType> dtypes)
    : shapes_(std::move(shapes)), dtypes_(std::move(dtypes)) {
  if (shapes_.size() != dtypes_.size()) {
    throw std::invalid_argument(
        "MemoryLayoutDesc: shapes and dtype must have the same length (got " +
        std::to_string(shapes_.size()) + " shapes and " + std::to_string(dtypes_.size()) +
        " dtypes)");
  }
  for (std::size_t g = 0; g < shapes_.size(); ++g) {
    for (std::size_t d = 0; d < shapes_[g].size(); ++d) {
      if (shapes_[g][d] < 0) {
        throw std::invalid_argument("MemoryLayoutDesc: group " + std::to_string(g) + " dim " +
                                    std::to_string(d) + " is negative (" +
                                    std::to_string(shapes_[g][d]) + ")");
      }
    }
  }
}

MemoryLayoutDesc MemoryLayoutDesc::single(Shape shape, DType dtype) {
  return MemoryLayoutDesc(std::vector<Shape>{std::move(shape)}, std::vector<DType>{dtype});
}

std::size_t MemoryLayoutDesc::group_elements(std::size_t i) const {
  std::size_t n = 1;
  for (std::int64_t d : shapes_.at(i)) n *= static_cast<std::size_t>(d);
  return n;
}

std::size_t MemoryLayoutDesc::group_bytes(std::size_t i) const {
  return group_elements(i) * element_size(dtypes_.at(i));
}

std::size_t MemoryLayoutDesc::group_offset(std::size_t i) const {
  if (i > shapes_.size()) throw std::out_of_range("group index " + std::to_string(i));
  std::size_t off = 0;
  for (std::size_t g = 0; g < i; ++g) off += group_bytes(g);
  return off;
}

std::size_t MemoryLayoutDesc::total_elements() const {
  std::size_t n = 0;
  for (std::size_t g = 0; g < shapes_.size(); ++g) n += group_elements(g);
  return n;
}

std::size_t MemoryLayoutDesc::total_bytes() const { return group_offset(shapes_.size()); }

std::string MemoryLayoutDesc::to_string() const {
  std::string out = "[";
  for (std::size_t g = 0; g < shapes_.size(); ++g) {
    if (g) out += ", ";
    out += "(";
    for (std::size_t d = 0; d < shapes_[g].size(); ++d) {
      if (d) out += ",";
      out += std::to_string(shapes_[g][d]);
    }
    out += "):";
    out += dtype_name(dtypes_[g]);
  }
  return out + "]";
}

}  // namespace lmcache
