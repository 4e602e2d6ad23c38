// The bridge's bookkeeping, submit side: construction, the tables, launching connector batches,
// the submits and close(); native_connector_adapter_completions.cc has the completion side
// (connector completions, deadlines, the loop), and internal/native_connector_tasks.h the
// private types both share. One mutex (mu_) guards every table; the connector is called only
// without it (launch()), and listeners and completion queues only from an Outbox run after it is
// released, in the order the actions were queued (listeners before the completion they explain).
//
// It is one state machine (tasks, their connector batches, deadlines, cleanup deletes) under one
// mutex, whose invariants (every task completes exactly once; a failed store's keys stay hidden
// until their delete is confirmed; no buffer is released while a batch may still touch it) span
// the submit, completion, deadline and close paths. The circuit breaker (circuit_breaker.h), the
// options (native_connector_options.h), the error record (connector_error.h) and the per-key
// bookkeeping (internal/bridge_keys.h) are components of their own; the loop is core's PollLoop.
#include "lmcache/bridge/native_connector_adapter.h"

#include <stdexcept>
#include <unordered_set>

#include "lmcache/bridge/internal/bridge_keys.h"
#include "lmcache/bridge/internal/native_connector_tasks.h"
#include "lmcache/core/close_quietly.h"
#include "lmcache/core/poll_loop.h"

