#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/core/poll_loop.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache {
namespace {

bool all_succeeded(const std::vector<L1Result>& results) {
  for (const auto& r : results) {
    if (r.error != L1Error::kSuccess) return false;
  }
  return true;
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

SerdeL2AdapterWrapper::SerdeL2AdapterWrapper(L2AdapterPtr inner, SerdeProcessorPtr serde,
                                             std::shared_ptr<L1Manager> l1,
                                             SerdeWrapperOptions options)
    : inner_(std::move(inner)),
      serde_(std::move(serde)),
      l1_(std::move(l1)),
      options_(std::move(options)),
      metrics_(options_.metrics_registry, options_.metrics_labels) {
  if (!inner_ || !serde_ || !l1_) {
    throw std::invalid_argument(
        "SerdeL2AdapterWrapper needs an inner adapter, a serde processor and an L1Manager "
        "(got a null " +
        std::string(!inner_   ? "inner adapter"
                    : !serde_ ? "serde processor"
                              : "L1Manager") +
        ")");
  }
  loop_ = std::make_unique<PollLoop>(
      std::vector<int>{inner_->get_store_event_fd(), inner_->get_load_event_fd(),
                       serde_->get_serialize_event_fd(), serde_->get_deserialize_event_fd()},
      std::vector<PollLoop::Step>{[this] { drain_serialize(); }, [this] { drain_inner_store(); },
                                  [this] { drain_inner_load(); }, [this] { drain_deserialize(); }},
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

bool SerdeL2AdapterWrapper::allocate_temps(Task& task, const MemoryLayoutDesc& layout) {
  try {
    MemoryLayoutDesc temp_layout = serialized_layout_desc(layout, *serde_);
    task.temp_keys.reserve(task.keys.size());
    for (const auto& key : task.keys) task.temp_keys.push_back(make_temp_key(key));
    auto results = l1_->reserve_write(task.temp_keys, std::vector<bool>(task.keys.size(), true),
                                      temp_layout, ReserveMode::kNew);
    if (!all_succeeded(results)) {
      // All or nothing: release the temps that were reserved.
      std::vector<ObjectKey> reserved;
      for (std::size_t i = 0; i < results.size(); ++i) {
        if (results[i].error == L1Error::kSuccess) reserved.push_back(task.temp_keys[i]);
      }
      if (!reserved.empty()) {
        l1_->finish_write(reserved);
        l1_->delete_keys(reserved);
      }
      task.temp_keys.clear();
      return false;
    }
    task.temp_objects.reserve(results.size());
    for (auto& r : results) task.temp_objects.push_back(std::move(r.obj));
    task.temp_bytes = static_cast<std::uint64_t>(temp_layout.total_bytes()) * task.keys.size();
    metrics_.temp_bytes_reserved(task.temp_bytes);
    return true;
  } catch (...) {
    // An estimate, key generation or L1 failure: nothing was reserved (reserve_write is atomic).
    task.temp_keys.clear();
    task.temp_objects.clear();
    return false;
  }
}

void SerdeL2AdapterWrapper::release_write_locked_temps(Task& task) {
  if (task.temp_keys.empty()) return;
  try {
    l1_->finish_write(task.temp_keys);
    l1_->delete_keys(task.temp_keys);
  } catch (...) {
    // L1 closed under us: nothing left to release.
  }
  metrics_.temp_bytes_released(task.temp_bytes);
  task.temp_keys.clear();
  task.temp_objects.clear();
  task.temp_bytes = 0;
}

void SerdeL2AdapterWrapper::release_read_locked_temps(Task& task) {
  if (task.temp_keys.empty()) return;
  try {
    l1_->finish_read(task.temp_keys);  // temporaries delete themselves on their last read
  } catch (...) {
  }
  metrics_.temp_bytes_released(task.temp_bytes);
  task.temp_keys.clear();
  task.temp_objects.clear();
  task.temp_bytes = 0;
}

void SerdeL2AdapterWrapper::release_temps_by_phase(Task& task) {
  if (task.phase == Phase::kInnerStore) {
    release_read_locked_temps(task);
  } else {
    release_write_locked_temps(task);
  }
}

void SerdeL2AdapterWrapper::enter_phase(Task& task, Phase phase) {
  task.phase = phase;
  task.phase_started = Clock::now();
  metrics_.enter(step_of(static_cast<int>(phase)));
}

void SerdeL2AdapterWrapper::leave_phase(Task& task) {
  metrics_.leave(step_of(static_cast<int>(task.phase)), Clock::now() - task.phase_started);
}

void SerdeL2AdapterWrapper::finish_store(TaskId id, L2StoreResult result) {
  std::lock_guard lock(mu_);
  tasks_.erase(id);
  metrics_.task_finished(/*is_store=*/true, result.is_successful());
  store_done_.complete(id, result);
}

void SerdeL2AdapterWrapper::finish_load(TaskId id, Bitmap result) {
  std::lock_guard lock(mu_);
  tasks_.erase(id);
  metrics_.task_finished(/*is_store=*/false, result.popcount() > 0 || result.size() == 0);
  load_done_.complete(id, std::move(result));
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
  if (!allocate_temps(task, objects[0]->layout())) {
    finish_store(id, L2StoreResult::failure());
    return id;
  }
  std::lock_guard lock(mu_);
  if (closing_) {
    release_write_locked_temps(task);
    metrics_.task_finished(true, false);
    store_done_.complete(id, L2StoreResult::failure());
    return id;
  }
  Task& t = tasks_.emplace(id, std::move(task)).first->second;
  enter_phase(t, Phase::kSerialize);
  try {
    TaskId serde_id = serde_->submit_serialize(objects, t.temp_objects, keys);  // the original keys
    serialize_to_task_.emplace(serde_id, id);
  } catch (...) {
    leave_phase(t);
    release_write_locked_temps(t);
    tasks_.erase(id);
    metrics_.task_finished(true, false);
    store_done_.complete(id, L2StoreResult::failure());
  }
  return id;
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
    leave_phase(*task);
    if (!*ok) {
      release_write_locked_temps(*task);
      finish_store(id, L2StoreResult::failure());
      continue;
    }
    auto moved = l1_->finish_write_and_reserve_read(task->temp_keys);
    if (!all_succeeded(moved)) {
      // Someone touched our temps: release them from whichever state they are in.
      l1_->finish_read(task->temp_keys);
      release_write_locked_temps(*task);
      finish_store(id, L2StoreResult::failure());
      continue;
    }
    enter_phase(*task, Phase::kInnerStore);
    try {
      TaskId inner_id = inner_->submit_store_task(task->keys, task->temp_objects);
      std::lock_guard lock(mu_);
      inner_store_to_task_.emplace(inner_id, id);
    } catch (...) {
      leave_phase(*task);
      release_read_locked_temps(*task);
      finish_store(id, L2StoreResult::failure());
    }
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
    finish_load(id, Bitmap(0));
    return id;
  }
  Task task;
  task.is_store = false;
  task.keys = keys;
  task.dst_objects = objects;
  if (!allocate_temps(task, objects[0]->layout())) {
    finish_load(id, Bitmap(keys.size()));
    return id;
  }
  std::lock_guard lock(mu_);
  if (closing_) {
    release_write_locked_temps(task);
    metrics_.task_finished(false, false);
    load_done_.complete(id, Bitmap(keys.size()));
    return id;
  }
  Task& t = tasks_.emplace(id, std::move(task)).first->second;
  enter_phase(t, Phase::kInnerLoad);
  try {
    TaskId inner_id = inner_->submit_load_task(keys, t.temp_objects);
    inner_load_to_task_.emplace(inner_id, id);
  } catch (...) {
    leave_phase(t);
    release_write_locked_temps(t);
    tasks_.erase(id);
    metrics_.task_finished(false, false);
    load_done_.complete(id, Bitmap(keys.size()));
  }
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
    std::optional<Bitmap> loaded;
    try {
      loaded = inner_->query_load_result(inner_id);
    } catch (...) {
      loaded = Bitmap();  // a malformed answer: the size check below fails the load
    }
    if (!loaded) continue;
    Task* task;
    {
      std::lock_guard lock(mu_);
      inner_load_to_task_.erase(inner_id);
      task = &tasks_.at(id);
    }
    leave_phase(*task);
    const std::size_t n = task->keys.size();
    if (loaded->size() != n || loaded->none()) {
      // Nothing to deserialize (or a malformed bitmap, treated as a failed load).
      release_write_locked_temps(*task);
      finish_load(id, loaded->size() == n ? std::move(*loaded) : Bitmap(n));
      continue;
    }
    std::vector<MemoryObjPtr> srcs, dsts;
    std::vector<ObjectKey> keys;  // the original keys, never the temps' (docs/serde.md)
    for (std::size_t i : loaded->set_indices()) {
      srcs.push_back(task->temp_objects[i]);
      dsts.push_back(task->dst_objects[i]);
      keys.push_back(task->keys[i]);
    }
    task->inner_bitmap = std::move(*loaded);
    enter_phase(*task, Phase::kDeserialize);
    try {
      TaskId serde_id =
          serde_->submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
      std::lock_guard lock(mu_);
      deserialize_to_task_.emplace(serde_id, id);
    } catch (...) {
      leave_phase(*task);
      release_write_locked_temps(*task);
      finish_load(id, Bitmap(n));
    }
  }
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
    leave_phase(*task);
    release_write_locked_temps(*task);
    finish_load(id, *ok ? std::move(task->inner_bitmap) : Bitmap(task->keys.size()));
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
  // (1) Stop and join the loop promptly (it wakes itself through its own fd).
  loop_->stop();
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
  // Exceptions the loop caught from a drain: non-zero only when a component broke its contract.
  status["serde_wrapper"]["loop_exceptions"] = loop_->exceptions_swallowed();
  return status;
}

}  // namespace lmcache
