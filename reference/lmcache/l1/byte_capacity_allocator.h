// File: lmcache/l1/byte_capacity_allocator.h
//
// ByteCapacityAllocator hands out host MemoryObjs against a fixed byte budget set at
// construction. It is the L1Manager's allocator, kept separate so that its accounting can be
// tested on its own.
//
// Accounting rules:
//   - An object is charged its layout bytes, MemoryLayoutDesc::total_bytes(), not its
//     page-rounded physical size, so callers can reason about usage exactly (eight 8 MiB objects
//     fill a 64 MiB budget). A zero-byte layout is charged 0 and always fits.
//   - Bytes are charged when a batch is allocated and credited back when the owner calls
//     release(). Accounting never waits for a shared_ptr to die: a caller may hold a
//     MemoryObjPtr a little longer than the owner's bookkeeping does, so the real memory in use
//     may briefly exceed the budget, but used_bytes() is deterministic.
//   - A batch is all or nothing: either every object is allocated and charged, or none is and
//     used_bytes() is unchanged.
//
// Thread safety: every member function may be called concurrently.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"

namespace lmcache {

class ByteCapacityAllocator {
 public:
  // BufferFactory
  //
  // Makes one object for a layout; throws std::bad_alloc when the system has no memory. The
  // default is MemoryObj::allocate (page-aligned host memory from the process HostBufferPool,
  // zero-filled unless allocate_batch() is told otherwise). Tests inject factories that fail on
  // purpose; an injected factory decides the contents itself.
  using BufferFactory = std::function<MemoryObjPtr(const MemoryLayoutDesc&)>;

  // ByteCapacityAllocator()
  //
  // A budget of `capacity_bytes`, nothing used. A null `factory` means the default one.
  explicit ByteCapacityAllocator(std::size_t capacity_bytes, BufferFactory factory = nullptr);

  ByteCapacityAllocator(const ByteCapacityAllocator&) = delete;
  ByteCapacityAllocator& operator=(const ByteCapacityAllocator&) = delete;

  // charged_bytes()
  //
  // What one object of `layout` costs against the budget: layout.total_bytes().
  static std::size_t charged_bytes(const MemoryLayoutDesc& layout) { return layout.total_bytes(); }

  // allocate_batch()
  //
  // `count` distinct objects of `layout`, all or nothing. Returns nullopt, with used_bytes()
  // unchanged and no object kept, when count * charged_bytes(layout) does not fit in the free
  // budget or when the factory fails (std::bad_alloc) for any of them. A count of 0 gives an
  // empty vector. On success used_bytes() grows by count * charged_bytes(layout). `fill` is
  // passed to the default factory (kUninitialized: the caller overwrites every byte it reads).
  std::optional<std::vector<MemoryObjPtr>> allocate_batch(const MemoryLayoutDesc& layout,
                                                          std::size_t count,
                                                          BufferFill fill = BufferFill::kZeroed);

  // release()
  //
  // Credits `bytes` back (the sum of charged_bytes() of the objects the owner drops). Throws
  // std::logic_error when `bytes` exceeds used_bytes(): that is an accounting bug in the owner,
  // and the counter is left as it was.
  void release(std::size_t bytes);

  // used_bytes()
  //
  // Bytes charged and not yet released.
  std::size_t used_bytes() const;

  // capacity_bytes()
  //
  // The budget given at construction.
  std::size_t capacity_bytes() const { return capacity_bytes_; }

 private:
  const std::size_t capacity_bytes_;
  const BufferFactory factory_;  // null: MemoryObj::allocate
  mutable std::mutex mu_;
  std::size_t used_bytes_ = 0;  // Guarded by mu_.
};

}  // namespace lmcache
