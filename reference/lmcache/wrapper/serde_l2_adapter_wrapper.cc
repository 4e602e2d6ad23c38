// SerdeL2AdapterWrapper (the contract is documented in serde_l2_adapter_wrapper.h): the submits,
// the step machine that carries every task on (advance()), the drain and close(), which share
// the task and step tables and keep the all-or-nothing promise only when read together. A task's
// serialized bytes (L1 temps or lent buffers) are reserved and released in
// serde_l2_adapter_wrapper_temps.cc.
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/core/close_quietly.h"
#include "lmcache/core/handoff_probe.h"
#include "lmcache/core/poll_loop.h"

namespace lmcache {
namespace {

// The hand-off cost the adaptive inline thresholds weigh a step against: the caller's, else the
// machine's, measured once per process -- and only by a wrapper with an adaptive threshold.
std::chrono::nanoseconds resolve_handoff_cost(const SerdeWrapperOptions& options) {
  if (options.handoff_cost) return *options.handoff_cost;
  if (options.inline_serialize_max_bytes && options.inline_deserialize_max_bytes) {
    return std::chrono::nanoseconds(0);  // both fixed: nothing to weigh
  }
  return machine_handoff_cost();
}

WrapperStep step_of(int phase) { return static_cast<WrapperStep>(phase); }

}  // namespace

InlinePolicy::Step SerdeL2AdapterWrapper::inline_step_of(Phase phase) {
  return phase == Phase::kSerialize ? InlinePolicy::Step::kSerialize
                                    : InlinePolicy::Step::kDeserialize;
}

SerdeL2AdapterWrapper::SerdeL2AdapterWrapper(L2AdapterPtr inner, SerdeProcessorPtr serde,
                                             std::shared_ptr<L1Manager> l1,
                                             SerdeWrapperOptions options)
    : inner_(std::move(inner)),
      serde_(std::move(serde)),
      l1_(std::move(l1)),
      options_(std::move(options)),
      metrics_(options_.metrics_registry, options_.metrics_labels),
      inline_(options_.inline_serialize_max_bytes, options_.inline_deserialize_max_bytes,
              resolve_handoff_cost(options_)) {
  if (!inner_ || !serde_ || !l1_) {
    throw std::invalid_argument(
        "SerdeL2AdapterWrapper needs an inner adapter, a serde processor and an L1Manager "
        "(got a null " +
        std::string(!inner_   ? "inner adapter"
                    : !serde_ ? "serde processor"
                              : "L1Manager") +
        ")");
  }
  inner_views_ = inner_->supports_load_views();
  loop_ = std::make_unique<PollLoop>(
      std::vector<int>{inner_->get_store_event_fd(), inner_->get_load_event_fd(),
                       serde_->get_serialize_event_fd(), serde_->get_deserialize_event_fd()},
      // One scan step: every phase in a step's order, so a step that ends and starts the next
      // one lets the same scan look at that one too.
      std::vector<PollLoop::Step>{[this] {
        std::lock_guard lock(drain_mu_);
        for (Phase phase :
             {Phase::kSerialize, Phase::kInnerStore, Phase::kInnerLoad, Phase::kDeserialize}) {
          drain(phase);
        }
      }},
      PollLoopOptions{options_.poll_timeout});
  loop_->start();
}

SerdeL2AdapterWrapper::~SerdeL2AdapterWrapper() {
  try {
    close();
  } catch (...) {
    // A destructor must not throw; close() already released what it could.
  }
}

// ---------------------------------------------------------------------------------------------
// Validation and bookkeeping helpers.

void SerdeL2AdapterWrapper::check_open(const char* op) const {
  if (closed_.load(std::memory_order_acquire)) {
    throw std::logic_error(std::string("SerdeL2AdapterWrapper::") + op + " called after close()");
  }
}

void SerdeL2AdapterWrapper::validate_batch(const char* op, const std::vector<ObjectKey>& keys,
                                           const std::vector<MemoryObjPtr>& objects) const {
  if (keys.size() != objects.size()) {
    throw std::invalid_argument(std::string(op) + ": got " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(objects.size()) + " objects");
  }
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (!objects[i]) {
      throw std::invalid_argument(std::string(op) + ": object " + std::to_string(i) + " is null");
    }
    if (i > 0 && objects[i]->layout() != objects[0]->layout()) {
      throw std::invalid_argument(std::string(op) + ": object " + std::to_string(i) +
                                  " has layout " + objects[i]->layout().to_string() +
                                  " but objects[0] has " + objects[0]->layout().to_string() +
                                  " (every object of one submit must share a layout)");
    }
  }
}

