// File: lmcache/l2/l2_adapter_base.h
//
// L2AdapterBase: the asynchronous plumbing every L2 adapter needs, written once (ClickHouse's
// habit: a non-virtual public surface validates, then calls the implementation). An adapter
// derives from it and writes only what its storage does:
//
//   do_store(id, keys, objects)     do_lookup_and_lock(id, keys)     do_unlock(keys)
//   do_load(id, keys, objects)      do_delete(keys)                  do_close()
//   (optional) do_load_view(id, keys) with supports_load_views()
//
// and reports each task's outcome, from any thread, once, with complete(id, result).
//
// What the base does, so that no adapter writes it again:
//  - Validation before anything reaches the implementation: keys and objects of equal length,
//    no null object (std::invalid_argument naming the adapter, the call and the index); a
//    submit after close() began throws std::logic_error ("<name>::<call> after close()").
//  - Task ids from one TaskIdCounter shared by store, lookup and load (0, 1, 2, ...). The id
//    is drawn, and the task registered as pending, before do_*() runs, so an implementation
//    may complete a task inside its own do_*() call. A do_*() that throws leaves no pending
//    task behind and the exception reaches the caller unchanged.
//  - Three CompletionQueues, hence three pairwise distinct eventfds (store, lookup, load; view
//    loads share the load fd), each signalled exactly once per completed task, after its result
//    is stored; one-shot retrieval (pop_completed_store_tasks(), query_*_result()).
//  - complete() checks the outcome against the task: an id that is not pending (never
//    submitted, already completed, or dropped by close()) or a bitmap whose length differs from
//    the task's key count is an implementation bug and throws std::logic_error; the queues are
//    left untouched. A complete() that arrives after do_close() returned is dropped silently
//    (a worker finishing late must not reach a closed fd).
//  - close(): idempotent and serialised. New submits are refused from the moment it starts;
//    then do_close() stops the implementation (threads joined, caller buffers released; it may
//    still complete() pending tasks, e.g. as failures); then the three fds close. Tasks
//    do_close() left pending are dropped, never signalled. Results already completed stay
//    takeable. When do_close() throws (called from the adapter's own thread), the adapter
//    stays open and the exception propagates.
//
// What stays the implementation's: whatever races with close() inside its own machinery (a
// submit that passed the base's check while close() began must still be refused or finished
// by the implementation before do_close() returns), the optional capabilities (lending, views),
// usage, listeners and report_status().
//
// A derived class's destructor calls close() (the base cannot: do_close() is the derived
// class's, gone by the time ~L2AdapterBase runs).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lmcache/core/completion_queue.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache {

class L2AdapterBase : public L2AdapterInterface {
 public:
  L2AdapterBase(const L2AdapterBase&) = delete;
  L2AdapterBase& operator=(const L2AdapterBase&) = delete;

  int get_store_event_fd() const final { return store_done_.event_fd(); }
  int get_lookup_and_lock_event_fd() const final { return lookup_done_.event_fd(); }
  int get_load_event_fd() const final { return load_done_.event_fd(); }

