// File: lmcache/core/memory_layout.h
//
// MemoryLayoutDesc describes the groups of a MemoryObj: one shape and one dtype per group.
// Groups sit back to back; group i starts at the sum of the byte sizes of groups 0..i-1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lmcache/core/dtype.h"

namespace lmcache {

using Shape = std::vector<std::int64_t>;

class MemoryLayoutDesc {
 public:
  // An empty layout (no groups) is allowed.
  MemoryLayoutDesc() = default;

  // MemoryLayoutDesc()
  //
  // Throws std::invalid_argument when the two lists differ in length or a dimension is
  // negative (the message names the group and dimension).
  MemoryLayoutDesc(std::vector<Shape> shapes, std::vector<DType> dtypes);

  // single()
  //
  // A layout of one group. (A named factory rather than a constructor: braced arguments such
  // as ({}, {}) must not silently pick a one-group overload.)
  static MemoryLayoutDesc single(Shape shape, DType dtype);

  const std::vector<Shape>& shapes() const { return shapes_; }
  const std::vector<DType>& dtypes() const { return dtypes_; }
  std::size_t num_groups() const { return shapes_.size(); }
  bool empty() const { return shapes_.empty(); }

  // Element count of group i (product of its dims; 1 for a 0-d shape).
  std::size_t group_elements(std::size_t i) const;
  // Byte size of group i.
  std::size_t group_bytes(std::size_t i) const;
  // Byte offset of group i (prefix sum of group_bytes).
  std::size_t group_offset(std::size_t i) const;
  // Sum of group_elements over all groups.
  std::size_t total_elements() const;
  // Sum of group_bytes over all groups.
  std::size_t total_bytes() const;

  // "[(2,3):float32, (64):uint8]"
  std::string to_string() const;

  friend bool operator==(const MemoryLayoutDesc&, const MemoryLayoutDesc&) = default;

 private:
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
};

}  // namespace lmcache
