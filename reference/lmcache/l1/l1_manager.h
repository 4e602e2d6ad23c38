// File: lmcache/l1/l1_manager.h
//
// L1Manager is the in-process object cache (docs/l1.md): a map from ObjectKey to a MemoryObj with
// a write lock, a read-lock count and an is_temporary flag. Memory comes from a
// ByteCapacityAllocator with a fixed byte budget.
//
// Per-key states:
//
//   (absent) --reserve_write--> write-locked --finish_write--> ready
//   write-locked --finish_write_and_reserve_read--> read-locked (count 1)
//   ready --reserve_read--> read-locked (count n) --finish_read x n--> ready
//   ready --delete_keys--> (absent)
//   temporary, read-locked --last finish_read--> (absent, memory freed)
//
// "Readable" means not write-locked. "Writable" means not write-locked, not read-locked and not
// temporary: a temporary object is written once and lives until its last reader leaves.
//
// Every batch call takes the one mutex once, so it is atomic with respect to every other call.
// Results are per key and aligned with the input vector (result[i] belongs to keys[i]); errors
// are returned as L1Error codes, never thrown. A failed entry carries a null object.
//
// A key repeated inside one batch is handled as if the calls were made one after the other, in
// order: reserve_read([k, k]) takes two read locks, delete_keys([k, k]) gives SUCCESS then
// KEY_NOT_EXIST. reserve_write is the one nuance, because its new keys are allocated together:
// a missing key is allocated once (for its first occurrence, with that occurrence's
// is_temporary flag), and its later occurrences get KEY_NOT_WRITABLE when the batch allocation
// succeeded (the first one write-locked it) or OUT_OF_MEMORY when it failed (like every other new
// key of the batch).
//
// Differences from the Python L1Manager:
//   - No TTL locks. Python's write (600 s) and read (300 s) lock TTLs are not part of our contract
//   (docs/l1.md);
//     a lock here lasts until it is released, so a slow writer can never lose its object.
//   - No listeners, no eviction controller, no tag/staging objects.
//   - Usage counts layout bytes (see byte_capacity_allocator.h), not page-rounded sizes.
//   - After close(), every call but close() throws std::logic_error (Python's
//     get_object_state() returns None instead).
//
// Thread safety: every member function may be called concurrently.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/l1/byte_capacity_allocator.h"
#include "lmcache/l1/l1_error.h"

namespace lmcache {

// ReserveMode
//
// Which keys reserve_write() may take: kAll (existing and new), kNew (only keys that do not
// exist yet), kUpdate (only keys that already exist).
enum class ReserveMode { kAll, kNew, kUpdate };

// L1Result
//
// One key's outcome: `obj` is set exactly when `error` is kSuccess.
struct L1Result {
  L1Error error = L1Error::kSuccess;
  MemoryObjPtr obj;
};

// L1Usage
//
// Bytes charged to live objects, and the budget.
struct L1Usage {
  std::size_t used_bytes = 0;
  std::size_t capacity_bytes = 0;
};

// L1ObjectState
//
// A snapshot of one key's bookkeeping (debugging and tests). `size` is the bytes the object is
// charged, its layout's total_bytes().
struct L1ObjectState {
  bool write_locked = false;
  int read_count = 0;
  bool is_temporary = false;
  std::size_t size = 0;

  // available_for_read()
  //
  // Not write-locked (a read-locked object stays readable).
  bool available_for_read() const { return !write_locked; }

  // available_for_write()
  //
  // Not write-locked, not read-locked, not temporary.
  bool available_for_write() const { return !write_locked && read_count == 0 && !is_temporary; }
};

class L1Manager {
 public:
  // L1Manager()
  //
  // An empty cache with a budget of `capacity_bytes`, backed by page-aligned host memory.
  explicit L1Manager(std::size_t capacity_bytes);

  // L1Manager()
  //
  // The same, making each buffer with `factory` (see ByteCapacityAllocator::BufferFactory); lets
  // tests simulate a system allocation failure.
  L1Manager(std::size_t capacity_bytes, ByteCapacityAllocator::BufferFactory factory);

  L1Manager(const L1Manager&) = delete;
  L1Manager& operator=(const L1Manager&) = delete;

  // ~L1Manager()
  //
  // Drops every object, as close().
  ~L1Manager();

