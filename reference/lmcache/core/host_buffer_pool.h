// File: lmcache/core/host_buffer_pool.h
//
// HostBufferPool keeps freed page-aligned host buffers and hands them out again for requests of
// the same page-rounded size. KV-cache chunks come in a few fixed sizes, and a buffer that glibc
// returns to the kernel (large aligned_alloc requests are served by fresh mmaps) costs a page
// fault per 4 KiB on its next first touch: on a VM that is 4-5 us per page, more than the fp8
// codec spends on the same bytes. Reusing the buffers removes those faults from the hot paths
// (the wrapper's temps, the mock adapter's stored copies).
//
// The pool is bounded: at most max_cached_bytes() of free buffers are kept, the oldest freed
// buffer is dropped first. Buffers in use are not counted. A buffer may outlive its pool (its
// release then frees it). Recycled buffers are zero-filled again unless the caller asks for
// BufferFill::kUninitialized, in which case they hold whatever the previous owner wrote.
//
// Thread safety: every member function may be called concurrently, and buffers may be released
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace lmcache {

// BufferFill: whether a new buffer's bytes must read as zero.
enum class BufferFill {
  kZeroed,         // every byte is 0
  kUninitialized,  // unspecified bytes; for buffers the caller overwrites before reading
};

class HostBufferPool {
 public:
  // HostBufferPool statistics, cumulative since construction.
  struct Stats {
    std::uint64_t hits = 0;          // acquires served from the free list
    std::uint64_t misses = 0;        // acquires that allocated
    std::uint64_t evictions = 0;     // free buffers dropped to stay within the bound
    std::size_t cached_bytes = 0;    // free buffers held now
    std::size_t cached_buffers = 0;  // their count
  };

  // HostBufferPool()
  //
  // An empty pool that keeps at most `max_cached_bytes` of free buffers (0: keeps none, every
  // acquire allocates and every release frees).
  explicit HostBufferPool(std::size_t max_cached_bytes);

  // ~HostBufferPool()
  //
  // Frees the cached buffers. Buffers still in use stay valid; they are freed on release.
  ~HostBufferPool();

  HostBufferPool(const HostBufferPool&) = delete;
  HostBufferPool& operator=(const HostBufferPool&) = delete;

  // rounded_size()
  //
  // The size a request of `bytes` is served with: a non-zero multiple of the page size.
  static std::size_t rounded_size(std::size_t bytes);

  // acquire()
  //
  // A buffer of at least `bytes` (exactly rounded_size(bytes) usable bytes) aligned to 4096,
  // returned to the pool when the last reference drops. Throws std::bad_alloc when the system
  // has no memory.
  std::shared_ptr<std::byte> acquire(std::size_t bytes, BufferFill fill = BufferFill::kZeroed);

  // trim()
  //
  // Frees every cached buffer.
  void trim();

  Stats stats() const;
  std::size_t max_cached_bytes() const;

  // process_default()
  //
  // The pool behind allocate_host_buffer(). Bounded by LMCACHE_HOST_POOL_BYTES (bytes, read once
  // at first use; 0 disables caching), default kDefaultProcessPoolBytes. Never destroyed.
  static HostBufferPool& process_default();
  static constexpr std::size_t kDefaultProcessPoolBytes = std::size_t{256} << 20;

 private:
  struct State;
  std::shared_ptr<State> state_;  // shared with the deleters of the buffers in use
};

}  // namespace lmcache