  // Validates (see the header comment), draws an id, registers the task, calls do_*(). Throw
  // std::invalid_argument for mismatched lists or a null object, std::logic_error after
  // close(); whatever do_*() throws propagates.
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) final;
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) final;
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) final;
  // Throws std::logic_error when supports_load_views() is false.
  TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) final;

  // std::logic_error after close(), else do_unlock() / do_delete().
  void submit_unlock(const std::vector<ObjectKey>& keys) final;
  void delete_keys(const std::vector<ObjectKey>& keys) final;

  // One-shot retrieval; never throws.
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() final;
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) final;
  std::optional<Bitmap> query_load_result(TaskId id) final;
  std::optional<L2LoadViews> query_load_view_result(TaskId id) final;

  // See the header comment.
  void close() final;

  // pending_task_count()
  //
  // Tasks submitted and not completed yet (0 once close() returned).
  std::size_t pending_task_count() const;

 protected:
  // L2AdapterBase()
  //
  // `name` prefixes every message ("MockL2Adapter::submit_store_task: ..."). Throws
  // std::system_error when an eventfd cannot be created.
  explicit L2AdapterBase(std::string name);
  ~L2AdapterBase() override = default;

  // The implementation. Called with validated arguments on the submitter's thread, never after
  // close() returned, possibly concurrently with each other and with close(). Every task must
  // be completed with complete() exactly once -- on any thread, inside the do_*() call or
  // later -- or be left pending for close() to drop.
  virtual void do_store(TaskId id, const std::vector<ObjectKey>& keys,
                        const std::vector<MemoryObjPtr>& objects) = 0;
  virtual void do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) = 0;
  virtual void do_unlock(const std::vector<ObjectKey>& keys) = 0;
  virtual void do_load(TaskId id, const std::vector<ObjectKey>& keys,
                       const std::vector<MemoryObjPtr>& objects) = 0;
  // Called only when supports_load_views(); the default throws std::logic_error.
  virtual void do_load_view(TaskId id, const std::vector<ObjectKey>& keys);
  virtual void do_delete(const std::vector<ObjectKey>& keys) = 0;
  // Stops the implementation: when it returns, no thread of it runs and no caller buffer is
  // touched again. Called once (again only after it threw).
  virtual void do_close() = 0;

  // complete()
  //
  // Publishes the outcome of pending task `id`: a store's L2StoreResult, a lookup's or a
  // load's bitmap (one bit per key), a view load's L2LoadViews (loaded and views one per key).
  // Throws std::logic_error when `id` is not a pending task of that kind or the lengths
  // differ; a no-op once do_close() has returned.
  void complete(TaskId id, L2StoreResult result);
  void complete(TaskId id, Bitmap bits);
  void complete(TaskId id, L2LoadViews views);

  // closing()
  //
  // Whether close() has begun (submits are refused from then on).
  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // The message of a submit refused by close(), for implementations' own late checks:
  // std::logic_error("<name>::<what> after close()").
  [[noreturn]] void throw_closed(const char* what) const;

  const std::string& adapter_name() const { return name_; }

 private:
  enum class Kind : unsigned char { kStore, kLookup, kLoad, kLoadView };
  struct Pending {
    Kind kind;
    std::size_t keys;
  };
  // A load queue holds plain and view loads: one fd, each query taking its own kind.
  struct LoadOutcome {
    Bitmap bits;
    std::optional<std::vector<MemoryObjPtr>> views;
  };

  static const char* kind_name(Kind kind);
  void check_open(const char* what) const;
  void check_batch(const char* what, const std::vector<ObjectKey>& keys,
                   const std::vector<MemoryObjPtr>& objects) const;
  // Draws an id, registers it, runs `start(id)`; unregisters it when `start` throws.
  template <class Start>
  TaskId start_task(Kind kind, std::size_t keys, Start&& start);
  // Removes `id` from the pending table and returns its kind when it is a pending task of
  // `kind` (kLoad also accepts a lookup: a bitmap completes either) with `keys` keys (a store's
  // are not checked); else throws std::logic_error naming what was wrong. nullopt once the
  // queues are closed. Requires mu_.
  std::optional<Kind> finish_locked(TaskId id, Kind kind, std::size_t keys);

  const std::string name_;
  TaskIdCounter ids_;
  CompletionQueue<L2StoreResult> store_done_;
  CompletionQueue<Bitmap> lookup_done_;
  CompletionQueue<LoadOutcome> load_done_;

  // Guards pending_ and queues_closed_, and is held while a result is published, so that no
  // notify races with the queues' close.
  mutable std::mutex mu_;
  std::unordered_map<TaskId, Pending> pending_;
  bool queues_closed_ = false;

  std::atomic<bool> closing_{false};
  std::mutex close_mu_;  // serialises close() callers
  bool close_done_ = false;
};

}  // namespace lmcache
