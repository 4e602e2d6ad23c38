#include "lmcache/core/memory_obj.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace lmcache {

std::shared_ptr<std::byte> allocate_host_buffer(std::size_t bytes, BufferFill fill) {
  return HostBufferPool::process_default().acquire(bytes, fill);
}

MemoryObj::MemoryObj(std::shared_ptr<void> owner, std::byte* data, std::size_t physical_size,
                     MemoryLayoutDesc layout)
    : owner_(std::move(owner)),
      data_(data),
      physical_size_(physical_size),
      layout_(std::move(layout)),
      used_size_(layout_.total_bytes()) {
  if (used_size_.load() > physical_size_) {
    throw std::invalid_argument("MemoryObj: layout " + layout_.to_string() + " needs " +
                                std::to_string(used_size_.load()) + " bytes but the buffer has " +
                                std::to_string(physical_size_));
  }
}

std::shared_ptr<MemoryObj> MemoryObj::allocate(MemoryLayoutDesc layout,
                                               std::size_t min_physical_size, BufferFill fill) {
  std::size_t bytes = std::max(layout.total_bytes(), min_physical_size);
  auto buffer = allocate_host_buffer(bytes, fill);
  std::byte* data = buffer.get();
  return std::make_shared<MemoryObj>(std::move(buffer), data, bytes, std::move(layout));
}

void MemoryObj::set_used_size(std::size_t n) {
  if (n > physical_size_) {
    throw std::invalid_argument("set_used_size: n=" + std::to_string(n) + " out of range [0, " +
                                std::to_string(physical_size_) + "]");
  }
  used_size_.store(n, std::memory_order_release);
}

std::span<std::byte> MemoryObj::group_bytes(std::size_t i) {
  if (i >= layout_.num_groups()) {
    throw std::out_of_range("MemoryObj: group " + std::to_string(i) + " out of range (" +
                            std::to_string(layout_.num_groups()) + " groups)");
  }
  return {data_ + layout_.group_offset(i), layout_.group_bytes(i)};
}

std::span<const std::byte> MemoryObj::group_bytes(std::size_t i) const {
  return const_cast<MemoryObj*>(this)->group_bytes(i);
}

}  // namespace lmcache
