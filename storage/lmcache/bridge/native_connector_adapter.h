// File: lmcache/bridge/native_connector_adapter.h
//
// NativeConnectorL2Adapter: the bridge from a native connector (native_connector.h) to the
// project's L2AdapterInterface, LMCache's NativeConnectorL2Adapter written in C++ with the
// decisions below (storage/README.md has the long form). make_native_connector_adapter() takes
// any NativeConnector type; the bridge itself is compiled once, over an ErasedConnector.
//
// Fds, ids, validation and close()'s order: L2AdapterBase (lmcache/l2/l2_adapter_base.h); the
// bridge writes only its do_*() steps. One background thread polls the connector's fd
// (and a wake fd), drains its completions and routes each future id to the task that submitted
// it (one L2 task may be several connector batches: one per distinct object size, since a
// connector batch has one chunk size).
//
// Keys: KeyCodec (key_codec.h) with the configured namespace.
//
// Store: the first copy of a key repeated in one batch wins (as the mock adapter). Objects are
// sent grouped by size; the task succeeds when every batch completed ok, with bytes_transferred
// = the bytes sent. A failed store leaves none of its keys visible (LMCache #4991): its keys are
// hidden from this bridge at once (a tombstone), removed from the usage, deleted from the store
// with submit_batch_delete, and only then is the failure published; a tombstone is lifted when
// the delete completes ok or a later store of that key succeeds. Without submit_batch_delete
// (older connectors) or when the delete fails, the keys stay hidden from this bridge but other
// clients of the store may still see them.
//
// Lookup-and-lock: submit_batch_exists; bit i = key i exists and is not tombstoned. Locks are
// client-side reference counts (remote stores have no pinning): each set bit adds one count to
// its key, each key occurrence in submit_unlock() removes one (a key repeated in a batch is
// counted per occurrence on both sides). Locks pin nothing here and delete_keys() ignores them,
// as in the mock adapter; report_status()["locked_key_count"] exposes them.
//
// Load: a get of length = the size this bridge stored for the key (so a destination larger than
// the stored bytes, such as a serde wrapper's estimate-sized temp, gets exactly the stored
// bytes and set_used_size() to them), or the destination's logical size for a key this bridge
// never stored. Bit i comes from the connector's per-key hit flags when the completion has one
// per key; a completion with no flags is all or nothing (older connectors). For a connector that
// does not declare per-key get results (ConnectorTraits), the bridge first probes with
// submit_batch_exists and gets only the keys present, so misses stay per key and the other
// destinations are never written. Tombstoned keys, and known keys whose stored size exceeds the
// destination's physical size, are never sent (their bits are clear, destinations untouched).
//
// Usage: client-side. The bridge counts the bytes of the keys it stored successfully and has not
// deleted (UsageTracker: totals per cache_salt, listeners); a lookup or load that finds a known
// key missing, although its store completed before that lookup was submitted (server restart,
// eviction, another client's delete), drops it from the usage and tells the listeners it was
// deleted (a get completion that carries an error proves nothing: its misses may be failures). With
// max_capacity_bytes > 0, a store whose new bytes would not fit is failed at once (all or nothing)
// and nothing is sent.
//
// delete_keys(): synchronous. Hides the keys, drops them from the usage (listeners see them
// deleted), submits the delete and waits for it (up to the task deadline). Must not be called
// from a listener callback.
//
// Deadline: every task must complete within options.task_deadline of its submit. Past it the
// task fails (store: failure, with its keys tombstoned and deleted once the late batches
// complete; lookup: all-zero, no locks; load: all-zero). The connector may still complete the
// abandoned batches later; until it does, or until close() has closed the connector, the bridge
// keeps the objects of those batches alive, so a late write never lands in freed memory (its
// destination's bytes are unspecified, as for any failed load).
//
// Circuit breaker (options.breaker, off unless its threshold is > 0; circuit_breaker.h): a
// task's connector batches report to it, a batch counting as a connection failure when its
// error text is connection-class (is_connection_error(): a completion's error, ok or not, or what
// a throwing submit said) and a task past its deadline counting as one; any other answer resets
// it. While it is open, tasks that would reach the connector do not: a store completes as
// failure, a lookup and a load with all-zero bitmaps, and delete_keys() hides its keys (as a
// failed delete does) without sending the delete. The first task after the retry time is the
// probe. report_status() shows connection_failures, connection_disabled and
// breaker_retry_in_seconds (LMCache's names).
//
// close(): idempotent and prompt: stops the loop thread, closes the connector (which stops its
// workers and drops its pending work), fails every task still pending exactly once (store:
// failure; lookup and load: all-zero), releases every object it kept and closes its fds.
// Results already completed stay takeable; submit_*() and delete_keys() then throw
// std::logic_error.
//
// Thread safety: every member may be called from any thread. Listeners run on the loop thread,
// or on a caller's thread inside submit_*() or delete_keys() (a connector may complete a batch
// before its submit returns); they must not call close() or delete_keys().
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
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lmcache/bridge/circuit_breaker.h"
#include "lmcache/bridge/connector_error.h"
#include "lmcache/bridge/erased_connector.h"
#include "lmcache/bridge/key_codec.h"
#include "lmcache/bridge/native_connector.h"
#include "lmcache/bridge/native_connector_options.h"
#include "lmcache/core/poll_loop.h"
#include "lmcache/l2/l2_adapter.h"
#include "lmcache/l2/l2_adapter_base.h"
#include "lmcache/l2/usage_tracker.h"

