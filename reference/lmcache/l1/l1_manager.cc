#include "lmcache/l1/l1_manager.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>

namespace lmcache {

L1Manager::L1Manager(std::size_t capacity_bytes) : allocator_(capacity_bytes) {}

L1Manager::L1Manager(std::size_t capacity_bytes, ByteCapacityAllocator::BufferFactory factory)
    : allocator_(capacity_bytes, std::move(factory)) {}

L1Manager::~L1Manager() { close(); }

void L1Manager::check_open(std::string_view op) const {
  if (closed_) {
    throw std::logic_error("L1Manager::" + std::string(op) + " called after close()");
  }
}

void L1Manager::erase_entry(Map::iterator it, std::vector<MemoryObjPtr>& dropped) {
  allocator_.release(it->second.charged_bytes);
  dropped.push_back(std::move(it->second.obj));
  objects_.erase(it);
}

std::vector<MemoryObjPtr> L1Manager::drop_all() {
  std::vector<MemoryObjPtr> dropped;
  dropped.reserve(objects_.size());
  std::size_t bytes = 0;
  for (auto& [key, entry] : objects_) {
    bytes += entry.charged_bytes;
    dropped.push_back(std::move(entry.obj));
  }
  objects_.clear();
  allocator_.release(bytes);
  return dropped;
}

template <typename Result, typename Visit>
std::vector<Result> L1Manager::for_each_key(std::string_view op, const std::vector<ObjectKey>& keys,
                                            Visit&& visit) {
  std::vector<Result> results(keys.size());
  std::lock_guard lock(mu_);
  check_open(op);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = objects_.find(keys[i]);
    if (it == objects_.end()) {
      if constexpr (std::is_same_v<Result, L1Error>) {
        results[i] = L1Error::kKeyNotExist;
      } else {
        results[i].error = L1Error::kKeyNotExist;
      }
      continue;
    }
    results[i] = visit(it);
  }
  return results;
}

std::vector<L1Result> L1Manager::reserve_write(const std::vector<ObjectKey>& keys,
                                               const std::vector<bool>& is_temporary,
                                               const MemoryLayoutDesc& layout, ReserveMode mode) {
  if (keys.size() != is_temporary.size()) {
    throw std::invalid_argument(
        "L1Manager::reserve_write: keys and is_temporary must have the same length (got " +
        std::to_string(keys.size()) + " keys and " + std::to_string(is_temporary.size()) +
        " is_temporary flags)");
  }
  // What to do with keys[i], decided before anything changes so that a throwing allocation
  // leaves the map untouched.
  enum class Plan : std::uint8_t { kFail, kLockExisting, kCreate, kDuplicateNew };
  std::vector<Plan> plan(keys.size(), Plan::kFail);
  std::vector<Entry*> existing(keys.size(), nullptr);
  std::vector<L1Result> results(keys.size());

  std::lock_guard lock(mu_);
  check_open("reserve_write");

  std::unordered_set<ObjectKey> claimed;  // Keys this call write-locks or creates.
  std::size_t num_new = 0;
  bool all_new_temporary = true;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const ObjectKey& key = keys[i];
    auto it = objects_.find(key);
    if (it != objects_.end()) {
      const Entry& e = it->second;
      const bool writable = mode != ReserveMode::kNew && !e.write_locked && e.read_count == 0 &&
                            !e.is_temporary && !claimed.contains(key);
      if (writable) {
        plan[i] = Plan::kLockExisting;
        existing[i] = &it->second;  // Element pointers survive a rehash; iterators would not.
        claimed.insert(key);
      } else {
        results[i].error = L1Error::kKeyNotWritable;
      }
    } else if (mode == ReserveMode::kUpdate) {
      results[i].error = L1Error::kKeyNotWritable;
    } else if (claimed.insert(key).second) {
      plan[i] = Plan::kCreate;
      ++num_new;
      all_new_temporary = all_new_temporary && is_temporary[i];
    } else {
      plan[i] = Plan::kDuplicateNew;
    }
  }

  std::optional<std::vector<MemoryObjPtr>> fresh;
  // Temporaries are scratch space their writer fills completely (a serializer's output, an
  // adapter's load), so they skip the zero fill; a batch with a kept object is zeroed.
  const BufferFill fill = all_new_temporary ? BufferFill::kUninitialized : BufferFill::kZeroed;
  if (num_new > 0) fresh = allocator_.allocate_batch(layout, num_new, fill);
  const bool allocated = fresh.has_value();

  // Insert the new entries first: emplace is the only step left that can throw, and if it
  // does, the entries made so far are removed and every fresh byte credited back.
  if (allocated) {
    const std::size_t each = ByteCapacityAllocator::charged_bytes(layout);
    std::size_t next = 0;
    try {
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (plan[i] != Plan::kCreate) continue;
        Entry entry;
        entry.obj = (*fresh)[next];
        entry.charged_bytes = each;
        entry.write_locked = true;
        entry.is_temporary = is_temporary[i];
        objects_.emplace(keys[i], std::move(entry));
        ++next;
      }
    } catch (...) {
      for (std::size_t i = 0, undone = 0; i < keys.size() && undone < next; ++i) {
        if (plan[i] != Plan::kCreate) continue;
        objects_.erase(keys[i]);
        ++undone;
      }
      allocator_.release(each * num_new);
      throw;
    }
  }

  std::size_t next = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    switch (plan[i]) {
      case Plan::kFail:
        break;
      case Plan::kLockExisting:
        existing[i]->write_locked = true;
        results[i].obj = existing[i]->obj;
        break;
      case Plan::kCreate:
        if (allocated) {
          results[i].obj = (*fresh)[next++];
        } else {
          results[i].error = L1Error::kOutOfMemory;
        }
        break;
      case Plan::kDuplicateNew:
        // The first occurrence created the key write-locked; if the batch failed, this
        // occurrence fails with it.
        results[i].error = allocated ? L1Error::kKeyNotWritable : L1Error::kOutOfMemory;
        break;
    }
  }
  return results;
}