namespace lmcache::bridge {

// ---------------------------------------------------------------------------------------------
// Construction.

NativeConnectorL2Adapter::NativeConnectorL2Adapter(ErasedConnectorPtr connector,
                                                   NativeConnectorAdapterOptions options)
    : L2AdapterBase("NativeConnectorL2Adapter"),
      options_(std::move(options)),
      codec_(options_.key_namespace),
      connector_(connector ? std::move(connector)
                           : throw std::invalid_argument(
                                 "NativeConnectorL2Adapter: the connector is null")),
      connector_fd_(connector_->event_fd()),
      probe_before_get_(options_.probe_before_get.value_or(!connector_->per_key_get_results())),
      supports_delete_(connector_->supports_delete()),
      usage_(options_.max_capacity_bytes),
      keys_(std::make_unique<bridge_internal::BridgeKeys>()),
      breaker_(options_.breaker) {
  try {
    if (connector_fd_ < 0) {
      throw std::invalid_argument("NativeConnectorL2Adapter: the connector's event_fd() is " +
                                  std::to_string(connector_fd_));
    }
    if (options_.task_deadline.count() <= 0) {
      throw std::invalid_argument("NativeConnectorL2Adapter: task_deadline must be > 0, got " +
                                  std::to_string(options_.task_deadline.count()) + " ms");
    }
    // The connector's drain_completions() drains its own fd (the contract: the only call to
    // make when it is readable), so the loop only waits on it.
    PollLoopOptions loop_options;
    loop_options.consume_fds = false;
    loop_options.max_wait = std::chrono::hours(1);  // every event and deadline wakes it
    loop_ = std::make_unique<PollLoop>(std::vector<int>{connector_fd_},
                                       std::vector<PollLoop::Step>{[this] { on_wake(); }},
                                       loop_options, [this] { return next_deadline(); });
    loop_->start();
  } catch (...) {
    close_quietly(*connector_);
    throw;
  }
}

NativeConnectorL2Adapter::~NativeConnectorL2Adapter() { close_quietly(*this); }

void NativeConnectorL2Adapter::check_open_locked(const char* what) const {
  if (closed_) {
    throw std::logic_error(std::string("NativeConnectorL2Adapter::") + what + " after close()");
  }
}

void NativeConnectorL2Adapter::run(Outbox& out) {
  for (auto& action : out.actions) {
    try {
      action();
    } catch (...) {
      // Listeners are guarded by the UsageTracker; a completion queue only throws on a task
      // completed twice, which the tables above rule out. Keep serving the other actions.
      std::lock_guard lock(mu_);
      ++stats_.protocol_errors;
    }
  }
  out.actions.clear();
}

// ---------------------------------------------------------------------------------------------
// Tables.

std::uint64_t NativeConnectorL2Adapter::add_task_locked(Task task) {
  const std::uint64_t serial = next_serial_++;
  task.deadline = Clock::now() + options_.task_deadline;
  deadlines_.emplace(task.deadline, serial);
  // Deadlines only grow, so the loop needs waking only when it sleeps past this one (it was
  // idle, or it planned a later wake-up).
  if (task.deadline < planned_wake_) {
    planned_wake_ = task.deadline;
    loop_->wake();
  }
  tasks_.emplace(serial, std::move(task));
  return serial;
}

void NativeConnectorL2Adapter::erase_task_locked(std::uint64_t serial) {
  auto it = tasks_.find(serial);
  if (it == tasks_.end()) return;
  deadlines_.erase({it->second.deadline, serial});
  tasks_.erase(it);
  cv_.notify_all();  // a delete_keys() caller may be waiting for this task
}

namespace {

// Records a removal in the usage now (under the bridge's lock, so that counts apply in order)
// and queues the listener call.
template <class Outbox>
void record_removed(UsageTracker& usage, bridge_internal::BridgeKeys::Sized removed, Outbox& out) {
  if (removed.empty()) return;
  usage.record_deleted(removed.keys, removed.sizes);
  out.add(
      [&usage, removed = std::move(removed)] { usage.fire_deleted(removed.keys, removed.sizes); });
}

}  // namespace

void NativeConnectorL2Adapter::forget_known_locked(const std::vector<ObjectKey>& keys,
                                                   Outbox& out) {
  record_removed(usage_, keys_->forget(keys), out);
}

void NativeConnectorL2Adapter::reconcile_miss_locked(const ObjectKey& key, std::uint64_t epoch,
                                                     Outbox& out) {
  // Only a store published before the probe was submitted must have been seen by it.
  bridge_internal::BridgeKeys::Sized gone = keys_->forget_if_stale(key, epoch);
  if (gone.empty()) return;
  ++stats_.reconciled_misses;
  record_removed(usage_, std::move(gone), out);
}

NativeConnectorL2Adapter::Submission NativeConnectorL2Adapter::cleanup_submission_locked(
    std::uint64_t serial, std::vector<ObjectKey> keys) {
  Submission s;
  s.batch.op = Op::kDelete;
  s.batch.task = serial;
  s.keys.reserve(keys.size());
  for (const ObjectKey& key : keys) s.keys.push_back(codec_.encode(key));
  s.batch.keys = std::move(keys);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Launching connector batches.

void NativeConnectorL2Adapter::launch(std::vector<Submission> subs) {
  for (Submission& s : subs) {
    std::uint64_t future_id = 0;
    std::string error;
    bool threw = false;
    try {
      switch (s.batch.op) {
        case Op::kSet:
          future_id = connector_->submit_batch_set(s.keys, s.bufs, s.lens, s.chunk);
          break;
        case Op::kGet:
          future_id = connector_->submit_batch_get(s.keys, s.bufs, s.lens, s.chunk);
          break;
        case Op::kExists:
          future_id = connector_->submit_batch_exists(s.keys);
          break;
        case Op::kDelete:
          future_id = connector_->submit_batch_delete(s.keys);
          break;
      }
    } catch (const std::exception& e) {
      threw = true;
      error = std::string("connector submit threw: ") + e.what();
    } catch (...) {
      threw = true;
      error = "connector submit threw a non-standard exception";
    }
    Outbox out;
    std::vector<Submission> follow;
    {
      std::lock_guard lock(mu_);
      if (threw) {
        ++stats_.submit_errors;
        on_batch_done(std::move(s.batch), Completion{0, false, {}, error}, out, follow);
      } else if (auto early = early_.find(future_id); early != early_.end()) {
        Completion c = std::move(early->second);
        early_.erase(early);
        on_batch_done(std::move(s.batch), c, out, follow);
      } else if (!batches_.try_emplace(future_id, std::move(s.batch)).second) {
        ++stats_.protocol_errors;  // a future id handed out twice: fail the newer batch
        Completion c{
            future_id, false, {}, "connector reused future id " + std::to_string(future_id)};
        on_batch_done(std::move(s.batch), c, out, follow);
      }
      if (closed_) follow.clear();  // close() fails the tasks; nothing new goes out
    }
    run(out);
    if (!follow.empty()) launch(std::move(follow));
  }
}

// Counts a caller inside submit_*() / delete_keys(): close() waits for every one of them before
// it closes the connector and the fds they may still use.
class NativeConnectorL2Adapter::CallerGuard {
 public:
  explicit CallerGuard(NativeConnectorL2Adapter& a) : a_(a) {}  // mu_ held: counted already
  ~CallerGuard() {
    {
      std::lock_guard lock(a_.mu_);
      --a_.callers_in_flight_;
    }
    a_.cv_.notify_all();
  }
  CallerGuard(const CallerGuard&) = delete;
  CallerGuard& operator=(const CallerGuard&) = delete;

 private:
  NativeConnectorL2Adapter& a_;
};

void NativeConnectorL2Adapter::enter_locked(const char* what) {
  check_open_locked(what);
  ++callers_in_flight_;
}

bool NativeConnectorL2Adapter::admit_locked(Task& task) {
  task.admission = breaker_.admit(Clock::now());
  if (!task.admission.pass) ++stats_.breaker_refused;
  return task.admission.pass;
}

void NativeConnectorL2Adapter::record_breaker_locked(const Task& task, bool connection_failure) {
  breaker_.record(task.admission, connection_failure, Clock::now());
}

void NativeConnectorL2Adapter::start_batches_locked(Task& task, std::uint64_t serial, Op op,
                                                    const std::vector<std::size_t>& idx,
                                                    std::vector<Submission>& follow) {
  // One batch per length: a connector batch has a single chunk size.
  std::map<std::uint64_t, std::vector<std::size_t>> by_len;
  for (std::size_t i : idx) by_len[task.lens[i]].push_back(i);
  for (auto& [len, group] : by_len) {
    Submission s;
    s.batch.op = op;
    s.batch.task = serial;
    s.chunk = static_cast<std::size_t>(len);
    for (std::size_t i : group) {
      s.keys.push_back(codec_.encode(task.keys[i]));
      s.bufs.push_back(task.objects[i]->data());
      s.lens.push_back(static_cast<std::size_t>(len));
      // A set remembers its keys: a failed one deletes what it may have written.
      if (op == Op::kSet) s.batch.keys.push_back(task.keys[i]);
      s.batch.pins.push_back(task.objects[i]);
    }
    s.batch.idx = std::move(group);
    follow.push_back(std::move(s));
    ++task.pending;
  }
}

// ---------------------------------------------------------------------------------------------
// Submits.

template <class Plan>
void NativeConnectorL2Adapter::submit_task(const char* what, Plan&& plan) {
  Outbox out;
  std::vector<Submission> subs;
  std::optional<CallerGuard> guard;
  {
    std::lock_guard lock(mu_);
    enter_locked(what);
    guard.emplace(*this);
    plan(out, subs);
  }
  run(out);
  if (!subs.empty()) launch(std::move(subs));
}

void NativeConnectorL2Adapter::do_store(TaskId id, const std::vector<ObjectKey>& keys,
                                        const std::vector<MemoryObjPtr>& objects) {
  std::vector<std::uint64_t> sizes(objects.size());
  for (std::size_t i = 0; i < objects.size(); ++i) sizes[i] = objects[i]->size();
  submit_task("submit_store_task", [&](Outbox& out, std::vector<Submission>& subs) {
    if (keys.empty()) {
      out.add([this, id] { complete(id, L2StoreResult::success(0)); });
    } else {
      Task t;
      t.kind = TaskKind::kStore;
      t.l2_id = id;
      std::unordered_set<ObjectKey> seen;
      std::uint64_t needed = 0;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!seen.insert(keys[i]).second) continue;  // the first copy in a batch wins
        t.sent.push_back(i);
        t.bytes_sent += sizes[i];
        if (!keys_->is_known(keys[i])) needed += sizes[i];
      }
      const std::uint64_t cap = options_.max_capacity_bytes;
      if ((cap > 0 &&
           (needed > cap || usage_.total_bytes_used() + reserved_bytes_ > cap - needed)) ||
          !admit_locked(t)) {
        ++stats_.failed_stores;  // all or nothing: nothing is sent
        out.add([this, id] { complete(id, L2StoreResult::failure()); });
      } else {
        if (cap > 0) {
          t.reserved = needed;
          reserved_bytes_ += needed;
        }
        t.keys = keys;
        t.objects = objects;
        t.lens = std::move(sizes);
        const std::uint64_t serial = add_task_locked(std::move(t));
        Task& task = tasks_.at(serial);
        start_batches_locked(task, serial, Op::kSet, task.sent, subs);
      }
    }
  });
}

