// SerdeL2AdapterWrapper's serialized bytes (the contract is documented in
// serde_l2_adapter_wrapper.h): a task's temps in L1 or the buffers its inner adapter lends, how
// they are reserved, and how each is released by the phase its task is in.
#include <cstring>

#include "lmcache/serde/serde_utils.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache {

bool SerdeL2AdapterWrapper::all_succeeded(const std::vector<L1Result>& results) {
  for (const auto& r : results) {
    if (r.error != L1Error::kSuccess) return false;
  }
  return true;
}

std::optional<MemoryLayoutDesc> SerdeL2AdapterWrapper::serialized_layout(
    const MemoryLayoutDesc& layout) const {
  try {
    return serialized_layout_desc(layout, *serde_);
  } catch (...) {
    return std::nullopt;  // an estimate that throws: the task fails, all or nothing
  }
}

bool SerdeL2AdapterWrapper::allocate_temps(Task& task, const MemoryLayoutDesc& temp_layout,
                                           bool zero_fill) {
  bool reserved = false;
  try {
    // Every allocation this function makes happens before reserve_write(): once temps are
    // reserved nothing below throws, and the catch releases them if something did.
    task.temp_keys.reserve(task.keys.size());
    for (const auto& key : task.keys) task.temp_keys.push_back(make_temp_key(key));
    task.temp_objects.reserve(task.keys.size());
    const std::vector<bool> is_temporary(task.keys.size(), true);
    const std::uint64_t bytes =
        static_cast<std::uint64_t>(temp_layout.total_bytes()) * task.keys.size();
    auto results = l1_->reserve_write(task.temp_keys, is_temporary, temp_layout, ReserveMode::kNew);
    reserved = true;
    if (!all_succeeded(results)) {
      // All or nothing. The temp keys are unique to this task, so finishing and deleting all of
      // them releases exactly the ones that were reserved (the others answer kNotFound).
      release_unpublished_temps(task);
      return false;
    }
    for (auto& r : results) task.temp_objects.push_back(std::move(r.obj));
    if (zero_fill) {
      // Pool-recycled temps hold another task's bytes (maybe another cache_salt's): a load
      // temp is zeroed so that an inner adapter that writes fewer bytes than it claims cannot
      // hand those bytes to the deserializer (docs/wrapper.md, "No stale bytes").
      for (const auto& obj : task.temp_objects) {
        std::memset(obj->data(), 0, obj->physical_size());
      }
    }
    task.temp_bytes = bytes;
    metrics_.temp_bytes_reserved(task.temp_bytes);
    return true;
  } catch (...) {
    // Key generation, an allocation or an L1 failure. reserve_write() is atomic, so
    // before it returned nothing is held; after it, release what it reserved.
    if (reserved) release_unpublished_temps(task);
    task.temp_keys.clear();
    task.temp_objects.clear();
    return false;
  }
}

void SerdeL2AdapterWrapper::release_unpublished_temps(Task& task) noexcept {
  try {
    l1_->finish_write(task.temp_keys);
    l1_->delete_keys(task.temp_keys);
  } catch (...) {
    // L1 closed under us (nothing left to release) or out of memory for the answers.
  }
  task.temp_keys.clear();
  task.temp_objects.clear();
}

bool SerdeL2AdapterWrapper::borrow_store_buffers(Task& task,
                                                 const MemoryLayoutDesc& buffer_layout) {
  try {
    std::vector<MemoryObjPtr> lent = inner_->lend_store_buffers(task.keys, buffer_layout);
    if (lent.size() != task.keys.size()) return false;  // lends nothing (now): temps of our own
    for (const auto& obj : lent) {
      // A lent buffer that cannot hold the estimate is the inner's bug: use temps instead (the
      // lent ones go back when `lent` is dropped).
      if (!obj || obj->physical_size() < buffer_layout.total_bytes()) return false;
    }
    task.temp_objects = std::move(lent);
    task.lent = true;
    task.lent_bytes = static_cast<std::uint64_t>(buffer_layout.total_bytes()) * task.keys.size();
    metrics_.lent_bytes_acquired(task.lent_bytes);
    return true;
  } catch (...) {
    // An inner that throws from the optional capability is treated as one that does not lend.
    task.temp_objects.clear();
    return false;
  }
}

bool SerdeL2AdapterWrapper::read_lock_serialized(Task& task) {
  if (task.lent) return true;  // the inner's buffers: no L1 state to move
  try {
    if (all_succeeded(l1_->finish_write_and_reserve_read(task.temp_keys))) return true;
    l1_->finish_read(task.temp_keys);  // someone touched our temps: undo the reads we got
  } catch (...) {
    // L1 closed under us.
  }
  return false;
}

void SerdeL2AdapterWrapper::release_lent_buffers(Task& task) noexcept {
  // Dropping our references gives buffers never adopted back to the inner; adopted ones are
  // the inner's stored bytes now.
  task.temp_objects.clear();
  metrics_.lent_bytes_released(task.lent_bytes);
  task.lent_bytes = 0;
}

void SerdeL2AdapterWrapper::release_write_locked_temps(Task& task) {
  if (task.lent) return release_lent_buffers(task);
  if (task.viewed) {
    task.temp_objects.clear();  // the inner's views: nothing of ours to release
    return;
  }
  if (task.temp_keys.empty()) return;
  try {
    l1_->finish_write(task.temp_keys);
    l1_->delete_keys(task.temp_keys);
  } catch (...) {
    // L1 closed under us: nothing left to release.
  }
  metrics_.temp_bytes_released(task.temp_bytes);
  task.temp_keys.clear();
  task.temp_objects.clear();
  task.temp_bytes = 0;
}

void SerdeL2AdapterWrapper::release_read_locked_temps(Task& task) {
  if (task.lent) return release_lent_buffers(task);
  if (task.temp_keys.empty()) return;
  try {
    // Temporaries delete themselves on their last read.
    l1_->finish_read(task.temp_keys);
  } catch (...) {  // L1 closed under us: nothing left to release
  }
  metrics_.temp_bytes_released(task.temp_bytes);
  task.temp_keys.clear();
  task.temp_objects.clear();
  task.temp_bytes = 0;
}

void SerdeL2AdapterWrapper::release_temps_by_phase(Task& task) {
  if (task.phase == Phase::kInnerStore) {
    release_read_locked_temps(task);
  } else {
    release_write_locked_temps(task);
  }
}

}  // namespace lmcache
