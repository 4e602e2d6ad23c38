// File: lmcache/fault/fault_inject_adapter.h
//
// FaultInjectL2Adapter (type name "fault_inject") decorates any L2 adapter and injects faults
// into what it reports, for tests and diagnostics only. It is the C++ form of LMCache's Python
// FaultInjectL2Adapter (docs/fault-inject.md) -- whose load-drop rule it reproduces
// exactly (see drop_rule.h) -- extended with the fault kinds of fault_log.h:
//
//   {"type": "fault_inject",
//    "inner": {"type": "mock", ...},          // any registered adapter spec (may carry "serde")
//    "rate": 0.0, "seed": 0, "gap_indices": [], "gap_tail_ratios": [],
//    "drop_chunk_hashes": [],                 // Python knobs (drop_chunk_hashes: earlier version)
//    "store_fail_rate": 0.0, "store_fail_mode": "mixed",     // delete_after|never_forward|mixed
//    "submit_throw_rate": 0.0, "lookup_miss_rate": 0.0,
//    "corrupt_rate": 0.0, "corrupt_bits": 1,
//    "truncate_rate": 0.0, "truncate_mode": "mixed",         // narrow|zero_tail|mixed
//    "delay_rate": 0.0, "max_delay_ms": 10, "reorder_rate": 0.0, "coalesce_rate": 0.0,
//    "max_hold_ms": 20, "spurious_wakeup_rate": 0.0, "hang_rate": 0.0, "slow_close_ms": 0}
//
// What each knob does (all probabilities in [0, 1], default 0 = off):
//   rate, gap_*, drop_chunk_hashes  load bits cleared by the Python rule (lookup unaffected).
//   store_fail_rate    per store task: the result becomes failure and the keys are not left
//                      visible -- never forwarded to the inner adapter (never_forward), or
//                      forwarded and deleted from it before the failure is published
//                      (delete_after; a lookup racing with that window may still see them).
//   submit_throw_rate  per submit (store, load, lookup): throws InjectedFault, nothing forwarded.
//   lookup_miss_rate   per hit of a lookup: the bit is cleared and the lock the inner adapter
//                      took for it is released (submit_unlock), so no lock leaks.
//   corrupt_rate       per loaded key: corrupt_bits random bits of the caller's buffer (within
//                      its logical size) are flipped after a successful inner load; the bit
//                      stays set. Not detectable by the stack: only a data check catches it.
//   truncate_rate      per loaded key: narrow = set_used_size() to fewer bytes than loaded (a
//                      conforming deserializer rejects the short source); zero_tail = the tail
//                      of the loaded bytes zeroed, size unchanged (not detectable, like corrupt).
//   delay_rate         per completion: published up to max_delay_ms late (hence out of order).
//   reorder_rate       per completion: held and published right after the next completion of
//                      the same kind (or after max_hold_ms).
//   coalesce_rate      per completion: held and published back to back with the next one, so
//                      both land behind a single wake-up.
//   spurious_wakeup_rate per completion: one extra notify, with no result, on one of the fds.
//   hang_rate          per store / load task: the inner adapter does the work but the
//                      completion is never published; close() drops it (a serde wrapper above
//                      then fails the task). Lookups never hang: nothing could fail them later.
//   slow_close_ms      close() sleeps this long first.
// Every decision is drawn from one FaultRng seeded with "seed", indexed by the content of the
// task (its keys and how many times that batch was seen), never by thread timing; the Python
// rate rule uses BLAKE2b of each key as in Python. Every injected fault is recorded in a
// FaultLog before its effect becomes visible.
//
// Threading model: the adapter is an L2AdapterBase (lmcache/l2/l2_adapter_base.h: its own ids,
// three event fds and validation) over the inner adapter, with one pump thread. submit_*() runs on
// the caller's thread: it draws the submit-time decisions (throw, store failure, hang), forwards to
// the inner adapter and records the inner id under the adapter's mutex, which it holds across the
// inner submit so that the pump can never see an inner completion it cannot match. The pump polls
// the inner adapter's three fds, its own wake fd and its schedule's next deadline; after every
// wake-up it pops / queries every pending inner task, applies the completion-time faults (drops,
// corruption, truncation, lookup misses, deletions of failed stores -- inner calls are made without
// the mutex held), and schedules each result for publication (delay / hold). Publication is
// L2AdapterBase::complete(): the result is stored, then the fd notified once. The pump is the
// only thread that touches caller buffers after submit returns, and only between the inner
// completion and publication, when neither the inner adapter nor the caller uses them.
//
// close(): idempotent. Rejects new submits (std::logic_error), sleeps slow_close_ms, stops and
// joins the pump, closes the inner adapter, then closes the three fds. Results not yet
// published (delayed, held, hung, or still at the inner adapter) are dropped and never
// signalled, as the mock adapter does; results already published stay takeable.
// delete_keys(), submit_unlock() and submit_*() throw std::logic_error after close(); getters
// delegate to the (closed) inner adapter.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/poll_loop.h"
#include "lmcache/fault/drop_rule.h"
#include "lmcache/fault/fault_inject_options.h"
#include "lmcache/fault/fault_log.h"
#include "lmcache/fault/fault_rng.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/l2/l2_adapter_base.h"

