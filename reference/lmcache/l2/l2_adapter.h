// File: lmcache/l2/l2_adapter.h
//
// L2AdapterInterface: the asynchronous contract every L2 storage adapter implements
// (docs/l2-adapter.md).
//
// Every task kind has its own eventfd (store, lookup-and-lock, load; pairwise distinct),
// signalled exactly once per completed task after its result is stored. Results are one-shot:
// pop_completed_store_tasks() hands out each completed store once, and query_*_result() returns
// a value once per id (nullopt while pending, for unknown ids, or once taken; never throws).
// Buffers belong to the caller, who keeps them alive and locked until the task completes.
// Adapters are thread-safe: the store and prefetch controllers call them concurrently.
//
// Optional capability, lent store buffers (zero copy on store): an adapter that keeps a
// store's bytes in buffers of its own (an in-memory copy, an aligned write buffer, a registered
// RDMA region) may lend such buffers before the store (lend_store_buffers()), so that the
// caller writes the final bytes in place -- the serde wrapper's serializer writes its output
// there -- and the store adopts them instead of copying. Adapters that do not lend keep the
// defaults below and work as before; callers fall back to their own buffers.
//
// Optional capability, load views (zero copy on load): an adapter that holds a key's stored
// bytes in memory it can share read-only (an in-memory copy, a mapped file, a registered region)
// may hand them out instead of copying them into the caller's buffers (submit_load_view_task()),
// so that the caller -- the serde wrapper's deserializer -- reads them where they are.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/core/bitmap.h"
#include "lmcache/core/completion_queue.h"
#include "lmcache/core/config.h"
#include "lmcache/core/l2_store_result.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache {

// AdapterUsage
//
// Bytes held by an adapter, in total and per cache_salt (salts with zero bytes are absent).
struct AdapterUsage {
  std::uint64_t total_bytes_used = 0;
  std::uint64_t total_capacity_bytes = 0;
  std::map<std::string, std::uint64_t> bytes_by_cache_salt;

  // used / capacity, or -1.0 when the capacity is 0 (unbounded).
  double usage_fraction() const {
    return total_capacity_bytes == 0
               ? -1.0
               : static_cast<double>(total_bytes_used) / static_cast<double>(total_capacity_bytes);
  }
};

// L2LoadViews
//
// The result of a view load (L2AdapterInterface::submit_load_view_task()): bit i of `loaded` is
// set when key i was loaded, and then views[i] holds its stored bytes; views[i] is null where
// the bit is clear. views.size() == loaded.size() == the number of keys.
struct L2LoadViews {
  Bitmap loaded;
  std::vector<MemoryObjPtr> views;
};

// L2AdapterListener
//
// Observes what an adapter really stores. Called outside the adapter's locks, possibly from
// its worker thread, or from inside the submit_*() call that started the task when the adapter
// runs tasks on the submitter (MockL2Adapter's run_when_idle), where a decorator above it (a
// SerdeL2AdapterWrapper) may hold its own locks; implementations must be thread-safe and must
// not call back into the stack's submits or blocking paths.
class L2AdapterListener {
 public:
  virtual ~L2AdapterListener() = default;
  virtual void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                                 const std::vector<std::uint64_t>& sizes) = 0;
  virtual void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) = 0;
  virtual void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                                  const std::vector<std::uint64_t>& sizes) = 0;
};

class L2AdapterInterface {
 public:
  virtual ~L2AdapterInterface() = default;

  // Event fds; pairwise distinct, valid until close().
  virtual int get_store_event_fd() const = 0;
  virtual int get_lookup_and_lock_event_fd() const = 0;
  virtual int get_load_event_fd() const = 0;

