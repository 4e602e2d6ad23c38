// SerdeL2AdapterWrapper (the contract is documented in serde_l2_adapter_wrapper.h): the store and
// load paths, their four drains and close(), which share one task table and its phase
// bookkeeping and keep the all-or-nothing promise only when read together. A task's serialized
// bytes (L1 temps or lent buffers) are reserved and released in
// serde_l2_adapter_wrapper_temps.cc.
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

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

// The serde's answer for one task; an exception from the query counts as a failed task.
template <class Query>
std::optional<bool> query_or_false(Query&& query) {
  try {
    return query();
  } catch (...) {
    return false;
  }
}

}  // namespace

// A loop step running `drain` under drain_mu_ (one drainer at a time).
std::function<void()> SerdeL2AdapterWrapper::under_drain_mu(
    void (SerdeL2AdapterWrapper::*drain)()) {
  return [this, drain] {
    std::lock_guard lock(drain_mu_);
    (this->*drain)();
  };
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
      std::vector<PollLoop::Step>{under_drain_mu(&SerdeL2AdapterWrapper::drain_serialize),
                                  under_drain_mu(&SerdeL2AdapterWrapper::drain_inner_store),
                                  under_drain_mu(&SerdeL2AdapterWrapper::drain_inner_load),
                                  under_drain_mu(&SerdeL2AdapterWrapper::drain_deserialize)},
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

template <typename Submit>
void SerdeL2AdapterWrapper::start_task(TaskId id, Task task, Phase phase, Release release,
                                       Submit&& submit) {
  std::lock_guard lock(mu_);
  auto fail = [&](const Task& failed) {
    metrics_.task_finished(failed.is_store, false);
    if (failed.is_store) {
      store_done_.complete(id, L2StoreResult::failure());
    } else {
      load_done_.complete(id, Bitmap(failed.keys.size()));
    }
  };
  if (closing_) {
    (this->*release)(task);
    fail(task);
    return;
  }
  Task* added = nullptr;
  try {
    // reserve() first, so that emplace can only fail allocating its node, before the move.
    tasks_.reserve(tasks_.size() + 1);
    added = &tasks_.emplace(id, std::move(task)).first->second;
  } catch (...) {
    (this->*release)(task);  // out of memory: the caller gets std::bad_alloc
    throw;
  }
  Task& t = *added;
  enter_phase(t, phase);
  try {
    submit(t);  // under mu_, so the loop cannot look the step's id up before it is mapped
  } catch (...) {
    leave_phase(t);
    (this->*release)(t);
    fail(t);
    tasks_.erase(id);
  }
}

// ---------------------------------------------------------------------------------------------
// Store path.

TaskId SerdeL2AdapterWrapper::submit_store_task(const std::vector<ObjectKey>& keys,
                                                const std::vector<MemoryObjPtr>& objects) {
  check_open("submit_store_task");
  validate_batch("submit_store_task", keys, objects);
  const TaskId id = ids_.next();
  if (keys.empty()) {
    finish_store(id, L2StoreResult::success(0));
    return id;
  }
  Task task;
  task.is_store = true;
  task.keys = keys;
  // Buffers the inner adapter lends (the serializer writes the stored bytes in place, the inner
  // keeps them without a copy), else temps in L1.
  const std::optional<MemoryLayoutDesc> serialized = serialized_layout(objects[0]->layout());
  if (!serialized || (!borrow_store_buffers(task, *serialized) &&
                      !allocate_temps(task, *serialized, /*zero_fill=*/false))) {
    finish_store(id, L2StoreResult::failure());
    return id;
  }
  const std::size_t wide_bytes = objects[0]->layout().total_bytes() * objects.size();
  task.serde_bytes = wide_bytes;
  if (inline_.runs_inline(InlinePolicy::Step::kSerialize, wide_bytes)) {
    const Clock::time_point started = Clock::now();
    std::optional<bool> serialized;
    try {
      serialized = serde_->serialize_inline(objects, task.temp_objects, keys);
    } catch (...) {
      serialized = false;  // all or nothing, as a failed submitted serialize
    }
    if (serialized) {
      const Clock::duration took = Clock::now() - started;
      if (*serialized) inline_.observe(InlinePolicy::Step::kSerialize, wide_bytes, took);
      metrics_.enter(WrapperStep::kSerialize);
      metrics_.leave(WrapperStep::kSerialize, took);
      metrics_.inline_step(WrapperStep::kSerialize);
      return continue_inline_store(id, std::move(task), *serialized);
    }
  }
  start_task(id, std::move(task), Phase::kSerialize,
             &SerdeL2AdapterWrapper::release_write_locked_temps, [&](Task& t) {
               const TaskId serde_id =
                   serde_->submit_serialize(objects, t.temp_objects, keys);  // the original keys
               serialize_to_task_.emplace(serde_id, id);
             });
  return id;
}

TaskId SerdeL2AdapterWrapper::continue_inline_store(TaskId id, Task task, bool serialized) {
  bool read_locked = false;
  try {
    if (serialized &&
        (task.lent || all_succeeded(l1_->finish_write_and_reserve_read(task.temp_keys)))) {
      read_locked = true;
    } else if (serialized) {
      l1_->finish_read(task.temp_keys);  // someone touched our temps
    }
  } catch (...) {
    // L1 closed under us: fail below.
  }
  if (!read_locked) {
    release_write_locked_temps(task);
    finish_store(id, L2StoreResult::failure());
    return id;
  }
  start_task(id, std::move(task), Phase::kInnerStore,
             &SerdeL2AdapterWrapper::release_read_locked_temps, [&](Task& t) {
               const TaskId inner_id = inner_->submit_store_task(t.keys, t.temp_objects);
               inner_store_to_task_.emplace(inner_id, id);
             });
  drain_on_submit(/*store=*/true);
  return id;
}

void SerdeL2AdapterWrapper::drain_on_submit(bool store) {
  // Not on the loop thread (a listener submitting from inside a drain): it holds drain_mu_.
  if (!options_.finish_on_submit || loop_->on_loop_thread()) return;
  // When the loop is draining (the inner's signal may have woken it already), wait for that
  // drain: it may be carrying this very task on, and is done with it when it lets go.
  std::lock_guard drain(drain_mu_);
  {
    std::lock_guard lock(mu_);
    if (closing_) return;  // close() fails what is left
  }
  try {
    if (store) {
      drain_inner_store();
    } else {
      drain_inner_load();
    }
  } catch (...) {
    // Only a component breaking its contract makes a drain throw. As on the loop, results the
    // drain had already taken are lost (close() fails their tasks); it is counted
    // (report_status()).
    submit_drain_exceptions_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::map<TaskId, L2StoreResult> SerdeL2AdapterWrapper::pop_completed_store_tasks() {
  return store_done_.take_all();
}

void SerdeL2AdapterWrapper::drain_serialize() {
  std::vector<std::pair<TaskId, TaskId>> pending;
  {
    std::lock_guard lock(mu_);
    pending.assign(serialize_to_task_.begin(), serialize_to_task_.end());
  }
  for (auto [serde_id, id] : pending) {
    // A query that throws fails its task (all or nothing), like a false result.
    std::optional<bool> ok =
        query_or_false([&] { return serde_->query_serialize_result(serde_id); });
    if (!ok) continue;
    Task* task;
    {
      std::lock_guard lock(mu_);
      serialize_to_task_.erase(serde_id);
      task = &tasks_.at(id);  // nodes stay put; only this thread erases from here on
    }
    const Clock::duration took = leave_phase(*task);
    if (*ok) inline_.observe_submitted(InlinePolicy::Step::kSerialize, task->serde_bytes, took);
    // Whatever throws from here on (an L1 call after L1's close(), an allocation) still
    // completes the store as failed, exactly once, with its temps released and its phase left.
    bool read_locked = false;
    bool in_inner_store = false;
    bool failed = false;
    try {
      if (!*ok) {
        failed = true;
      } else if (!task->lent &&
                 !all_succeeded(l1_->finish_write_and_reserve_read(task->temp_keys))) {
        // Someone touched our temps: release them from whichever state they are in.
        l1_->finish_read(task->temp_keys);
        failed = true;
      } else {
        read_locked = true;
        enter_phase(*task, Phase::kInnerStore);
        in_inner_store = true;
        TaskId inner_id = inner_->submit_store_task(task->keys, task->temp_objects);
        std::lock_guard lock(mu_);
        inner_store_to_task_.emplace(inner_id, id);
      }
    } catch (...) {
      failed = true;
    }
    if (!failed) continue;
    if (in_inner_store) leave_phase(*task);
    if (read_locked) {
      release_read_locked_temps(*task);
    } else {
      release_write_locked_temps(*task);
    }
    finish_store(id, L2StoreResult::failure());
  }
}

void SerdeL2AdapterWrapper::drain_inner_store() {
  for (auto& [inner_id, result] : inner_->pop_completed_store_tasks()) {
    Task* task;
    TaskId id;
    {
      std::lock_guard lock(mu_);
      auto it = inner_store_to_task_.find(inner_id);
      if (it == inner_store_to_task_.end()) continue;  // not ours (cannot happen with a sane inner)
      id = it->second;
      inner_store_to_task_.erase(it);
      task = &tasks_.at(id);
    }
    leave_phase(*task);
    release_read_locked_temps(*task);
    finish_store(id, result.is_successful() ? L2StoreResult::success(result.bytes_transferred())
                                            : L2StoreResult::failure());
  }
}

// ---------------------------------------------------------------------------------------------
// Load path.

TaskId SerdeL2AdapterWrapper::submit_load_task(const std::vector<ObjectKey>& keys,
                                               const std::vector<MemoryObjPtr>& objects) {
  check_open("submit_load_task");
  validate_batch("submit_load_task", keys, objects);
  const TaskId id = ids_.next();
  if (keys.empty()) {
    finish_load(id, Bitmap(0), /*failed=*/false);
    return id;
  }
  Task task;
  task.is_store = false;
  task.keys = keys;
  task.dst_objects = objects;
  if (inner_views_) {
    // The inner lends its stored bytes: the deserializer reads them in place, no temps.
    task.viewed = true;
    start_task(id, std::move(task), Phase::kInnerLoad,
               &SerdeL2AdapterWrapper::release_write_locked_temps, [&](Task&) {
                 const TaskId inner_id = inner_->submit_load_view_task(keys);
                 inner_load_to_task_.emplace(inner_id, id);
               });
    drain_on_submit(/*store=*/false);
    return id;
  }
  const std::optional<MemoryLayoutDesc> serialized = serialized_layout(objects[0]->layout());
  if (!serialized || !allocate_temps(task, *serialized, /*zero_fill=*/true)) {
    finish_load(id, Bitmap(keys.size()), /*failed=*/true);
    return id;
  }
  start_task(id, std::move(task), Phase::kInnerLoad,
             &SerdeL2AdapterWrapper::release_write_locked_temps, [&](Task& t) {
               const TaskId inner_id = inner_->submit_load_task(keys, t.temp_objects);
               inner_load_to_task_.emplace(inner_id, id);
             });
  drain_on_submit(/*store=*/false);
  return id;
}

std::optional<Bitmap> SerdeL2AdapterWrapper::query_load_result(TaskId id) {
  return load_done_.take(id);
}

void SerdeL2AdapterWrapper::drain_inner_load() {
  std::vector<std::pair<TaskId, TaskId>> pending;
  {
    std::lock_guard lock(mu_);
    pending.assign(inner_load_to_task_.begin(), inner_load_to_task_.end());
  }
  for (auto [inner_id, id] : pending) {
    Task* task;
    {
      std::lock_guard lock(mu_);
      task = &tasks_.at(id);  // nodes stay put; only this thread erases from here on
    }
    std::optional<Bitmap> loaded;
    std::vector<MemoryObjPtr> views;
    try {
      if (!task->viewed) {
        loaded = inner_->query_load_result(inner_id);
      } else if (std::optional<L2LoadViews> r = inner_->query_load_view_result(inner_id)) {
        loaded = std::move(r->loaded);
        views = std::move(r->views);
      }
    } catch (...) {
      loaded = Bitmap();  // a malformed answer: deserialize_loaded() fails the load
    }
    if (!loaded) continue;
    {
      std::lock_guard lock(mu_);
      inner_load_to_task_.erase(inner_id);
    }
    leave_phase(*task);
    if (task->viewed) task->temp_objects = std::move(views);  // the deserializer's sources
    deserialize_loaded(id, *task, std::move(*loaded));
  }
}

bool SerdeL2AdapterWrapper::sources_cover(const Task& task, const Bitmap& loaded) {
  if (task.temp_objects.size() != loaded.size()) return false;
  for (std::size_t i : loaded.set_indices()) {
    if (!task.temp_objects[i]) return false;
  }
  return true;
}

void SerdeL2AdapterWrapper::deserialize_loaded(TaskId id, Task& task, Bitmap loaded) {
  const std::size_t n = task.keys.size();
  // What to finish the load with here; nothing when the serde took it.
  std::optional<Bitmap> result;
  bool failed = true;
  bool in_deserialize = false;
  try {
    if (loaded.size() != n || !sources_cover(task, loaded)) {
      result = Bitmap(n);  // a malformed bitmap, or a hit without its view: the load fails
    } else if (loaded.none()) {
      result = std::move(loaded);  // every key absent: a miss, not a failure
      failed = false;
    } else {
      std::vector<MemoryObjPtr> srcs, dsts;
      std::vector<ObjectKey> keys;  // the original keys, never the temps' (docs/serde.md)
      const std::vector<std::size_t> hits = loaded.set_indices();
      srcs.reserve(hits.size());
      dsts.reserve(hits.size());
      keys.reserve(hits.size());
      std::size_t loaded_bytes = 0;
      for (std::size_t i : hits) {
        srcs.push_back(task.temp_objects[i]);
        dsts.push_back(task.dst_objects[i]);
        keys.push_back(task.keys[i]);
        loaded_bytes += task.temp_objects[i]->size();
      }
      task.inner_bitmap = std::move(loaded);
      task.serde_bytes = loaded_bytes;
      enter_phase(task, Phase::kDeserialize);
      in_deserialize = true;
      // Small enough: on this thread, no hand-off to a serde worker and back (nullopt: the
      // processor does not run tasks inline). All or nothing, as a submitted deserialize: a
      // throw fails it.
      std::optional<bool> inline_ok;
      if (inline_.runs_inline(InlinePolicy::Step::kDeserialize, loaded_bytes)) {
        const Clock::time_point started = Clock::now();
        try {
          inline_ok = serde_->deserialize_inline(srcs, dsts, keys);
        } catch (...) {
          inline_ok = false;
        }
        if (inline_ok.value_or(false)) {
          inline_.observe(InlinePolicy::Step::kDeserialize, loaded_bytes, Clock::now() - started);
        }
      }
      if (!inline_ok) {
        const TaskId serde_id =
            serde_->submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
        std::lock_guard lock(mu_);
        deserialize_to_task_.emplace(serde_id, id);
        return;  // drain_deserialize() finishes it
      }
      metrics_.inline_step(WrapperStep::kDeserialize);
      failed = !*inline_ok;
      result = *inline_ok ? std::move(task.inner_bitmap) : Bitmap(n);
    }
  } catch (...) {
    // An allocation, or the serde refusing the submit: the load fails.
    failed = true;
    result.reset();
  }
  if (in_deserialize) leave_phase(task);
  release_write_locked_temps(task);
  finish_load(id, result ? std::move(*result) : Bitmap(n), failed);
}

void SerdeL2AdapterWrapper::drain_deserialize() {
  std::vector<std::pair<TaskId, TaskId>> pending;
  {
    std::lock_guard lock(mu_);
    pending.assign(deserialize_to_task_.begin(), deserialize_to_task_.end());
  }
  for (auto [serde_id, id] : pending) {
    std::optional<bool> ok =
        query_or_false([&] { return serde_->query_deserialize_result(serde_id); });
    if (!ok) continue;
    Task* task;
    {
      std::lock_guard lock(mu_);
      deserialize_to_task_.erase(serde_id);
      task = &tasks_.at(id);
    }
    const Clock::duration took = leave_phase(*task);
    if (*ok) inline_.observe_submitted(InlinePolicy::Step::kDeserialize, task->serde_bytes, took);
    release_write_locked_temps(*task);
    if (*ok) {
      finish_load(id, std::move(task->inner_bitmap), /*failed=*/false);
    } else {
      finish_load(id, Bitmap(task->keys.size()), /*failed=*/true);
    }
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
  try {
    inner_->close();
  } catch (...) {
  }
  try {
    serde_->close();
  } catch (...) {
  }
  // (3)+(4) Release every temp by phase, then fail every task still in flight exactly once.
  std::unordered_map<TaskId, Task> remaining;
  {
    std::lock_guard lock(mu_);
    remaining.swap(tasks_);
    serialize_to_task_.clear();
    inner_store_to_task_.clear();
    inner_load_to_task_.clear();
    deserialize_to_task_.clear();
  }
  for (auto& [id, task] : remaining) {
    leave_phase(task);
    release_temps_by_phase(task);
  }
  {
    std::lock_guard lock(mu_);
    for (auto& [id, task] : remaining) {
      metrics_.task_finished(task.is_store, false);
      if (task.is_store) {
        store_done_.complete(id, L2StoreResult::failure());
      } else {
        load_done_.complete(id, Bitmap(task.keys.size()));
      }
    }
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