  // reserve_write()
  //
  // Write-locks each key so the caller can fill its object. For keys[i]:
  //   - existing: KEY_NOT_WRITABLE under kNew, or when it is write-locked, read-locked or
  //     temporary; otherwise it is write-locked and its existing object returned (`layout` and
  //     is_temporary[i] are ignored).
  //   - missing: KEY_NOT_WRITABLE under kUpdate; otherwise it is allocated with `layout`, created
  //     write-locked with is_temporary[i], and its new object returned: zero-filled, except
  //     when every missing key of the call is temporary (scratch space the caller overwrites;
  //     its bytes are then unspecified).
  // All missing keys are allocated as one batch: if the budget (or the system) cannot fit them
  // all, every one of them gets OUT_OF_MEMORY and nothing stays allocated; existing keys of the
  // same call keep their own outcome. Nothing is ever evicted to make room.
  // Throws std::invalid_argument, naming both sizes, when keys.size() != is_temporary.size().
  std::vector<L1Result> reserve_write(const std::vector<ObjectKey>& keys,
                                      const std::vector<bool>& is_temporary,
                                      const MemoryLayoutDesc& layout,
                                      ReserveMode mode = ReserveMode::kAll);

  // finish_write()
  //
  // Releases the write lock. KEY_NOT_EXIST; KEY_IN_WRONG_STATE when the key is not
  // write-locked or is read-locked.
  std::vector<L1Error> finish_write(const std::vector<ObjectKey>& keys);

  // finish_write_and_reserve_read()
  //
  // In one step, releases the write lock and takes one read lock, so no delete or writer can
  // slip in between. KEY_NOT_EXIST; KEY_IN_WRONG_STATE when the key is not write-locked or is
  // already read-locked. Returns the object on success.
  std::vector<L1Result> finish_write_and_reserve_read(const std::vector<ObjectKey>& keys);

  // reserve_read()
  //
  // Takes one more read lock and returns the object. KEY_NOT_EXIST; KEY_NOT_READABLE when the
  // key is write-locked.
  std::vector<L1Result> reserve_read(const std::vector<ObjectKey>& keys);

  // finish_read()
  //
  // Releases one read lock. KEY_NOT_EXIST; KEY_IN_WRONG_STATE when the key is write-locked or
  // not read-locked. A temporary object whose read count reaches 0 is deleted and its bytes
  // credited back at once.
  std::vector<L1Error> finish_read(const std::vector<ObjectKey>& keys);

  // unsafe_read()
  //
  // Returns the object of a key that is already read-locked (by this caller, between its
  // reserve_read and finish_read) without taking another lock. KEY_NOT_EXIST; KEY_NOT_READABLE
  // when the key is not read-locked.
  std::vector<L1Result> unsafe_read(const std::vector<ObjectKey>& keys);

  // delete_keys()
  //
  // Python's `delete`. Removes each key and credits its bytes back. KEY_NOT_EXIST;
  // KEY_IS_LOCKED when the key is read- or write-locked.
  std::vector<L1Error> delete_keys(const std::vector<ObjectKey>& keys);

  // get_memory_usage()
  //
  // Bytes charged to the objects L1 holds, and the budget.
  L1Usage get_memory_usage() const;

  // object_state()
  //
  // A snapshot of `key`'s state; nullopt when absent.
  std::optional<L1ObjectState> object_state(const ObjectKey& key) const;

  // clear()
  //
  // Drops every object, locked or not, and takes usage back to 0. A caller still holding a
  // MemoryObjPtr keeps its buffer alive, but it is no longer L1's.
  void clear();

  // close()
  //
  // Drops every object as clear() does; afterwards every call but close() throws
  // std::logic_error. Idempotent.
  void close();

 private:
  friend class L1ManagerTestPeer;  // Reaches states the public API cannot (tests only).

  struct Entry {
    MemoryObjPtr obj;
    std::size_t charged_bytes = 0;
    bool write_locked = false;
    int read_count = 0;
    bool is_temporary = false;
  };

  using Map = std::unordered_map<ObjectKey, Entry>;

  // Throws std::logic_error naming `op` after close(). Requires mu_.
  void check_open(std::string_view op) const;

  // Erases `it`, credits its bytes, and moves its object into `dropped` so that the buffer is
  // freed after mu_ is released. Requires mu_.
  void erase_entry(Map::iterator it, std::vector<MemoryObjPtr>& dropped);

  // Empties the map and credits every byte back. Requires mu_.
  std::vector<MemoryObjPtr> drop_all();

  // The shape of every per-key batch call: under mu_, after check_open(op), each key that
  // exists is handed to `visit(Map::iterator)`, which returns that key's result (an L1Error,
  // or an L1Result); a missing key gets kKeyNotExist. Defined in l1_manager.cc.
  template <typename Result, typename Visit>
  std::vector<Result> for_each_key(std::string_view op, const std::vector<ObjectKey>& keys,
                                   Visit&& visit);

  mutable std::mutex mu_;
  ByteCapacityAllocator allocator_;
  Map objects_;          // Guarded by mu_.
  bool closed_ = false;  // Guarded by mu_.
};

}  // namespace lmcache
