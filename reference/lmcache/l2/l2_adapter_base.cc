// L2AdapterBase (the contract is in l2_adapter_base.h).
#include "lmcache/l2/l2_adapter_base.h"

#include <stdexcept>
#include <utility>

namespace lmcache {

const char* L2AdapterBase::kind_name(Kind kind) {
  static constexpr const char* kNames[] = {"store", "lookup", "load", "view load"};
  return kNames[static_cast<std::size_t>(kind)];
}

L2AdapterBase::L2AdapterBase(std::string name) : name_(std::move(name)) {}

void L2AdapterBase::check_open(const char* what) const {
  if (closing()) throw_closed(what);
}

void L2AdapterBase::throw_closed(const char* what) const {
  throw std::logic_error(name_ + "::" + what + " after close()");
}

void L2AdapterBase::check_batch(const char* what, const std::vector<ObjectKey>& keys,
                                const std::vector<MemoryObjPtr>& objects) const {
  if (keys.size() != objects.size()) {
    throw std::invalid_argument(name_ + "::" + what + ": " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(objects.size()) + " objects");
  }
  for (std::size_t i = 0; i < objects.size(); ++i) {
    if (!objects[i]) {
      throw std::invalid_argument(name_ + "::" + what + ": objects[" + std::to_string(i) +
                                  "] is null");
    }
  }
}

template <class Start>
TaskId L2AdapterBase::start_task(Kind kind, std::size_t keys, Start&& start) {
  const TaskId id = ids_.next();
  {
    std::lock_guard lock(mu_);
    pending_.emplace(id, Pending{kind, keys});
  }
  try {
    start(id);
  } catch (...) {
    std::lock_guard lock(mu_);
    pending_.erase(id);  // a task its submit refused is no task
    throw;
  }
  return id;
}

TaskId L2AdapterBase::submit_store_task(const std::vector<ObjectKey>& keys,
                                        const std::vector<MemoryObjPtr>& objects) {
  check_batch("submit_store_task", keys, objects);
  check_open("submit_store_task");
  return start_task(Kind::kStore, keys.size(), [&](TaskId id) { do_store(id, keys, objects); });
}

TaskId L2AdapterBase::submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) {
  check_open("submit_lookup_and_lock_task");
  return start_task(Kind::kLookup, keys.size(), [&](TaskId id) { do_lookup_and_lock(id, keys); });
}

TaskId L2AdapterBase::submit_load_task(const std::vector<ObjectKey>& keys,
                                       const std::vector<MemoryObjPtr>& objects) {
  check_batch("submit_load_task", keys, objects);
  check_open("submit_load_task");
  return start_task(Kind::kLoad, keys.size(), [&](TaskId id) { do_load(id, keys, objects); });
}

TaskId L2AdapterBase::submit_load_view_task(const std::vector<ObjectKey>& keys) {
  if (!supports_load_views()) return L2AdapterInterface::submit_load_view_task(keys);
  check_open("submit_load_view_task");
  return start_task(Kind::kLoadView, keys.size(), [&](TaskId id) { do_load_view(id, keys); });
}

void L2AdapterBase::do_load_view(TaskId id, const std::vector<ObjectKey>& keys) {
  (void)id;
  L2AdapterInterface::submit_load_view_task(keys);  // throws: no views
}

void L2AdapterBase::submit_unlock(const std::vector<ObjectKey>& keys) {
  check_open("submit_unlock");
  do_unlock(keys);
}

void L2AdapterBase::delete_keys(const std::vector<ObjectKey>& keys) {
  check_open("delete_keys");
  do_delete(keys);
}

std::map<TaskId, L2StoreResult> L2AdapterBase::pop_completed_store_tasks() {
  return store_done_.take_all();
}

std::optional<Bitmap> L2AdapterBase::query_lookup_and_lock_result(TaskId id) {
  return lookup_done_.take(id);
}

std::optional<Bitmap> L2AdapterBase::query_load_result(TaskId id) {
  auto outcome = load_done_.take_if(id, [](const LoadOutcome& o) { return !o.views; });
  if (!outcome) return std::nullopt;
  return std::move(outcome->bits);
}

std::optional<L2LoadViews> L2AdapterBase::query_load_view_result(TaskId id) {
  auto outcome = load_done_.take_if(id, [](const LoadOutcome& o) { return o.views.has_value(); });
  if (!outcome) return std::nullopt;
  return L2LoadViews{std::move(outcome->bits), std::move(*outcome->views)};
}

std::optional<L2AdapterBase::Kind> L2AdapterBase::finish_locked(TaskId id, Kind kind,
                                                                std::size_t keys) {
  if (queues_closed_) return std::nullopt;
  auto it = pending_.find(id);
  // A bitmap completes a lookup or a load: the pending task says which.
  const bool accepted =
      it != pending_.end() &&
      (it->second.kind == kind || (kind == Kind::kLoad && it->second.kind == Kind::kLookup));
  if (!accepted) {
    throw std::logic_error(
        name_ + ": completed task " + std::to_string(id) + " as a " + kind_name(kind) +
        ", but no such task is pending (completed twice, never submitted, or of another kind)");
  }
  const Kind found = it->second.kind;
  if (found != Kind::kStore && it->second.keys != keys) {
    throw std::logic_error(name_ + ": " + kind_name(found) + " task " + std::to_string(id) +
                           " has " + std::to_string(it->second.keys) + " keys but completed with " +
                           std::to_string(keys) + " bits");
  }
  pending_.erase(it);
  return found;
}

void L2AdapterBase::complete(TaskId id, L2StoreResult result) {
  std::lock_guard lock(mu_);
  if (finish_locked(id, Kind::kStore, 0)) store_done_.complete(id, result);
}

void L2AdapterBase::complete(TaskId id, Bitmap bits) {
  std::lock_guard lock(mu_);
  const std::optional<Kind> kind = finish_locked(id, Kind::kLoad, bits.size());
  if (!kind) return;
  if (*kind == Kind::kLookup) {
    lookup_done_.complete(id, std::move(bits));
  } else {
    load_done_.complete(id, LoadOutcome{std::move(bits), std::nullopt});
  }
}

void L2AdapterBase::complete(TaskId id, L2LoadViews views) {
  std::lock_guard lock(mu_);
  if (queues_closed_) return;
  if (views.views.size() != views.loaded.size()) {
    throw std::logic_error(name_ + ": view load task " + std::to_string(id) + " completed with " +
                           std::to_string(views.loaded.size()) + " bits but " +
                           std::to_string(views.views.size()) + " views");
  }
  if (!finish_locked(id, Kind::kLoadView, views.loaded.size())) return;
  load_done_.complete(id, LoadOutcome{std::move(views.loaded), std::move(views.views)});
}

std::size_t L2AdapterBase::pending_task_count() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

void L2AdapterBase::close() {
  std::lock_guard close_lock(close_mu_);
  if (close_done_) return;
  closing_.store(true, std::memory_order_release);
  try {
    do_close();
  } catch (...) {
    closing_.store(false, std::memory_order_release);  // still open: the caller may retry
    throw;
  }
  {
    std::lock_guard lock(mu_);
    queues_closed_ = true;
    pending_.clear();  // dropped, never signalled
    store_done_.close();
    lookup_done_.close();
    load_done_.close();
  }
  close_done_ = true;
}

}  // namespace lmcache
