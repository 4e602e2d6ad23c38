// Test-only: byte objects with a recognizable fill, shared by the serde tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmcache/core/memory_obj.h"

namespace lmcache::core_internal {

// A 1-D uint8 object of `n` bytes, byte i = seed + 7 i (mod 256).
inline MemoryObjPtr bytes_of(std::size_t n, std::uint8_t seed = 1) {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  for (std::size_t i = 0; i < n; ++i) obj->data()[i] = static_cast<std::byte>(seed + i * 7);
  return obj;
}

}  // namespace lmcache::core_internal
