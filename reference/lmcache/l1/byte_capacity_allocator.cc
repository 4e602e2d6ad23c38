#include "lmcache/l1/byte_capacity_allocator.h"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace lmcache {

ByteCapacityAllocator::ByteCapacityAllocator(std::size_t capacity_bytes, BufferFactory factory)
    : capacity_bytes_(capacity_bytes), factory_(std::move(factory)) {}

std::optional<std::vector<MemoryObjPtr>> ByteCapacityAllocator::allocate_batch(
    const MemoryLayoutDesc& layout, std::size_t count, BufferFill fill) {
  const std::size_t each = charged_bytes(layout);
  std::size_t total = 0;
  {
    std::lock_guard lock(mu_);
    const std::size_t free_bytes = capacity_bytes_ - used_bytes_;
    // Division instead of count * each, which could overflow.
    if (each != 0 && count > free_bytes / each) return std::nullopt;
    total = count * each;
    used_bytes_ += total;
  }
  // The budget is held while the buffers are made, outside the lock: concurrent callers cannot
  // overcommit, and a slow allocation does not block release() or used_bytes().
  std::vector<MemoryObjPtr> objs;
  try {
    objs.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      MemoryObjPtr obj = factory_ ? factory_(layout) : MemoryObj::allocate(layout, 0, fill);
      if (!obj) throw std::bad_alloc();
      objs.push_back(std::move(obj));
    }
  } catch (const std::bad_alloc&) {
    objs.clear();
    release(total);
    return std::nullopt;
  } catch (...) {
    objs.clear();
    release(total);
    throw;
  }
  return objs;
}

void ByteCapacityAllocator::release(std::size_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes > used_bytes_) {
    throw std::logic_error("ByteCapacityAllocator::release: releasing " + std::to_string(bytes) +
                           " bytes but only " + std::to_string(used_bytes_) + " are in use");
  }
  used_bytes_ -= bytes;
}

std::size_t ByteCapacityAllocator::used_bytes() const {
  std::lock_guard lock(mu_);
  return used_bytes_;
}

}  // namespace lmcache