void SerdeL2AdapterWrapper::enter_phase(Task& task, Phase phase) {
  task.phase = phase;
  task.phase_started = Clock::now();
  metrics_.enter(step_of(static_cast<int>(phase)));
}

SerdeL2AdapterWrapper::Clock::duration SerdeL2AdapterWrapper::leave_phase(Task& task) {
  const Clock::duration took = Clock::now() - task.phase_started;
  metrics_.leave(step_of(static_cast<int>(task.phase)), took);
  return took;
}

void SerdeL2AdapterWrapper::finish_store(TaskId id, L2StoreResult result) {
  std::lock_guard lock(mu_);
  // Counted before the result is published: a caller that took it sees it in the metrics.
  metrics_.task_finished(/*is_store=*/true, result.is_successful());
  store_done_.complete(id, result);
  tasks_.erase(id);
}

void SerdeL2AdapterWrapper::finish_load(TaskId id, Bitmap result, bool failed) {
  std::lock_guard lock(mu_);
  if (!failed && result.size() > 0 && result.none()) {
    metrics_.load_missed();  // every key absent: an answer, not a failure
  } else {
    metrics_.task_finished(/*is_store=*/false, !failed);
  }
  load_done_.complete(id, std::move(result));
  tasks_.erase(id);
}

void SerdeL2AdapterWrapper::publish_failure_locked(TaskId id, const Task& task) {
  metrics_.task_finished(task.is_store, false);
  if (task.is_store) {
    store_done_.complete(id, L2StoreResult::failure());
  } else {
    load_done_.complete(id, Bitmap(task.keys.size()));
  }
}

void SerdeL2AdapterWrapper::fail_task(TaskId id, Task& task) {
  release_temps_by_phase(task);
  std::lock_guard lock(mu_);
  publish_failure_locked(id, task);
  tasks_.erase(id);
}

// ---------------------------------------------------------------------------------------------
// Submits: a task's first step.

TaskId SerdeL2AdapterWrapper::submit_store_task(const std::vector<ObjectKey>& keys,
                                                const std::vector<MemoryObjPtr>& objects) {
  check_open("submit_store_task");
  validate_batch("submit_store_task", keys, objects);
  const TaskId id = ids_.next();
  if (keys.empty()) {
    finish_store(id, L2StoreResult::success(0));
    return id;
  }
  auto task = std::make_unique<Task>();
  task->is_store = true;
  task->keys = keys;
  task->objects = objects;
  // Buffers the inner adapter lends (the serializer writes the stored bytes in place, the inner
  // keeps them without a copy), else temps in L1.
  const std::optional<MemoryLayoutDesc> serialized = serialized_layout(objects[0]->layout());
  if (!serialized || (!borrow_store_buffers(*task, *serialized) &&
                      !allocate_temps(*task, *serialized, /*zero_fill=*/false))) {
    finish_store(id, L2StoreResult::failure());
    return id;
  }
  task->serde_bytes = objects[0]->layout().total_bytes() * objects.size();
  Task& t = *task;
  if (std::optional<StepOutcome> serialized_here = run_inline(t, Phase::kSerialize)) {
    if (advance(id, t, std::move(*serialized_here), std::move(task))) {
      drain_on_submit(Phase::kInnerStore);
    }
    return id;
  }
  start_step(id, t, Phase::kSerialize, std::move(task));
  return id;
}

TaskId SerdeL2AdapterWrapper::submit_load_task(const std::vector<ObjectKey>& keys,
                                               const std::vector<MemoryObjPtr>& objects) {
  check_open("submit_load_task");
  validate_batch("submit_load_task", keys, objects);
  const TaskId id = ids_.next();
  if (keys.empty()) {
    finish_load(id, Bitmap(0), /*failed=*/false);
    return id;
  }
  auto task = std::make_unique<Task>();
  task->is_store = false;
  task->keys = keys;
  task->objects = objects;
  // The inner lends its stored bytes (the deserializer reads them in place, no temps), else
  // temps in L1 for the inner to load into.
  task->viewed = inner_views_;
  if (!task->viewed) {
    const std::optional<MemoryLayoutDesc> serialized = serialized_layout(objects[0]->layout());
    if (!serialized || !allocate_temps(*task, *serialized, /*zero_fill=*/true)) {
      finish_load(id, Bitmap(keys.size()), /*failed=*/true);
      return id;
    }
  }
  Task& t = *task;
  start_step(id, t, Phase::kInnerLoad, std::move(task));
  drain_on_submit(Phase::kInnerLoad);
  return id;
}

std::map<TaskId, L2StoreResult> SerdeL2AdapterWrapper::pop_completed_store_tasks() {
  return store_done_.take_all();
}

