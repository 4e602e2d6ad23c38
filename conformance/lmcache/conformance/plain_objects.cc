#include "lmcache/conformance/plain_objects.h"

#include <cstdint>

#include "lmcache/core/dtype.h"

namespace lmcache::conformance {

MemoryObjPtr make_object(const MemoryLayoutDesc& layout, std::size_t min_physical) {
  return MemoryObj::allocate(layout, min_physical);
}

std::vector<MemoryObjPtr> zeroed_objects(const MemoryLayoutDesc& layout, std::size_t n) {
  std::vector<MemoryObjPtr> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(make_object(layout));
  return out;
}

MemoryLayoutDesc byte_layout(std::size_t bytes) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8);
}

}  // namespace lmcache::conformance
