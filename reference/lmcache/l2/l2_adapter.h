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
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/core/bitmap.h"
#include "lmcache/core/completion_queue.h"
#include "lmcache/core/config.h"
#include "lmcache/core/l2_store_result.h"
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

// L2AdapterListener
//
// Observes what an adapter really stores. Called outside the adapter's locks, possibly from
// its worker thread; implementations must be thread-safe and must not call back into the
// adapter's blocking paths.
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