std::optional<Bitmap> SerdeL2AdapterWrapper::query_load_result(TaskId id) {
  return load_done_.take(id);
}

// ---------------------------------------------------------------------------------------------
// The step machine.

bool SerdeL2AdapterWrapper::advance(TaskId id, Task& task, StepOutcome outcome,
                                    TaskPtr unpublished) {
  if (!outcome.ran_inline) {
    const Clock::duration took = leave_phase(task);
    if (outcome.ok && (task.phase == Phase::kSerialize || task.phase == Phase::kDeserialize)) {
      inline_.observe_submitted(inline_step_of(task.phase), task.serde_bytes, took);
    }
  }
  // Whatever throws from here on (an L1 call after L1's close(), an allocation) still finishes
  // the task as failed, exactly once, with its bytes released by its phase.
  try {
    switch (task.phase) {
      case Phase::kSerialize:
        task.objects.clear();  // the caller's sources: serialized or not, no longer needed
        if (!outcome.ok || !read_lock_serialized(task)) break;
        return start_step(id, task, Phase::kInnerStore, std::move(unpublished));
      case Phase::kInnerStore:
        release_read_locked_temps(task);
        finish_store(id, outcome.stored.is_successful()
                             ? L2StoreResult::success(outcome.stored.bytes_transferred())
                             : L2StoreResult::failure());
        return false;
      case Phase::kInnerLoad: {
        if (task.viewed) task.temp_objects = std::move(outcome.views);  // the sources
        Bitmap& loaded = outcome.loaded;
        // A malformed bitmap, or a hit without its view: the load fails.
        if (loaded.size() != task.keys.size() || !sources_cover(task, loaded)) break;
        if (loaded.none()) {  // every key absent: a miss, not a failure
          release_write_locked_temps(task);
          finish_load(id, std::move(loaded), /*failed=*/false);
          return false;
        }
        task.serde_bytes = 0;
        for (std::size_t i : loaded.set_indices()) task.serde_bytes += task.temp_objects[i]->size();
        task.inner_bitmap = std::move(loaded);
        if (std::optional<StepOutcome> deserialized = run_inline(task, Phase::kDeserialize)) {
          return advance(id, task, std::move(*deserialized), std::move(unpublished));
        }
        return start_step(id, task, Phase::kDeserialize, std::move(unpublished));
      }
      case Phase::kDeserialize:
        release_write_locked_temps(task);
        if (outcome.ok) {
          finish_load(id, std::move(task.inner_bitmap), /*failed=*/false);
        } else {
          finish_load(id, Bitmap(task.keys.size()), /*failed=*/true);
        }
        return false;
    }
  } catch (...) {
  }
  fail_task(id, task);
  return false;
}

bool SerdeL2AdapterWrapper::start_step(TaskId id, Task& task, Phase next, TaskPtr unpublished) {
  std::lock_guard lock(mu_);
  task.phase = next;
  auto fail = [&] {
    release_temps_by_phase(task);
    publish_failure_locked(id, task);
    tasks_.erase(id);  // (none for a task that was never published)
    return false;
  };
  if (closing_) return fail();  // close() may have failed tasks_ already: not this one
  if (unpublished) {
    try {
      tasks_.emplace(id, std::move(unpublished));  // moves only once its node exists
    } catch (...) {
      return fail();  // out of memory
    }
  }
  enter_phase(task, next);
  try {
    // Under mu_: a drain that sees the step end finds it in steps_.
    steps_.emplace(StepKey{next, submit_step(task, next)}, id);
    return true;
  } catch (...) {
    leave_phase(task);
    return fail();
  }
}

TaskId SerdeL2AdapterWrapper::submit_step(Task& task, Phase phase) {
  switch (phase) {
    case Phase::kSerialize:  // the original keys, never the temps' (docs/serde.md)
      return serde_->submit_serialize(task.objects, task.temp_objects, task.keys);
    case Phase::kInnerStore:
      return inner_->submit_store_task(task.keys, task.temp_objects);
    case Phase::kInnerLoad:
      return task.viewed ? inner_->submit_load_view_task(task.keys)
                         : inner_->submit_load_task(task.keys, task.temp_objects);
    case Phase::kDeserialize:
      break;
  }
  SerdeBatch hits = loaded_hits(task);  // kDeserialize
  return serde_->submit_deserialize(std::move(hits.sources), std::move(hits.destinations),
                                    std::move(hits.keys));
}