  // submit_store_task()
  //
  // Stores obj->size() bytes (the logical size) of each object under its key. Failure is per
  // task. Throws std::invalid_argument when the lists differ in length, std::logic_error after
  // close().
  virtual TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                                   const std::vector<MemoryObjPtr>& objects) = 0;

  // pop_completed_store_tasks()
  //
  // Every store task completed since the last call, each exactly once.
  virtual std::map<TaskId, L2StoreResult> pop_completed_store_tasks() = 0;

  // submit_lookup_and_lock_task() / query_lookup_and_lock_result()
  //
  // Bit i of the result = key i is present and is now locked (one lock count per hit).
  virtual TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) = 0;
  virtual std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) = 0;

  // submit_unlock()
  //
  // Fire and forget: the adapter guarantees the unlock eventually happens. Unknown or unlocked
  // keys are ignored.
  virtual void submit_unlock(const std::vector<ObjectKey>& keys) = 0;

  // submit_load_task() / query_load_result()
  //
  // Writes the stored bytes of key i into objects[i]; bit i of the result = key i loaded.
  virtual TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                                  const std::vector<MemoryObjPtr>& objects) = 0;
  virtual std::optional<Bitmap> query_load_result(TaskId id) = 0;

  // lend_store_buffers()
  //
  // Optional (the default lends nothing). One writable object per key, each with `layout` and
  // a physical_size() of at least layout.total_bytes(), that the adapter will keep, without
  // copying, as the stored bytes of that key when the caller passes it, written, to
  // submit_store_task() under the same key. Returns an empty vector when the adapter does not
  // lend or cannot now (capacity, a full region, an empty `keys`): the caller then stores from
  // buffers of its own, exactly as without the capability. All or nothing. A lent buffer:
  //  - is the caller's to write until it submits it, and may be narrowed (set_used_size());
  //    the store keeps its size() bytes. The caller does not write it after the submit;
  //  - is written by nobody else: the adapter does not write it, lends it once, and never
  //    lends memory that another lent buffer or a stored key still uses;
  //  - makes nothing visible: lending adds no key; the key's bytes become visible only as a
  //    store's do, and never when that store fails;
  //  - stops counting in lent_bytes_outstanding() when a store adopts it (it is submitted
  //    under its key), or goes back to the adapter when the caller's last reference to it is
  //    dropped without that (never submitted, or submitted under another key, which stores a
  //    copy as for any caller buffer). A store that fails, or does not keep the key because
  //    it is present already, frees the buffer.
  // Thread-safe. Throws std::logic_error after close().
  virtual std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                                       const MemoryLayoutDesc& layout) {
    (void)keys;
    (void)layout;
    return {};
  }

  // lent_bytes_outstanding()
  //
  // Optional. Physical bytes of the buffers lend_store_buffers() handed out that have not gone
  // back yet (see above): 0 for an adapter that does not lend, and 0 again once every lent
  // buffer was submitted or dropped. Usable after close().
  virtual std::uint64_t lent_bytes_outstanding() const { return 0; }

  // supports_load_views()
  //
  // Optional (default false): whether submit_load_view_task() works. Constant for the life of
  // the adapter.
  virtual bool supports_load_views() const { return false; }

  // submit_load_view_task() / query_load_view_result()
  //
  // Optional. A load that lends instead of copying: the same task as submit_load_task() (ids
  // from the same counter, completion signalled once on get_load_event_fd(), the same bits, the
  // same listener calls), whose result (L2LoadViews) holds, for each loaded key, a read-only
  // object over its stored bytes. A view:
  //  - has size() == the bytes stored for the key and holds exactly them (any layout that
  //    covers them; a byte layout is usual);
  //  - never changes: a later store, delete_keys() or eviction of the key, or close(), leaves
  //    the viewed bytes as they were (the adapter keeps them alive while a view holds them);
  //  - is not written by the caller, and may outlive the adapter.
  // query_load_view_result() answers view tasks only, query_load_result() plain loads only: the
  // other query gives nullopt and leaves the result waiting. One-shot, never throws.
  // submit_load_view_task() throws std::logic_error when the adapter does not support views
  // (the default) and after close().
  virtual TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) {
    (void)keys;
    throw std::logic_error("this L2 adapter does not lend load views (supports_load_views())");
  }
  virtual std::optional<L2LoadViews> query_load_view_result(TaskId id) {
    (void)id;
    return std::nullopt;
  }

  // delete_keys()
  //
  // Removes the keys that are present (Python `delete`); absent keys are ignored.
  virtual void delete_keys(const std::vector<ObjectKey>& keys) = 0;

  virtual AdapterUsage get_usage() const = 0;
  virtual bool supports_global_eviction() const = 0;
  virtual void register_listener(std::shared_ptr<L2AdapterListener> listener) = 0;

  // report_status()
  //
  // A JSON object with at least "is_healthy".
  virtual Json report_status() const = 0;

  // close()
  //
  // Idempotent. Stops the adapter's threads and closes its fds; when it returns the adapter no
  // longer touches any caller buffer. Tasks still pending may never complete.
  virtual void close() = 0;
};

using L2AdapterPtr = std::unique_ptr<L2AdapterInterface>;

}  // namespace lmcache
