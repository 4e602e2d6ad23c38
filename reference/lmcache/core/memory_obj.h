// File: lmcache/core/memory_obj.h
//
// MemoryObj is a contiguous host byte buffer plus its MemoryLayoutDesc. Objects are shared
// through MemoryObjPtr; the buffer lives as long as any reference does. Typed at::Tensor views
// live in tensor_view.h so that this header stays free of libtorch.
//
// Thread safety: the bytes are not synchronised; callers hand objects between threads through
// the L1 locks and the async components' completion queues. set_used_size() and size() are
// atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>

#include "lmcache/core/host_buffer_pool.h"
#include "lmcache/core/memory_layout.h"

namespace lmcache {

class MemoryObj {
 public:
  // MemoryObj()
  //
  // Wraps `physical_size` bytes at `data`, kept alive by `owner`. Throws std::invalid_argument
  // when the layout needs more than `physical_size` bytes. Prefer the factories below.
  MemoryObj(std::shared_ptr<void> owner, std::byte* data, std::size_t physical_size,
            MemoryLayoutDesc layout);

  MemoryObj(const MemoryObj&) = delete;
  MemoryObj& operator=(const MemoryObj&) = delete;

  // allocate()
  //
  // A page-aligned buffer sized for `layout` (at least `min_physical_size`) from
  // allocate_host_buffer(), owned by the object itself; zero-filled unless `fill` says otherwise.
  // Throws std::bad_alloc when the system is out of memory.
  static std::shared_ptr<MemoryObj> allocate(MemoryLayoutDesc layout,
                                             std::size_t min_physical_size = 0,
                                             BufferFill fill = BufferFill::kZeroed);

  const MemoryLayoutDesc& layout() const { return layout_; }

  // size()
  //
  // The logical size in bytes: layout().total_bytes(), or the value set by set_used_size().
  std::size_t size() const { return used_size_.load(std::memory_order_acquire); }

  // physical_size()
  //
  // The bytes allocated; may exceed the layout (alignment padding), never serialized.
  std::size_t physical_size() const { return physical_size_; }

  // set_used_size()
  //
  // Narrows (or widens back) the logical size to n. Throws std::invalid_argument unless
  // 0 <= n <= physical_size().
  void set_used_size(std::size_t n);

  // bytes()
  //
  // The logical bytes: the first size() bytes of the buffer.
  std::span<std::byte> bytes() { return {data_, size()}; }
  std::span<const std::byte> bytes() const { return {data_, size()}; }

  // physical_bytes()
  //
  // Every allocated byte, padding included.
  std::span<std::byte> physical_bytes() { return {data_, physical_size_}; }
  std::span<const std::byte> physical_bytes() const { return {data_, physical_size_}; }

  // group_bytes()
  //
  // The bytes of group i, at layout().group_offset(i). Throws std::out_of_range for a bad i.
  std::span<std::byte> group_bytes(std::size_t i);
  std::span<const std::byte> group_bytes(std::size_t i) const;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }

 private:
  std::shared_ptr<void> owner_;
  std::byte* data_;
  std::size_t physical_size_;
  MemoryLayoutDesc layout_;
  std::atomic<std::size_t> used_size_;
};

using MemoryObjPtr = std::shared_ptr<MemoryObj>;

// kHostBufferAlignment: host buffers are page aligned (HostBufferPool serves whole pages).
inline constexpr std::size_t kHostBufferAlignment = 4096;

// allocate_host_buffer()
//
// `bytes` bytes aligned to kHostBufferAlignment from HostBufferPool::process_default(),
// zero-filled unless `fill` is kUninitialized, and given back to that pool when the last
// reference drops. Throws std::bad_alloc on failure.
std::shared_ptr<std::byte> allocate_host_buffer(std::size_t bytes,
                                                BufferFill fill = BufferFill::kZeroed);

}  // namespace lmcache