namespace lmcache::bridge_internal {
class BridgeKeys;  // internal/bridge_keys.h
}  // namespace lmcache::bridge_internal

namespace lmcache::bridge {

// NativeConnectorAdapterStats
//
// Counters for tests, fault campaigns and report_status(), cumulative since construction.
struct NativeConnectorAdapterStats {
  std::uint64_t deadline_failures = 0;  // tasks failed by their deadline
  std::uint64_t failed_stores = 0;      // store tasks completed as failure (any cause)
  std::uint64_t cleanup_deletes = 0;    // deletes submitted to clean up failed stores
  std::uint64_t cleanup_failures = 0;   // cleanup or delete_keys deletes that did not succeed
  std::uint64_t submit_errors = 0;      // connector submits that threw
  std::uint64_t protocol_errors = 0;    // completions of the wrong shape or unknown ids
  std::uint64_t connector_errors = 0;   // ConnectorErrors recorded (see first_connector_error())
  std::uint64_t reconciled_misses = 0;  // known keys found missing and dropped from usage
  std::uint64_t breaker_refused = 0;    // tasks the open breaker kept from the connector
  std::size_t pending_tasks = 0;        // tasks not completed yet (now)
  std::size_t abandoned_batches = 0;    // connector batches of finished tasks, still out (now)
  std::size_t tombstoned_keys = 0;      // keys hidden by a failed store or delete (now)
  std::size_t known_keys = 0;           // keys counted in the usage (now)
};

class NativeConnectorL2Adapter final : public L2AdapterBase {
 public:
  // NativeConnectorL2Adapter()
  //
  // Takes ownership of `connector` (close() closes it) and starts the loop thread. Throws
  // std::invalid_argument for a null connector, a connector fd < 0, a task_deadline <= 0 or a
  // bad key_namespace; std::system_error when an eventfd or the thread cannot be created (the
  // connector is then closed).
  NativeConnectorL2Adapter(ErasedConnectorPtr connector, NativeConnectorAdapterOptions options);

  // Calls close().
  ~NativeConnectorL2Adapter() override;

  NativeConnectorL2Adapter(const NativeConnectorL2Adapter&) = delete;
  NativeConnectorL2Adapter& operator=(const NativeConnectorL2Adapter&) = delete;

  // L2AdapterInterface (the submits, queries and close() are L2AdapterBase's). submit_*()
  // throw std::invalid_argument when the lists differ in length or an object is null (naming
  // the index), std::logic_error after close(). A connector submit that throws fails the task;
  // it is not rethrown. submit_unlock() is synchronous: the counts change before it returns.
  AdapterUsage get_usage() const override;
  // True when max_capacity_bytes > 0.
  bool supports_global_eviction() const override;
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override;
  // {"is_healthy", "type": "NativeConnectorL2Adapter", "connector_type", "locked_key_count",
  //  "known_key_count", "tombstoned_key_count", "pending_task_count", "abandoned_batch_count",
  //  "deadline_failures", "failed_stores", "cleanup_failures", "protocol_errors",
  //  "task_deadline_ms", "key_namespace", "connector_errors", "first_connector_error" and
  //  "last_connector_error" (ConnectorError::describe(), once there is one), "connector"
  //  when the connector reports a status, and with a breaker "connection_failures" (in a row),
  //  "connection_disabled", "breaker_retry_in_seconds", "breaker_trips", "breaker_refused"}.
  // is_healthy turns false once closed or when the connector's fd became invalid.
  Json report_status() const override;

  // Consistent snapshots, usable after close().
  NativeConnectorAdapterStats stats() const;
  std::uint64_t lock_count(const ObjectKey& key) const;
  std::size_t locked_key_count() const;
  bool is_tombstoned(const ObjectKey& key) const;
  // The size this bridge stored for `key`, nullopt when it holds none.
  std::optional<std::uint64_t> known_size(const ObjectKey& key) const;
  // The first and the latest ConnectorError since construction; nullopt before any.
  std::optional<ConnectorError> first_connector_error() const;
  std::optional<ConnectorError> last_connector_error() const;
  CircuitBreakerState breaker_state() const;

  const KeyCodec& key_codec() const { return codec_; }
  const NativeConnectorAdapterOptions& options() const { return options_; }
  // The connector (for fault injection and tests); valid until destruction.
  ErasedConnector& connector() { return *connector_; }

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
  using Clock = std::chrono::steady_clock;
  enum class Op : std::uint8_t { kSet, kGet, kExists, kDelete };
  enum class TaskKind : std::uint8_t { kStore, kLookup, kLoad, kDelete };
  struct Task;
  struct Batch;
  struct Submission;
  struct Outbox;
  class CallerGuard;

