#include "lmcache/l2/internal/lend_ledger.h"

#include <utility>

#include "lmcache/core/host_buffer_pool.h"

namespace lmcache::l2_internal {

// Owns a lent buffer's memory (its MemoryObj's owner): when the last reference goes, an open
// lease goes back before the memory does.
struct LendLedger::BufferOwner {
  std::shared_ptr<LendLedger> ledger;
  std::shared_ptr<std::byte> memory;
  ~BufferOwner() {
    if (memory) ledger->give_back(memory.get());
  }
};

bool LendLedger::try_reserve(std::uint64_t bytes, std::uint64_t used, std::uint64_t capacity) {
  std::lock_guard lock(mu_);
  const std::uint64_t held = used + outstanding_;
  if (held < used || held > capacity || bytes > capacity - held) return false;
  outstanding_ += bytes;
  return true;
}

void LendLedger::unreserve(std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  outstanding_ -= bytes;
}

MemoryObjPtr LendLedger::lend(const ObjectKey& key, std::uint64_t bytes,
                              const MemoryLayoutDesc& layout) {
  auto owner = std::make_shared<BufferOwner>();
  owner->ledger = shared_from_this();
  owner->memory = allocate_host_buffer(bytes, BufferFill::kUninitialized);
  std::byte* data = owner->memory.get();
  auto obj = std::make_shared<MemoryObj>(std::move(owner), data, bytes, layout);
  // Last: whatever threw before left no lease, so its owner gave nothing back.
  std::lock_guard lock(mu_);
  leases_.emplace(data, Lease{key, bytes});
  return obj;
}

bool LendLedger::adopt(const ObjectKey& key, const std::byte* data) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(data);
  if (it == leases_.end() || !(it->second.key == key)) return false;
  outstanding_ -= it->second.bytes;
  leases_.erase(it);
  return true;
}

void LendLedger::give_back(const std::byte* data) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(data);
  if (it == leases_.end()) return;
  outstanding_ -= it->second.bytes;
  leases_.erase(it);
}

std::uint64_t LendLedger::outstanding() const {
  std::lock_guard lock(mu_);
  return outstanding_;
}

}  // namespace lmcache::l2_internal
