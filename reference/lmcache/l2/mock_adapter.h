// File: lmcache/l2/mock_adapter.h
//
// MockL2Adapter (type name "mock") is a real in-memory L2 adapter with a byte capacity and a
// simulated bandwidth, following LMCache's Python MockL2Adapter with the decisions of
// docs/l2-adapter.md. It is the inner adapter of the wrapper's tests and the reference the
// conformance suite measures other adapters against.
//
// Behaviour:
//  - Store keeps a deep copy of exactly obj->size() bytes (the logical, possibly narrowed,
//    size) of each object. No overwrite: a key already present (or repeated earlier in the
//    same batch) is left as it is, is not an error and is not counted in bytes_transferred.
//    All or nothing: when the new bytes of a batch do not fit in the remaining capacity, the
//    task fails (L2StoreResult::failure()) and none of its keys is stored.
//  - Lookup-and-lock sets bit i and adds one lock count for every present key; unlock takes one
//    off (the entry goes at 0; unknown keys are ignored). Locks pin nothing here (the mock
//    never evicts) and delete_keys() ignores them; they are kept so tests can observe them.
//  - Load copies the stored bytes of key i into the front of objects[i] and sets bit i. The key
//    need not be locked. A destination whose physical_size() is smaller than the stored bytes
//    fails that key (bit clear, nothing written); otherwise the stored bytes are copied to its
//    front, the bytes past them are left as they were, and set_used_size(stored bytes) makes
//    its logical size report exactly what was loaded (a no-op when the sizes match). Missing
//    keys leave their destination untouched.
//  - Lent store buffers (L2AdapterInterface::lend_store_buffers()): the mock lends buffers
//    from the process HostBufferPool while the bytes stored plus those lent and not yet
//    submitted leave room for the request (otherwise it lends nothing). A lent buffer
//    submitted under its key is adopted at submit: the store keeps the buffer itself instead
//    of a copy (the copy is the only work a store does here, so a store of lent buffers moves
//    no bytes on the worker), under the same rules as a copy (no overwrite, all or nothing);
//    a buffer the store does not keep is freed with the task. Buffers are matched by address
//    and key, so anything else stays a caller buffer and is copied.
//  - Load views (L2AdapterInterface::submit_load_view_task()), when lend_load_views is set: a
//    view load is a load whose hits hand out the stored bytes themselves (a uint8 object over
//    them, sharing their ownership) instead of copying them. Stored bytes are never written in
//    place -- a delete drops the entry, and a key is never overwritten -- so a view stays
//    exactly what was stored however long it is held. Timing and listeners as for a load.
//  - Usage by cache_salt and listeners go through a UsageTracker: stored (with sizes) when a
//    store writes, accessed for the keys a load served, deleted (with sizes) by delete_keys().
//
// Timing: one worker thread runs every task in submission order, then holds its completion
// until submit time + bytes moved / bandwidth (a deadline-ordered schedule). Lookups and
// unlocks move no bytes and complete as soon as they ran. A store's keys become visible to
// later lookups and loads when it runs, before its completion is signalled (as the Python
// coroutine, which writes first and sleeps after). Nothing blocks the submitter, except with
// run_when_idle: a submit that finds nothing scheduled and no task running runs its task on
// the submitting thread (still in submission order: every later submit queues behind it), and
// signals the completion there when the simulated transfer is already over. That saves the
// hand-off to the worker and back, which on a VM whose idle vCPU wakes slowly costs more than
// a fast store itself (bench/RESULTS.md).
//
// Ids, fds, validation and close()'s order come from L2AdapterBase (l2_adapter_base.h): the mock
// writes only its do_*() steps.
//
// close(): idempotent. It rejects new submits, stops and joins the worker, and closes the
// three fds. Tasks still scheduled are dropped and never signalled (as the Python mock, which
// cancels its coroutines). When close() returns no caller buffer is touched again. After it,
// pop_completed_store_tasks() and query_*_result() still hand out results that had completed;
// submit_*() and delete_keys() throw std::logic_error; getters keep working.
//
// Thread safety: every member may be called from any thread. Listeners run on the worker
// thread (store, load; with run_when_idle also the submitting thread, inside submit_*()) or the
// caller's (delete_keys), and must not call close() or submit to the stack above (see
// L2AdapterListener).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lmcache/l2/l2_adapter.h"
#include "lmcache/l2/l2_adapter_base.h"
#include "lmcache/l2/usage_tracker.h"

