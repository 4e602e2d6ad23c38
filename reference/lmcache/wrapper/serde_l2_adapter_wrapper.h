// File: lmcache/wrapper/serde_l2_adapter_wrapper.h
//
// SerdeL2AdapterWrapper plugs a SerdeProcessor into the L2 path (docs/wrapper.md). It implements
// L2AdapterInterface by composing an inner adapter, a serde processor (both owned) and the
// L1Manager that holds its temporary byte buffers:
//
//   store: reserve temps -> serialize(objs -> temps) -> inner store(original keys, temps)
//          -> finish_read(temps) (they delete themselves) -> signal store fd
//          When the inner adapter lends store buffers (L2AdapterInterface::lend_store_buffers),
//          they replace the temps: the serializer writes the stored bytes in place and the
//          inner keeps them without copying; no L1 temp is used.
//   load:  reserve temps -> inner load(original keys -> temps) -> deserialize(set bits only)
//          -> finish_write + delete(temps) -> signal load fd
// Lookup, unlock, delete, usage, eviction support and listeners pass straight to the inner
// adapter; get_lookup_and_lock_event_fd() *is* the inner's fd.
//
// Threading model: one PollLoop (lmcache/core/poll_loop.h) polls the inner store and load fds,
// the serde's two fds and its own wake fd, and after every wake-up scans all pending steps (fds
// coalesce). Every task is one step machine: whichever thread sees a step end calls advance().
// One mutex guards the task and step tables; it is held across a step's submit (so the step's id
// is mapped before a drain can look for it), never across a query or pop of results. Submits run
// on the caller's thread. The drain runs on one thread at a time (drain_mu_): the loop's, or with
// finish_on_submit a submitting thread's, right after its submit reached the inner adapter.
//
// Failure policy: all or nothing per submit. submit_* throws only std::invalid_argument (length
// mismatch, a null object, objects whose layouts differ from objects[0], naming the index) and
// std::logic_error after close() (and std::bad_alloc when memory runs out before the task
// holds anything). Every other failure -- temp allocation on any key, a throw
// from the serde or the inner adapter at submit or while draining, a false serialize or
// deserialize, a failed inner store, an inner bitmap of the wrong size -- completes the task as
// failed exactly once (store: success=false, 0 bytes; load: all-zero bitmap of keys.size())
// with every temp released. A partial inner load keeps its bitmap; only its set bits are
// deserialized. Temp keys never leave L1: the inner adapter sees the original keys.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lmcache/core/completion_queue.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/l2_adapter.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/wrapper/inline_policy.h"
#include "lmcache/wrapper/wrapper_metrics.h"
#include "lmcache/wrapper/wrapper_options.h"

namespace lmcache {

class PollLoop;  // lmcache/core/poll_loop.h

class SerdeL2AdapterWrapper final : public L2AdapterInterface {
 public:
  // SerdeL2AdapterWrapper()
  //
  // Takes ownership of `inner` and `serde` (close() closes both) and starts the loop thread.
  // Throws std::invalid_argument when any of the three is null.
  SerdeL2AdapterWrapper(L2AdapterPtr inner, SerdeProcessorPtr serde, std::shared_ptr<L1Manager> l1,
                        SerdeWrapperOptions options = {});
  ~SerdeL2AdapterWrapper() override;

  int get_store_event_fd() const override;
  int get_lookup_and_lock_event_fd() const override;
  int get_load_event_fd() const override;

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override;
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override;

  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override;
  // query_lookup_and_lock_result()
  //
  // The inner adapter's answer. Throws std::logic_error after close(), also for a lookup that
  // completed before: the result and the locks it reports are the inner's, which close()
  // closes (docs/wrapper.md).
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override;
  void submit_unlock(const std::vector<ObjectKey>& keys) override;

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override;
  std::optional<Bitmap> query_load_result(TaskId id) override;

  void delete_keys(const std::vector<ObjectKey>& keys) override;
  AdapterUsage get_usage() const override;
  bool supports_global_eviction() const override;
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override;

  // report_status()
  //
  // The inner's status plus "serde_wrapped": true and "serde_wrapper": metrics().summary().
  Json report_status() const override;

  // close()
  //
  // Idempotent and prompt (wakes the loop through its own fd). In order: stops and joins the
  // loop; closes the inner adapter and the serde processor (each has stopped touching the temps
  // when its close() returns); releases every temp by the phase its task was in (L1 usage
  // returns to its value before the first submit); completes every task still in flight as
  // failed, exactly once; closes the wrapper's fds. Afterwards pop_completed_store_tasks() and
  // query_load_result() still hand out what completed; every other call throws
  // std::logic_error.
  void close() override;