std::optional<SerdeL2AdapterWrapper::StepOutcome> SerdeL2AdapterWrapper::run_inline(Task& task,
                                                                                    Phase phase) {
  const InlinePolicy::Step step = inline_step_of(phase);
  // Small enough: on this thread, no hand-off to a serde worker and back.
  if (!inline_.runs_inline(step, task.serde_bytes)) return std::nullopt;
  const Clock::time_point started = Clock::now();
  std::optional<bool> ok;  // nullopt: the processor does not run steps inline
  try {
    if (phase == Phase::kSerialize) {
      ok = serde_->serialize_inline(task.objects, task.temp_objects, task.keys);
    } else {
      const SerdeBatch hits = loaded_hits(task);
      ok = serde_->deserialize_inline(hits.sources, hits.destinations, hits.keys);
    }
  } catch (...) {
    ok = false;  // all or nothing, as a submitted step that failed
  }
  if (!ok) return std::nullopt;
  const Clock::duration took = Clock::now() - started;
  if (*ok) inline_.observe(step, task.serde_bytes, took);
  const WrapperStep measured = step_of(static_cast<int>(phase));
  metrics_.enter(measured);
  metrics_.leave(measured, took);
  metrics_.inline_step(measured);
  task.phase = phase;
  StepOutcome outcome;
  outcome.ok = *ok;
  outcome.ran_inline = true;
  return outcome;
}

SerdeL2AdapterWrapper::SerdeBatch SerdeL2AdapterWrapper::loaded_hits(const Task& task) {
  SerdeBatch hits;
  const std::vector<std::size_t> set = task.inner_bitmap.set_indices();
  hits.sources.reserve(set.size());
  hits.destinations.reserve(set.size());
  hits.keys.reserve(set.size());
  for (std::size_t i : set) {
    hits.sources.push_back(task.temp_objects[i]);
    hits.destinations.push_back(task.objects[i]);
    hits.keys.push_back(task.keys[i]);  // the original keys, never the temps' (docs/serde.md)
  }
  return hits;
}