namespace lmcache::l2_internal {
class LendLedger;  // internal/lend_ledger.h
}  // namespace lmcache::l2_internal

namespace lmcache {

// MockL2AdapterOptions
//
// The C++ form of the JSON config. Both values must be > 0.
struct MockL2AdapterOptions {
  std::uint64_t max_capacity_bytes = 0;
  std::uint64_t bandwidth_bytes_per_sec = 0;
  // Load views (zero copy on load): supports_load_views(). JSON "lend_load_views" (boolean,
  // default false).
  bool lend_load_views = false;
  // Tasks submitted while the mock is idle run on the submitting thread (see "Timing" above).
  // JSON "run_when_idle" (boolean, default false).
  bool run_when_idle = false;

  // from_gb()
  //
  // capacity = int(max_size_gb * 2^30) bytes, bandwidth = int(mock_bandwidth_gb * 2^30)
  // bytes/s, as the Python config. Throws std::invalid_argument "max_size_gb must be a
  // positive number, got -1" (or naming mock_bandwidth_gb) for a value that is not finite and
  // > 0, or that rounds to 0 bytes or past 2^64.
  static MockL2AdapterOptions from_gb(double max_size_gb, double mock_bandwidth_gb);
};

class MockL2Adapter final : public L2AdapterBase {
 public:
  static constexpr std::string_view kTypeName = "mock";

  // parse_config()
  //
  // Reads {"max_size_gb": number > 0, "mock_bandwidth_gb": number > 0} and the optional
  // booleans "lend_load_views" and "run_when_idle" (MockL2AdapterOptions). A "type" key is
  // accepted only when it is "mock" (the registry strips it). Throws std::invalid_argument
  // naming the key for an unknown key (checked first, so a typo is reported as such), a
  // missing key, a non-number (booleans included) or a value <= 0.
  static MockL2AdapterOptions parse_config(const Json& config);

  // from_json()
  //
  // MockL2Adapter(parse_config(config)).
  static std::unique_ptr<MockL2Adapter> from_json(const Json& config);

  // MockL2Adapter()
  //
  // Starts the worker thread. Throws std::invalid_argument when a value of `options` is 0,
  // std::system_error when an eventfd or the thread cannot be created.
  explicit MockL2Adapter(MockL2AdapterOptions options);

  // Calls close().
  ~MockL2Adapter() override;

  MockL2Adapter(const MockL2Adapter&) = delete;
  MockL2Adapter& operator=(const MockL2Adapter&) = delete;

  // L2AdapterInterface (the submits, queries and close() are L2AdapterBase's). Every submit
  // throws std::invalid_argument when the lists differ in length or an object is null (naming
  // the index), std::logic_error after close(); submit_unlock() runs on the worker in
  // submission order, so it applies after every lookup submitted before; delete_keys() is
  // synchronous: it removes the present keys (locked or not; lock counts are left alone),
  // shrinks the usage and notifies listeners with the removed sizes.
  bool supports_load_views() const override { return options_.lend_load_views; }

  // See the header comment ("Lent store buffers"). Throws std::logic_error after close().
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override;
  std::uint64_t lent_bytes_outstanding() const override;

  AdapterUsage get_usage() const override;
  // Always true (the capacity is > 0).
  bool supports_global_eviction() const override;
  // Throws std::invalid_argument for a null listener.
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override;

  // {"is_healthy", "type": "MockL2Adapter", "stored_object_count", "locked_key_count",
  //  "current_size_bytes", "max_capacity_bytes"}; is_healthy turns false once closed.
  Json report_status() const override;

  // Debug helpers (Python `debug_*`); consistent snapshots, usable after close().
  std::size_t stored_object_count() const;
  std::size_t locked_key_count() const;
  bool has_key(const ObjectKey& key) const;
  // The lock count of `key`; 0 when it holds none.
  std::uint64_t lock_count(const ObjectKey& key) const;
  // The stored (logical) size of `key`, nullopt when absent (Python get_object_sizes).
  std::optional<std::uint64_t> stored_size(const ObjectKey& key) const;
  // Bytes held by stored objects, as the capacity check sees them.
  std::uint64_t current_size_bytes() const;