  // Registers `task` (with its deadline) under mu_; returns its serial.
  std::uint64_t add_task_locked(Task task);
  void erase_task_locked(std::uint64_t serial);
  // Calls the connector for each submission (no lock held), then registers the batches or
  // fails them; runs every action that results.
  void launch(std::vector<Submission> subs);
  // Routes one completion of a registered batch. mu_ held.
  void on_batch_done(Batch batch, const Completion& c, Outbox& out,
                     std::vector<Submission>& follow);
  // Records a ConnectorError about `keys` (indices `idx` of them; every key when idx is null)
  // and queues the observer's call on `out`. mu_ held.
  static const char* op_name(Op op);
  void record_connector_error_locked(std::string op, std::uint64_t future_id,
                                     const std::vector<ObjectKey>& keys,
                                     const std::vector<std::size_t>* idx,
                                     const std::vector<std::uint64_t>* lens, std::string error,
                                     Outbox& out);
  void finish_store_locked(std::uint64_t serial, Outbox& out, std::vector<Submission>& follow);
  void finish_lookup_locked(std::uint64_t serial, Outbox& out);
  void finish_load_locked(std::uint64_t serial, Outbox& out);
  void expire_locked(Clock::time_point now, Outbox& out, std::vector<Submission>& follow);
  // Queues the failed outcome of `task` on `out` (a store fails; a lookup and a load find
  // nothing; an internal delete publishes nothing): the deadline's and close()'s verdict. mu_
  // held.
  void publish_failure_locked(const Task& task, Outbox& out);
  // One `op` (get or set) batch per length for the indices `idx` of a task, appended to
  // `follow`; each counts in task.pending.
  void start_batches_locked(Task& task, std::uint64_t serial, Op op,
                            const std::vector<std::size_t>& idx, std::vector<Submission>& follow);
  // A delete of `keys` whose success lifts one tombstone count of each.
  Submission cleanup_submission_locked(std::uint64_t serial, std::vector<ObjectKey> keys);
  // Drops keys from the usage (listeners see them deleted).
  void forget_known_locked(const std::vector<ObjectKey>& keys, Outbox& out);
  // A known key reported missing by a probe submitted at `epoch` is dropped from the usage.
  void reconcile_miss_locked(const ObjectKey& key, std::uint64_t epoch, Outbox& out);
  // The loop's deadline function and scan step.
  Clock::time_point next_deadline();
  void on_wake();
  void check_open_locked(const char* what) const;
  // Asks the breaker whether `task` may reach the connector (its admission is kept in the task).
  bool admit_locked(Task& task);
  // Reports one outcome of `task` to the breaker.
  void record_breaker_locked(const Task& task, bool connection_failure);
  // check_open_locked(), then counts the caller until its CallerGuard goes.
  void enter_locked(const char* what);
  void run(Outbox& out);
  // One submit: under mu_, enter_locked(what), then plan(out, subs) builds the task; outside
  // the lock the outbox runs and the submissions are launched.
  template <class Plan>
  void submit_task(const char* what, Plan&& plan);

  const NativeConnectorAdapterOptions options_;
  const KeyCodec codec_;
  const ErasedConnectorPtr connector_;
  const int connector_fd_;
  const bool probe_before_get_;
  const bool supports_delete_;

  UsageTracker usage_;

  mutable std::mutex mu_;       // guards everything below
  std::condition_variable cv_;  // delete_keys() waiters and close() waiting for callers
  std::unordered_map<std::uint64_t, Task> tasks_;
  std::unordered_map<std::uint64_t, Batch> batches_;     // by connector future id
  std::unordered_map<std::uint64_t, Completion> early_;  // drained before their registration
  std::set<std::pair<Clock::time_point, std::uint64_t>> deadlines_;
  Clock::time_point planned_wake_ = Clock::time_point::max();
  std::uint64_t next_serial_ = 1;
  std::unique_ptr<bridge_internal::BridgeKeys> keys_;  // known sizes, tombstones, locks
  CircuitBreaker breaker_;
  std::uint64_t reserved_bytes_ = 0;
  NativeConnectorAdapterStats stats_;
  std::optional<ConnectorError> first_error_, last_error_;
  std::size_t callers_in_flight_ = 0;  // inside submit_*() / delete_keys()
  bool closed_ = false;
  bool connector_fd_valid_ = true;

  std::unique_ptr<PollLoop> loop_;  // last: started once the rest exists
};

// make_native_connector_adapter()
//
// The bridge over any NativeConnector type: NativeConnectorL2Adapter(erase_connector(c), o).
template <NativeConnector C>
std::unique_ptr<NativeConnectorL2Adapter> make_native_connector_adapter(
    std::unique_ptr<C> connector, NativeConnectorAdapterOptions options = {}) {
  return std::make_unique<NativeConnectorL2Adapter>(erase_connector(std::move(connector)),
                                                    std::move(options));
}

}  // namespace lmcache::bridge