bool SerdeL2AdapterWrapper::sources_cover(const Task& task, const Bitmap& loaded) {
  if (task.temp_objects.size() != loaded.size()) return false;
  for (std::size_t i : loaded.set_indices()) {
    if (!task.temp_objects[i]) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The drain: whichever thread sees steps end (the loop, or a submitter with finish_on_submit).

std::optional<SerdeL2AdapterWrapper::StepOutcome> SerdeL2AdapterWrapper::poll_step(
    const StepKey& key, const Task& task, std::map<TaskId, L2StoreResult>& stored) {
  StepOutcome outcome;
  try {
    switch (key.phase) {
      case Phase::kSerialize:
      case Phase::kDeserialize: {
        const std::optional<bool> ok = key.phase == Phase::kSerialize
                                           ? serde_->query_serialize_result(key.step_id)
                                           : serde_->query_deserialize_result(key.step_id);
        if (!ok) return std::nullopt;
        outcome.ok = *ok;
        break;
      }
      case Phase::kInnerStore: {
        auto it = stored.find(key.step_id);
        if (it == stored.end()) return std::nullopt;
        outcome.ok = it->second.is_successful();
        outcome.stored = it->second;
        break;
      }
      case Phase::kInnerLoad:
        if (!task.viewed) {
          std::optional<Bitmap> loaded = inner_->query_load_result(key.step_id);
          if (!loaded) return std::nullopt;
          outcome.loaded = std::move(*loaded);
        } else {
          std::optional<L2LoadViews> loaded = inner_->query_load_view_result(key.step_id);
          if (!loaded) return std::nullopt;
          outcome.loaded = std::move(loaded->loaded);
          outcome.views = std::move(loaded->views);
        }
        outcome.ok = true;
        break;
    }
  } catch (...) {
    // A query that throws ends the step as failed (a load: with a malformed, empty bitmap).
    outcome = StepOutcome();
  }
  return outcome;
}

void SerdeL2AdapterWrapper::drain(Phase phase) {
  // Inner stores are popped all at once; the others are asked for one by one.
  std::map<TaskId, L2StoreResult> stored;
  if (phase == Phase::kInnerStore) {
    stored = inner_->pop_completed_store_tasks();
    if (stored.empty()) return;
  }
  struct Waiting {
    StepKey key;
    TaskId id;
    Task* task;  // tasks never move, and only this thread advances or removes them
  };
  std::vector<Waiting> waiting;
  {
    std::lock_guard lock(mu_);
    for (auto it = steps_.lower_bound(StepKey{phase, 0});
         it != steps_.end() && it->first.phase == phase; ++it) {
      waiting.push_back(Waiting{it->first, it->second, tasks_.at(it->second).get()});
    }
  }
  for (Waiting& w : waiting) {
    std::optional<StepOutcome> outcome = poll_step(w.key, *w.task, stored);
    if (!outcome) continue;
    {
      std::lock_guard lock(mu_);
      steps_.erase(w.key);
    }
    advance(w.id, *w.task, std::move(*outcome));
  }
}

void SerdeL2AdapterWrapper::drain_on_submit(Phase phase) {
  // Not on the loop thread (a listener submitting from inside a drain): it holds drain_mu_.
  if (!options_.finish_on_submit || loop_->on_loop_thread()) return;
  // When the loop is draining (the inner's signal may have woken it already), wait for that
  // drain: it may be carrying this very task on, and is done with it when it lets go.
  std::lock_guard drain_lock(drain_mu_);
  {
    std::lock_guard lock(mu_);
    if (closing_) return;  // close() fails what is left
  }
  try {
    drain(phase);
  } catch (...) {
    // Only a component breaking its contract makes a drain throw. As on the loop, results the
    // drain had already taken are lost (close() fails their tasks); it is counted
    // (report_status()).
    submit_drain_exceptions_.fetch_add(1, std::memory_order_relaxed);
  }
}

// ---------------------------------------------------------------------------------------------
// Close.

void SerdeL2AdapterWrapper::close() {
  std::lock_guard close_lock(close_mu_);
  if (closed_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  // (1) Stop and join the loop promptly (it wakes itself through its own fd), and wait for a
  // submitter's drain (finish_on_submit) to end; none starts after closing_.
  loop_->stop();
  std::lock_guard drain(drain_mu_);
  // (2) Close the components we own; they stop touching temps before returning.
  close_quietly(*inner_);
  close_quietly(*serde_);
  // (3)+(4) Release every temp by phase, then fail every task still in flight exactly once.
  std::unordered_map<TaskId, TaskPtr> remaining;
  {
    std::lock_guard lock(mu_);
    remaining.swap(tasks_);
    steps_.clear();
  }
  for (auto& [id, task] : remaining) {
    leave_phase(*task);
    release_temps_by_phase(*task);
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [id, task] : remaining) publish_failure_locked(id, *task);
    // (5) Close our fds; results stay takeable.
    store_done_.close();
    load_done_.close();
  }
  closed_.store(true, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------
// Pass-through.

int SerdeL2AdapterWrapper::get_store_event_fd() const {
  check_open("get_store_event_fd");
  return store_done_.event_fd();
}

int SerdeL2AdapterWrapper::get_lookup_and_lock_event_fd() const {
  check_open("get_lookup_and_lock_event_fd");
  return inner_->get_lookup_and_lock_event_fd();
}

int SerdeL2AdapterWrapper::get_load_event_fd() const {
  check_open("get_load_event_fd");
  return load_done_.event_fd();
}

TaskId SerdeL2AdapterWrapper::submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) {
  check_open("submit_lookup_and_lock_task");
  return inner_->submit_lookup_and_lock_task(keys);
}

std::optional<Bitmap> SerdeL2AdapterWrapper::query_lookup_and_lock_result(TaskId id) {
  check_open("query_lookup_and_lock_result");
  return inner_->query_lookup_and_lock_result(id);
}

void SerdeL2AdapterWrapper::submit_unlock(const std::vector<ObjectKey>& keys) {
  check_open("submit_unlock");
  inner_->submit_unlock(keys);
}

void SerdeL2AdapterWrapper::delete_keys(const std::vector<ObjectKey>& keys) {
  check_open("delete_keys");
  inner_->delete_keys(keys);
}

AdapterUsage SerdeL2AdapterWrapper::get_usage() const {
  check_open("get_usage");
  return inner_->get_usage();
}

bool SerdeL2AdapterWrapper::supports_global_eviction() const {
  check_open("supports_global_eviction");
  return inner_->supports_global_eviction();
}

void SerdeL2AdapterWrapper::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  check_open("register_listener");
  inner_->register_listener(std::move(listener));
}

Json SerdeL2AdapterWrapper::report_status() const {
  check_open("report_status");
  Json status = inner_->report_status();
  status["serde_wrapped"] = true;
  status["serde_wrapper"] = metrics_.summary();
  status["serde_wrapper"]["inline"] = inline_.summary();
  status["serde_wrapper"]["finish_on_submit"] = options_.finish_on_submit;
  // Exceptions the loop caught from a drain: non-zero only when a component broke its contract.
  status["serde_wrapper"]["loop_exceptions"] = loop_->exceptions_swallowed();
  status["serde_wrapper"]["submit_drain_exceptions"] =
      submit_drain_exceptions_.load(std::memory_order_relaxed);
  return status;
}

}  // namespace lmcache