  // The adapter this one wraps (valid until destruction).
  L2AdapterInterface& inner_adapter() { return *inner_; }
  const WrapperMetrics& metrics() const { return metrics_; }

  // The thresholds of the inline serde steps (SerdeWrapperOptions), fixed or adaptive.
  const InlinePolicy& inline_policy() const { return inline_; }

 private:
  // The step a task waits on. Stores run kSerialize then kInnerStore; loads kInnerLoad then
  // kDeserialize. Each step is one call into the serde or the inner adapter, and advance() is
  // the one place that decides what follows it, whichever thread saw it end.
  enum class Phase : std::uint8_t { kSerialize, kInnerStore, kInnerLoad, kDeserialize };
  using Clock = std::chrono::steady_clock;

  // One wrapped task. A task is private to the thread that submitted it until its first step
  // that runs elsewhere starts (start_step() publishes it in tasks_); from then on it is only
  // advanced by the drainer (drain_mu_), failed by close(), or removed by finish_*().
  struct Task {
    bool is_store = true;
    Phase phase = Phase::kSerialize;
    Clock::time_point phase_started;
    std::vector<ObjectKey> keys;
    // The caller's objects: a store's sources until they are serialized, a load's destinations.
    std::vector<MemoryObjPtr> objects;
    std::vector<ObjectKey> temp_keys;
    // The serialized bytes: temps in L1 (temp_keys), or buffers the inner lent (lent == true,
    // no temp_keys).
    std::vector<MemoryObjPtr> temp_objects;
    std::uint64_t temp_bytes = 0;
    bool lent = false;
    std::uint64_t lent_bytes = 0;
    // Loads: the inner lends views of its stored bytes (no temps); temp_objects holds them once
    // the inner load completed.
    bool viewed = false;
    Bitmap inner_bitmap;  // loads: what the inner adapter loaded
    // The serde step's bytes, as InlinePolicy measures them (a store's object bytes, a load's
    // loaded serialized bytes).
    std::size_t serde_bytes = 0;
  };
  using TaskPtr = std::unique_ptr<Task>;  // tasks never move: drains hold Task& without mu_

  // A step in flight: its phase and the id the serde or the inner adapter gave it (the two
  // number their tasks independently, so the phase is part of the key).
  struct StepKey {
    Phase phase;
    TaskId step_id;
    auto operator<=>(const StepKey&) const = default;
  };

  // How a step ended.
  struct StepOutcome {
    bool ok = false;  // serialize/deserialize: the serde's answer; inner store: its success
    L2StoreResult stored = L2StoreResult::failure();  // kInnerStore: the inner's result
    Bitmap loaded;                                    // kInnerLoad: hits (empty: malformed)
    std::vector<MemoryObjPtr> views;                  // kInnerLoad, viewed: the sources
    bool ran_inline = false;  // run on the submitting or draining thread (already measured)
  };

  void check_open(const char* op) const;
  void validate_batch(const char* op, const std::vector<ObjectKey>& keys,
                      const std::vector<MemoryObjPtr>& objects) const;

  // Serialized bytes (serde_l2_adapter_wrapper_temps.cc).
  // Whether every L1 call of a batch succeeded.
  static bool all_succeeded(const std::vector<L1Result>& results);
  // The layout of the serialized bytes of objects of `layout` (serialized_layout_desc(), computed
  // once per task); nullopt when the serde's estimate throws.
  std::optional<MemoryLayoutDesc> serialized_layout(const MemoryLayoutDesc& layout) const;
  // Reserves one temp of `temp_layout` per key in one batched reserve_write (zero-filled when
  // `zero_fill`). On any failure, a throw included, releases what was reserved and returns false.
  bool allocate_temps(Task& task, const MemoryLayoutDesc& temp_layout, bool zero_fill);
  // Releases temps reserved by allocate_temps() that the task never published (finish_write +
  // delete_keys on every temp key of the task); swallows L1's errors.
  void release_unpublished_temps(Task& task) noexcept;
  // Stores: asks the inner adapter to lend one buffer per key for the serialized bytes. False
  // (nothing held) when it lends nothing, lends a wrong count or too small a buffer, or throws.
  bool borrow_store_buffers(Task& task, const MemoryLayoutDesc& buffer_layout);
  // Stores: moves serialized temps from write- to read-locked for the inner store (lent buffers
  // need nothing). False when L1 refuses (someone touched them) or throws; the temps are then
  // still the caller's to release as write-locked.
  bool read_lock_serialized(Task& task);
  // Drops the task's references to lent buffers (the inner gets back those it did not adopt).
  void release_lent_buffers(Task& task) noexcept;
  // Releases temps that are still write-locked (finish_write + delete_keys). The release
  // functions below release lent buffers instead when the task has them.
  void release_write_locked_temps(Task& task);
  // Releases temps that were moved to read-locked (finish_read deletes them).
  void release_read_locked_temps(Task& task);
  // The release that fits the task's phase: read-locked in kInnerStore, write-locked otherwise.
  void release_temps_by_phase(Task& task);