void NativeConnectorL2Adapter::do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) {
  submit_task("submit_lookup_and_lock_task", [&](Outbox& out, std::vector<Submission>& subs) {
    Task t;
    if (keys.empty() || !admit_locked(t)) {
      out.add([this, id, n = keys.size()] { complete(id, Bitmap(n)); });
    } else {
      t.kind = TaskKind::kLookup;
      t.l2_id = id;
      t.keys = keys;
      t.hit.assign(keys.size(), 0);
      t.epoch = keys_->epoch();
      t.pending = 1;
      const std::uint64_t serial = add_task_locked(std::move(t));
      Submission s;
      s.batch.op = Op::kExists;
      s.batch.task = serial;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        s.keys.push_back(codec_.encode(keys[i]));
        s.batch.idx.push_back(i);
      }
      subs.push_back(std::move(s));
    }
  });
}

void NativeConnectorL2Adapter::do_unlock(const std::vector<ObjectKey>& keys) {
  std::lock_guard lock(mu_);
  for (const ObjectKey& key : keys) keys_->unlock(key);  // per occurrence
}

void NativeConnectorL2Adapter::do_load(TaskId id, const std::vector<ObjectKey>& keys,
                                       const std::vector<MemoryObjPtr>& objects) {
  submit_task("submit_load_task", [&](Outbox& out, std::vector<Submission>& subs) {
    Task t;
    t.kind = TaskKind::kLoad;
    t.l2_id = id;
    t.keys = keys;
    t.objects = objects;
    t.lens.assign(keys.size(), 0);
    t.hit.assign(keys.size(), 0);
    t.epoch = keys_->epoch();
    std::vector<std::size_t> eligible;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (keys_->tombstoned(keys[i])) continue;  // hidden: never fetched into the destination
      if (std::optional<std::uint64_t> known = keys_->known_size(keys[i])) {
        if (*known > objects[i]->physical_size()) continue;  // would overrun
        t.lens[i] = *known;
      } else {
        t.lens[i] = objects[i]->size();
      }
      eligible.push_back(i);
    }
    if (eligible.empty() || !admit_locked(t)) {
      out.add([this, id, n = keys.size()] { complete(id, Bitmap(n)); });
    } else {
      const std::uint64_t serial = add_task_locked(std::move(t));
      Task& task = tasks_.at(serial);
      if (probe_before_get_) {
        task.pending = 1;
        Submission s;
        s.batch.op = Op::kExists;
        s.batch.task = serial;
        for (std::size_t i : eligible) s.keys.push_back(codec_.encode(keys[i]));
        s.batch.idx = std::move(eligible);
        subs.push_back(std::move(s));
      } else {
        start_batches_locked(task, serial, Op::kGet, eligible, subs);
      }
    }
  });
}

