#include "lmcache/conformance/plain_objects.h"

#include <cstdint>

#include "lmcache/core/dtype.h"

namespace lmcache::conformance {

MemoryObjPtr make_object(const MemoryLayoutDesc& layout, std::size_t min_physical) {
  return MemoryObj::allocate(layout, min_physical);
}

MemoryLayoutDesc byte_layout(std::size_t bytes) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8);
}

}  // namespace lmcache::conformance