std::vector<L1Error> L1Manager::finish_write(const std::vector<ObjectKey>& keys) {
  return for_each_key<L1Error>("finish_write", keys, [](Map::iterator it) {
    Entry& e = it->second;
    if (!e.write_locked || e.read_count > 0) return L1Error::kKeyInWrongState;
    e.write_locked = false;
    return L1Error::kSuccess;
  });
}

std::vector<L1Result> L1Manager::finish_write_and_reserve_read(const std::vector<ObjectKey>& keys) {
  return for_each_key<L1Result>("finish_write_and_reserve_read", keys, [](Map::iterator it) {
    Entry& e = it->second;
    if (!e.write_locked || e.read_count > 0) return L1Result{L1Error::kKeyInWrongState, {}};
    e.write_locked = false;
    e.read_count = 1;
    return L1Result{L1Error::kSuccess, e.obj};
  });
}

std::vector<L1Result> L1Manager::reserve_read(const std::vector<ObjectKey>& keys) {
  return for_each_key<L1Result>("reserve_read", keys, [](Map::iterator it) {
    Entry& e = it->second;
    if (e.write_locked) return L1Result{L1Error::kKeyNotReadable, {}};
    ++e.read_count;
    return L1Result{L1Error::kSuccess, e.obj};
  });
}

std::vector<L1Error> L1Manager::finish_read(const std::vector<ObjectKey>& keys) {
  // Declared before the helper takes the lock, so that freed buffers are released after it is
  // unlocked.
  std::vector<MemoryObjPtr> dropped;
  return for_each_key<L1Error>("finish_read", keys, [&](Map::iterator it) {
    Entry& e = it->second;
    if (e.write_locked || e.read_count == 0) return L1Error::kKeyInWrongState;
    if (--e.read_count == 0 && e.is_temporary) erase_entry(it, dropped);
    return L1Error::kSuccess;
  });
}

std::vector<L1Result> L1Manager::unsafe_read(const std::vector<ObjectKey>& keys) {
  return for_each_key<L1Result>("unsafe_read", keys, [](Map::iterator it) {
    const Entry& e = it->second;
    // A read-locked object cannot be write-locked, so the count alone decides.
    if (e.read_count == 0) return L1Result{L1Error::kKeyNotReadable, {}};
    return L1Result{L1Error::kSuccess, e.obj};
  });
}

std::vector<L1Error> L1Manager::delete_keys(const std::vector<ObjectKey>& keys) {
  std::vector<MemoryObjPtr> dropped;  // Freed after the lock is released.
  return for_each_key<L1Error>("delete_keys", keys, [&](Map::iterator it) {
    if (it->second.write_locked || it->second.read_count > 0) return L1Error::kKeyIsLocked;
    erase_entry(it, dropped);
    return L1Error::kSuccess;
  });
}

L1Usage L1Manager::get_memory_usage() const {
  std::lock_guard lock(mu_);
  check_open("get_memory_usage");
  return {allocator_.used_bytes(), allocator_.capacity_bytes()};
}

std::optional<L1ObjectState> L1Manager::object_state(const ObjectKey& key) const {
  std::lock_guard lock(mu_);
  check_open("object_state");
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  const Entry& e = it->second;
  return L1ObjectState{e.write_locked, e.read_count, e.is_temporary, e.charged_bytes};
}

void L1Manager::clear() {
  std::vector<MemoryObjPtr> dropped;  // Freed after the lock is released.
  std::lock_guard lock(mu_);
  check_open("clear");
  dropped = drop_all();
}

void L1Manager::close() {
  std::vector<MemoryObjPtr> dropped;  // Freed after the lock is released.
  std::lock_guard lock(mu_);
  if (closed_) return;
  dropped = drop_all();
  closed_ = true;
}

}  // namespace lmcache