void NativeConnectorL2Adapter::do_delete(const std::vector<ObjectKey>& keys) {
  Outbox out;
  std::vector<Submission> subs;
  std::uint64_t serial = 0;
  std::optional<CallerGuard> guard;
  {
    std::lock_guard lock(mu_);
    enter_locked("delete_keys");
    guard.emplace(*this);
    std::vector<ObjectKey> unique;
    std::unordered_set<ObjectKey> seen;
    for (const ObjectKey& key : keys) {
      if (seen.insert(key).second) unique.push_back(key);
    }
    if (unique.empty()) return;
    // Hidden at once; the tombstones are lifted when the store confirms the delete.
    for (const ObjectKey& key : unique) keys_->tombstone(key);
    forget_known_locked(unique, out);
    Task t;
    t.kind = TaskKind::kDelete;
    t.pending = 1;
    // Refused by the open breaker: the keys stay hidden here, as after a failed delete.
    if (supports_delete_ && admit_locked(t)) {
      serial = add_task_locked(std::move(t));
      subs.push_back(cleanup_submission_locked(serial, std::move(unique)));
    }
  }
  run(out);
  if (subs.empty()) return;
  launch(std::move(subs));
  guard.reset();  // close() may proceed while we wait
  // The loop thread must never wait for itself (a listener calling delete_keys()).
  if (loop_->on_loop_thread()) return;
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || tasks_.count(serial) == 0; });
}

// ---------------------------------------------------------------------------------------------
// Close.