namespace lmcache::fault_internal {
class PublicationSchedule;  // internal/publication_schedule.h
}  // namespace lmcache::fault_internal

namespace lmcache::fault {

class FaultInjectL2Adapter final : public L2AdapterBase {
 public:
  static constexpr std::string_view kTypeName = "fault_inject";

  // FaultInjectL2Adapter()
  //
  // Takes ownership of `inner` (close() closes it) and starts the pump thread. Events go to
  // `log` (a private one when null). Throws std::invalid_argument for a null inner.
  FaultInjectL2Adapter(L2AdapterPtr inner, FaultInjectOptions options,
                       std::shared_ptr<FaultLog> log = nullptr);

  // Calls close().
  ~FaultInjectL2Adapter() override;

  FaultInjectL2Adapter(const FaultInjectL2Adapter&) = delete;
  FaultInjectL2Adapter& operator=(const FaultInjectL2Adapter&) = delete;

  // L2AdapterInterface. The fds are the adapter's own (-1 after close()), pairwise distinct and
  // distinct from the inner's. The submits are as L2AdapterInterface, plus: they may throw
  // InjectedFault (submit_throw_rate); exceptions of the inner submit propagate unchanged. They
  // throw std::invalid_argument when the lists differ in length, std::logic_error after
  // close(). Lending, usage, eviction and listeners are the inner adapter's.
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    return inner_->lend_store_buffers(keys, layout);
  }
  std::uint64_t lent_bytes_outstanding() const override { return inner_->lent_bytes_outstanding(); }
  AdapterUsage get_usage() const override { return inner_->get_usage(); }
  bool supports_global_eviction() const override { return inner_->supports_global_eviction(); }
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    inner_->register_listener(std::move(listener));
  }

  // report_status()
  //
  // The inner's status plus "fault_inject": {rate, seed, gap_indices (sorted),
  // gap_tail_ratios, drop_chunk_hashes, every new knob, "pending": pending_summary(),
  // "pump_errors", "stray_inner_results", "events_dropped" (FaultLog::dropped()), "closed"}.
  Json report_status() const override;

  L2AdapterInterface& inner() { return *inner_; }
  const L2AdapterInterface& inner() const { return *inner_; }
  const FaultInjectOptions& options() const { return options_; }
  FaultLog& fault_log() { return *log_; }
  const std::shared_ptr<FaultLog>& fault_log_ptr() const { return log_; }

  // pending_summary()
  //
  // Counts of unpublished tasks by kind and state: {"store": {"at_inner": n, "scheduled": n,
  // "held": n, "hung": n}, "lookup": {...}, "load": {...}}.
  Json pending_summary() const;

  // describe_task()
  //
  // Where the newest unpublished task whose keys include `key` is ("load task 7 (inner 12):
  // at the inner adapter for 3.2 s"), or "no unpublished task" -- for watchdog messages.
  std::string describe_task(const ObjectKey& key) const;

 protected:
  void do_store(TaskId id, const std::vector<ObjectKey>& keys,
                const std::vector<MemoryObjPtr>& objects) override;
  void do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) override;
  void do_unlock(const std::vector<ObjectKey>& keys) override;
  void do_load(TaskId id, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>& objects) override;
  void do_delete(const std::vector<ObjectKey>& keys) override;
  void do_close() override;

 private:
  enum class Op : std::uint8_t { kStore, kLookup, kLoad };
  enum class State : std::uint8_t { kAtInner, kScheduled, kHeld, kHung };
  using Clock = std::chrono::steady_clock;

  struct Task {
    Op op = Op::kStore;
    State state = State::kAtInner;
    std::vector<ObjectKey> keys;
    std::vector<MemoryObjPtr> objects;
    std::uint64_t index = 0;  // the decision index (content + occurrence)
    std::optional<TaskId> inner_id;
    bool fail_store = false;
    bool delete_after = false;
    bool hang = false;
    bool coalesce = false;  // when held: published before (true) or after (false) the next one
    Clock::time_point submitted;
    Clock::time_point due;
    std::optional<L2StoreResult> store_result;
    std::optional<Bitmap> bitmap;
  };

  static const char* op_name(Op op);
  // Records an event about `task` (the detail is prefixed with its op).
  void record(FaultKind kind, FaultEffect effect, const Task& task, std::vector<ObjectKey> keys,
              std::string detail, bool effective = true,
              std::vector<const MemoryObj*> objects = {});
  // Damage to the loaded object of task.keys[position]: records it with the damaged key and
  // the first byte it changed or removed (nullopt: nothing changed).
  void record_damage(FaultKind kind, FaultEffect effect, const Task& task,
                     std::vector<ObjectKey> keys, std::string detail, std::size_t position,
                     const MemoryObj& obj, std::optional<std::size_t> first_damaged_byte);
  std::uint64_t decision_index(Op op, const std::vector<ObjectKey>& keys);
  // A task of `op` as its submit finds it: its decision index drawn (and submit_throw, which
  // throws InjectedFault when it fires), its keys and objects, its submit time.
  Task new_task(Op op, const std::vector<ObjectKey>& keys,
                const std::vector<MemoryObjPtr>& objects);
  // Registers `task`, forwarded to the inner adapter as `inner_id`, as task `id`. Requires mu_.
  void track_locked(TaskId id, Task task, TaskId inner_id);
  // Draws submit_throw; throws InjectedFault (recorded) when it fires.
  void maybe_throw_at_submit(Op op, const std::vector<ObjectKey>& keys, std::uint64_t index);

  // Pump side. apply_*() run without mu_ and touch only the task's caller buffers (and make
  // inner calls: delete_keys, submit_unlock); they record every fault they inject.
  void collect_inner_stores();
  void collect_inner_queries(Op op);
  L2StoreResult apply_store_faults(Task& task, L2StoreResult result);
  Bitmap apply_lookup_faults(Task& task, Bitmap bits);
  Bitmap apply_load_faults(Task& task, Bitmap bits);
  // Moves a task whose result is ready to kScheduled / kHeld / kHung. Requires mu_.
  void schedule_locked(TaskId id, Task& task);
  // Publishes what the schedule says is due. Require mu_ (CompletionQueue::complete only takes
  // its own lock).
  void publish_due_locked(Clock::time_point now);
  void complete_locked(TaskId id);
  Clock::time_point next_deadline_locked() const;

  const L2AdapterPtr inner_;
  FaultInjectOptions options_;
  std::shared_ptr<FaultLog> log_;
  FaultRng rng_;
  OccurrenceCounter occurrences_;

  mutable std::mutex mu_;
  std::map<TaskId, Task> tasks_;                // unpublished tasks; guarded by mu_
  std::map<TaskId, TaskId> inner_to_outer_[3];  // per Op; guarded by mu_
  // kScheduled and kHeld tasks (internal/publication_schedule.h); guarded by mu_.
  std::unique_ptr<fault_internal::PublicationSchedule> schedule_;
  bool closing_ = false;                         // guarded by mu_
  std::atomic<std::uint64_t> stray_results_{0};  // inner store results we never submitted

  // The pump: polls the inner's three fds, wakes for the schedule's next deadline, collects
  // and publishes. Last: it starts once everything above exists.
  std::unique_ptr<PollLoop> pump_;
};

// register_fault_injection_adapters()
//
// Registers "fault_inject" in the L2 adapter registry. Idempotent and thread-safe; nothing
// relies on static initialisation. The factory builds the inner adapter with
// create_l2_adapter() (so an inner spec with a "serde" object becomes a SerdeL2AdapterWrapper
// and the faults then act on decoded objects), passing the AdapterContext on; the options are
// validated before the inner adapter is built. It prints the Python warning banner
// "FaultInjectL2Adapter ACTIVE (...) wrapping <type> -- test/diagnostic use only." on stderr.
// Note: the usual layout is {"type": "fault_inject", "inner": {...}, "serde": {...}} built with
// create_l2_adapter(): the wrapper then sits above the injector, which faults serialized bytes.
void register_fault_injection_adapters();

}  // namespace lmcache::fault