  void enter_phase(Task& task, Phase phase);
  // Records the phase's time in the metrics and returns it.
  Clock::duration leave_phase(Task& task);

  // Counts the task in the metrics, publishes its result, then removes the task (a result that
  // cannot be published, out of memory, leaves the task for close() to fail). A load that did
  // not fail and found no key counts as a miss, not as a failure.
  void finish_store(TaskId id, L2StoreResult result);
  void finish_load(TaskId id, Bitmap result, bool failed);
  // Under mu_: counts the task as failed and publishes its failure (nothing else).
  void publish_failure_locked(TaskId id, const Task& task);
  // Releases the task's bytes by its phase, then finishes it as failed.
  void fail_task(TaskId id, Task& task);

  // The step machine.
  //
  // advance(): the task's current step ended with `outcome`; records it and carries the task on
  // to its next step, or finishes it (exactly once, every temp released once). The one
  // transition function of both paths: the drains call it, and so do submits whose serde step
  // ran inline. `unpublished` owns a task that is still private to the calling thread. Returns
  // whether the task is still in flight.
  bool advance(TaskId id, Task& task, StepOutcome outcome, TaskPtr unpublished = nullptr);
  // Enters `next` and submits its step (submit_step()), under mu_, so that no drain looks the
  // step's id up before it is in steps_; publishes an `unpublished` task first. A step that
  // cannot start (the wrapper closing, the submit throwing, tasks_ out of memory) fails the
  // task, once, its bytes released by its phase. Returns whether the step started.
  bool start_step(TaskId id, Task& task, Phase next, TaskPtr unpublished);
  // The call into the serde or the inner adapter that runs `phase`'s step; returns its id.
  TaskId submit_step(Task& task, Phase phase);
  // Runs a serde step (kSerialize, kDeserialize) on this thread when the inline policy says so
  // and the processor runs steps inline; records it and returns how it ended. nullopt (nothing
  // recorded): submit the step instead.
  std::optional<StepOutcome> run_inline(Task& task, Phase phase);
  // Whether the step `key` of `task` has ended, and how. `stored`: the inner stores popped by
  // this drain. A query that throws ends the step as failed.
  std::optional<StepOutcome> poll_step(const StepKey& key, const Task& task,
                                       std::map<TaskId, L2StoreResult>& stored);
  // Whether the task holds a source (temp or view) for every key `loaded` says was loaded.
  static bool sources_cover(const Task& task, const Bitmap& loaded);
  // A load's deserialize batch: the sources, destinations and original keys of its hits
  // (task.inner_bitmap).
  struct SerdeBatch {
    std::vector<MemoryObjPtr> sources;
    std::vector<MemoryObjPtr> destinations;
    std::vector<ObjectKey> keys;
  };
  static SerdeBatch loaded_hits(const Task& task);
  static InlinePolicy::Step inline_step_of(Phase phase);

  // Advances every task whose `phase` step has ended. Runs on one thread at a time (drain_mu_).
  void drain(Phase phase);
  // finish_on_submit: runs drain(phase) on the calling thread, when no other thread drains and
  // close() has not begun. Never throws.
  void drain_on_submit(Phase phase);

  std::unique_ptr<L2AdapterInterface> inner_;
  bool inner_views_ = false;  // inner_->supports_load_views(), read once
  std::unique_ptr<SerdeProcessor> serde_;
  std::shared_ptr<L1Manager> l1_;
  SerdeWrapperOptions options_;
  WrapperMetrics metrics_;
  InlinePolicy inline_;  // which serde steps run on the thread at hand

  TaskIdCounter ids_;
  CompletionQueue<L2StoreResult> store_done_;
  CompletionQueue<Bitmap> load_done_;

  mutable std::mutex mu_;
  std::unordered_map<TaskId, TaskPtr> tasks_;  // published tasks, by wrapped id; guarded by mu_
  std::map<StepKey, TaskId> steps_;            // the steps in flight, by phase; guarded by mu_
  bool closing_ = false;                       // guarded by mu_
  // Held by whichever thread runs the drains (the loop, or a submitter with finish_on_submit):
  // they assume one drainer, and close() takes it before it fails what is left.
  std::mutex drain_mu_;
  std::atomic<std::uint64_t> submit_drain_exceptions_{0};  // drains on submit that threw

  std::mutex close_mu_;  // serialises close() calls
  std::atomic<bool> closed_{false};
  // Polls the inner's store and load fds and the serde's two fds; drains every phase.
  std::unique_ptr<PollLoop> loop_;
};

}  // namespace lmcache