  const MockL2AdapterOptions& options() const { return options_; }

 protected:
  void do_store(TaskId id, const std::vector<ObjectKey>& keys,
                const std::vector<MemoryObjPtr>& objects) override;
  void do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) override;
  void do_unlock(const std::vector<ObjectKey>& keys) override;
  void do_load(TaskId id, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>& objects) override;
  void do_load_view(TaskId id, const std::vector<ObjectKey>& keys) override;
  void do_delete(const std::vector<ObjectKey>& keys) override;
  void do_close() override;

 private:
  using Clock = std::chrono::steady_clock;
  using Step = std::function<void()>;

  struct StoredEntry {
    // From the process HostBufferPool (stores of KV chunks reuse freed buffers instead of
    // faulting in fresh pages), or an adopted lent buffer (aliasing its MemoryObj); shared so
    // loads copy outside the lock.
    std::shared_ptr<const std::byte> data;
    std::uint64_t size = 0;
  };

  // Puts `step` on the schedule at `due` (ties run in scheduling order) and wakes the worker.
  // Returns false, dropping the step, once the worker is stopping.
  bool schedule(Clock::time_point due, Step step);

  // Checks `closed_` and schedules body(submit_time) to run now (after every earlier submit),
  // or runs it here (run_when_idle, nothing scheduled, no step running). Throws
  // std::logic_error naming `what` after close().
  using Body = std::function<void(Clock::time_point)>;
  void submit(const char* what, Body body);

  // Task bodies, run on the worker.
  // adopted[i]: objects[i] is a lent buffer adopted at submit (kept, not copied).
  L2StoreResult run_store(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects,
                          const std::vector<std::uint64_t>& sizes,
                          const std::vector<bool>& adopted);
  Bitmap run_lookup(const std::vector<ObjectKey>& keys);
  void run_unlock(const std::vector<ObjectKey>& keys);
  // (index in `keys`, entry) of every key present, copied under the lock.
  std::vector<std::pair<std::size_t, StoredEntry>> snapshot_entries(
      const std::vector<ObjectKey>& keys) const;
  L2LoadViews run_load_views(const std::vector<ObjectKey>& keys, std::uint64_t* bytes_moved);
  Bitmap run_load(const std::vector<ObjectKey>& keys, const std::vector<MemoryObjPtr>& objects,
                  std::uint64_t* bytes_moved);

  // Submit time + bytes / bandwidth, rounded up.
  Clock::time_point due_after(Clock::time_point submitted, std::uint64_t bytes) const;

  // Runs a task's completion `step` now when `due` has passed and run_when_idle is set (on
  // whichever thread runs the task), else schedules it at `due`. Drops it after close().
  void complete_at(Clock::time_point due, Step step);

  void worker_loop();

  const MockL2AdapterOptions options_;

  UsageTracker usage_;
  // The buffers lent and not yet adopted or given back (shared with every lent buffer).
  const std::shared_ptr<l2_internal::LendLedger> ledger_;

  // Storage. Only the thread running a task (the worker, or a submitter with run_when_idle)
  // adds objects; delete_keys() removes them from callers' threads.
  mutable std::mutex state_mu_;
  std::unordered_map<ObjectKey, StoredEntry> objects_;
  std::unordered_map<ObjectKey, std::uint64_t> lock_counts_;
  std::uint64_t current_size_bytes_ = 0;

  // Schedule, keyed by (due time, sequence number).
  std::mutex sched_mu_;
  std::condition_variable sched_cv_;
  std::map<std::pair<Clock::time_point, std::uint64_t>, Step> schedule_;
  std::uint64_t next_seq_ = 0;
  // The worker's own stop flag (the base refuses submits first; this also catches a submit that
  // raced with close()). Written under sched_mu_; read anywhere.
  std::atomic<bool> closed_{false};
  // A step is running (on the worker or, with run_when_idle, on a submitter), and on which
  // thread: steps never overlap, so tasks keep submission order; close() waits for the step.
  bool busy_ = false;         // guarded by sched_mu_
  std::thread::id runner_{};  // guarded by sched_mu_

  std::thread worker_;  // last: starts after everything above exists
};

}  // namespace lmcache