void NativeConnectorL2Adapter::do_close() {
  if (loop_ && loop_->on_loop_thread()) {
    throw std::logic_error("NativeConnectorL2Adapter::close() called from its loop (a listener?)");
  }
  {
    std::unique_lock lock(mu_);
    closed_ = true;
    cv_.notify_all();  // delete_keys() callers stop waiting
    cv_.wait(lock, [&] { return callers_in_flight_ == 0; });
  }
  // (1) Stop and join the loop, (2) close the connector: it stops touching buffers.
  if (loop_) loop_->stop();
  close_quietly(*connector_);
  // (3) Fail what is pending, exactly once; (4) release every buffer kept; (5) close our fds.
  Outbox out;
  std::unordered_map<std::uint64_t, Batch> dropped;
  {
    std::lock_guard lock(mu_);
    for (auto& [serial, task] : tasks_) {
      if (task.kind == TaskKind::kStore && !task.in_cleanup) ++stats_.failed_stores;
      publish_failure_locked(task, out);
    }
    tasks_.clear();
    deadlines_.clear();
    dropped.swap(batches_);
    early_.clear();
    reserved_bytes_ = 0;
  }
  cv_.notify_all();
  run(out);
  dropped.clear();
}

// ---------------------------------------------------------------------------------------------
// Results and getters.

AdapterUsage NativeConnectorL2Adapter::get_usage() const { return usage_.get_usage(); }

bool NativeConnectorL2Adapter::supports_global_eviction() const {
  return options_.max_capacity_bytes > 0;
}

void NativeConnectorL2Adapter::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  usage_.register_listener(std::move(listener));
}

NativeConnectorAdapterStats NativeConnectorL2Adapter::stats() const {
  std::lock_guard lock(mu_);
  NativeConnectorAdapterStats s = stats_;
  s.pending_tasks = tasks_.size();
  s.abandoned_batches = 0;
  for (const auto& [id, batch] : batches_) {
    if (tasks_.count(batch.task) == 0) ++s.abandoned_batches;
  }
  s.tombstoned_keys = keys_->tombstoned_count();
  s.known_keys = keys_->known_count();
  return s;
}

Json NativeConnectorL2Adapter::report_status() const {
  const NativeConnectorAdapterStats s = stats();
  Json status;
  {
    std::lock_guard lock(mu_);
    status = Json{{"is_healthy", !closed_ && connector_fd_valid_},
                  {"type", "NativeConnectorL2Adapter"},
                  {"connector_type", options_.type_name},
                  {"locked_key_count", keys_->locked_count()},
                  {"known_key_count", s.known_keys},
                  {"tombstoned_key_count", s.tombstoned_keys},
                  {"pending_task_count", s.pending_tasks},
                  {"abandoned_batch_count", s.abandoned_batches},
                  {"deadline_failures", s.deadline_failures},
                  {"failed_stores", s.failed_stores},
                  {"cleanup_failures", s.cleanup_failures},
                  {"protocol_errors", s.protocol_errors},
                  {"task_deadline_ms", options_.task_deadline.count()},
                  {"key_namespace", options_.key_namespace},
                  {"connector_errors", s.connector_errors}};
    if (first_error_) status["first_connector_error"] = first_error_->describe();
    if (last_error_) status["last_connector_error"] = last_error_->describe();
    if (breaker_.enabled()) {
      const CircuitBreakerState b = breaker_.state(Clock::now());
      status["connection_failures"] = b.consecutive_failures;
      status["connection_disabled"] = b.open;
      status["breaker_retry_in_seconds"] = b.retry_in_seconds;
      status["breaker_trips"] = b.trips;
      status["breaker_refused"] = s.breaker_refused;
    }
  }
  try {
    Json connector_status = connector_->status();
    if (!connector_status.is_null()) status["connector"] = std::move(connector_status);
  } catch (const std::exception& e) {
    status["connector"] = Json{{"error", e.what()}};
  }
  return status;
}

std::uint64_t NativeConnectorL2Adapter::lock_count(const ObjectKey& key) const {
  std::lock_guard lock(mu_);
  return keys_->lock_count(key);
}

std::size_t NativeConnectorL2Adapter::locked_key_count() const {
  std::lock_guard lock(mu_);
  return keys_->locked_count();
}

bool NativeConnectorL2Adapter::is_tombstoned(const ObjectKey& key) const {
  std::lock_guard lock(mu_);
  return keys_->tombstoned(key);
}

std::optional<std::uint64_t> NativeConnectorL2Adapter::known_size(const ObjectKey& key) const {
  std::lock_guard lock(mu_);
  return keys_->known_size(key);
}

}  // namespace lmcache::bridge
