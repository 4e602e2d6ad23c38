// File: lmcache/l2/internal/lend_ledger.h
//
// LendLedger: an adapter's record of the store buffers it lent (lend_store_buffers(),
// docs/l2-adapter.md) and that no store adopted and no caller gave back yet. Shared with every
// buffer it lends, which may outlive the adapter: a lent buffer's owner gives its lease back
// before the buffer's memory is freed, so the bytes outstanding never count a freed buffer.
//
// A lend is reserved first (try_reserve(), all the batch's bytes at once, so that concurrent
// lends see them), then each buffer takes one reservation's bytes as its lease (lend()); what a
// failed lend leaves reserved is returned with unreserve().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::l2_internal {

class LendLedger : public std::enable_shared_from_this<LendLedger> {
 public:
  // try_reserve()
  //
  // Reserves `bytes` when they fit in `capacity` beside `used` (bytes the adapter holds) and the
  // bytes already outstanding; false, reserving nothing, otherwise.
  bool try_reserve(std::uint64_t bytes, std::uint64_t used, std::uint64_t capacity);

  // unreserve()
  //
  // Returns `bytes` reserved and never lent.
  void unreserve(std::uint64_t bytes);

  // lend()
  //
  // A writable buffer of `bytes` (at least 1) with `layout`, from the process HostBufferPool,
  // lent for `key`: it takes `bytes` of a reservation as its lease. Throws std::bad_alloc, the
  // reservation left in place for unreserve().
  MemoryObjPtr lend(const ObjectKey& key, std::uint64_t bytes, const MemoryLayoutDesc& layout);

  // adopt()
  //
  // Takes the lease of the buffer at `data` when it was lent for `key` (a store keeps it);
  // false for anything else (a caller's own buffer, or one lent for another key).
  bool adopt(const ObjectKey& key, const std::byte* data);

  // outstanding()
  //
  // Bytes reserved or lent and not adopted or given back.
  std::uint64_t outstanding() const;

 private:
  struct Lease {
    ObjectKey key;
    std::uint64_t bytes = 0;
  };
  struct BufferOwner;

  // The buffer at `data` is being freed: a lease still open goes back.
  void give_back(const std::byte* data);

  mutable std::mutex mu_;
  // Keyed by buffer address: unique while the buffer lives, and a buffer leaves the table
  // before its memory is freed.
  std::unordered_map<const std::byte*, Lease> leases_;  // guarded by mu_
  std::uint64_t outstanding_ = 0;                       // guarded by mu_
};

}  // namespace lmcache::l2_internal
