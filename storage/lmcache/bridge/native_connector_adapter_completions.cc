// NativeConnectorL2Adapter's completion side: connector errors, the completion of each connector
// batch and of the tasks it settles, deadlines, and the loop that drives them. The submit side,
// the tables and close() are in native_connector_adapter.cc; both work under the one mutex, mu_
// (the file comment there says how).
#include <poll.h>

#include <stdexcept>

#include "lmcache/bridge/internal/bridge_keys.h"
#include "lmcache/bridge/internal/native_connector_tasks.h"
#include "lmcache/bridge/native_connector_adapter.h"

namespace lmcache::bridge {
namespace {

constexpr std::size_t kMaxEarlyCompletions = 4096;

// What is wrong with an ok completion whose result_bytes are not one 0/1 flag per key.
std::string shape_error(const Completion& c, std::size_t keys) {
  return "an ok completion with " + std::to_string(c.result_bytes.size()) + " result bytes for " +
         std::to_string(keys) + " keys (one 0/1 flag per key expected)";
}

// Per-key flags of a completion covering `n` keys: the flags when there is one per key, else
// nullopt (a failed batch, or one without per-key results).
const std::vector<std::uint8_t>* per_key(const Completion& c, std::size_t n) {
  return c.ok && c.result_bytes.size() == n ? &c.result_bytes : nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Connector errors, for diagnosis.

const char* NativeConnectorL2Adapter::op_name(Op op) {
  switch (op) {
    case Op::kSet:
      return "set";
    case Op::kGet:
      return "get";
    case Op::kExists:
      return "exists";
    case Op::kDelete:
      return "delete";
  }
  return "?";
}

void NativeConnectorL2Adapter::record_connector_error_locked(std::string op,
                                                             std::uint64_t future_id,
                                                             const std::vector<ObjectKey>& keys,
                                                             const std::vector<std::size_t>* idx,
                                                             const std::vector<std::uint64_t>* lens,
                                                             std::string error, Outbox& out) {
  ConnectorError e;
  e.op = std::move(op);
  e.future_id = future_id;
  e.key_count = idx != nullptr ? idx->size() : keys.size();
  for (std::size_t j = 0; j < e.key_count && j < ConnectorError::kMaxKeys; ++j) {
    const std::size_t i = idx != nullptr ? (*idx)[j] : j;
    if (i >= keys.size()) break;
    e.keys.push_back(codec_.encode(keys[i]));
    if (lens != nullptr && i < lens->size()) e.sizes.push_back((*lens)[i]);
  }
  e.error = std::move(error);
  ++stats_.connector_errors;
  if (!first_error_) first_error_ = e;
  last_error_ = e;
  if (options_.on_connector_error) {
    out.add([cb = options_.on_connector_error, e = std::move(e)] {
      try {
        cb(e);
      } catch (...) {
        // The observer is a diagnosis hook: its failure must not fail a task.
      }
    });
  }
}

std::optional<ConnectorError> NativeConnectorL2Adapter::first_connector_error() const {
  std::lock_guard lock(mu_);
  return first_error_;
}

CircuitBreakerState NativeConnectorL2Adapter::breaker_state() const {
  std::lock_guard lock(mu_);
  return breaker_.state(Clock::now());
}

std::optional<ConnectorError> NativeConnectorL2Adapter::last_connector_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

// ---------------------------------------------------------------------------------------------
// Completions.

void NativeConnectorL2Adapter::on_batch_done(Batch batch, const Completion& c, Outbox& out,
                                             std::vector<Submission>& follow) {
  if (batch.op == Op::kDelete) {
    // Whoever submitted it, a confirmed delete lifts one tombstone of each of its keys.
    if (c.ok) {
      for (const ObjectKey& key : batch.keys) keys_->untombstone(key);
    } else {
      ++stats_.cleanup_failures;
    }
  }
  auto it = tasks_.find(batch.task);
  if (!c.ok || !c.error.empty()) {
    std::string what = c.error.empty() ? "completed not ok, with no error text" : c.error;
    const bool sized = batch.op == Op::kGet || batch.op == Op::kSet;
    if (it != tasks_.end()) {
      record_connector_error_locked(op_name(batch.op), c.future_id, it->second.keys, &batch.idx,
                                    sized ? &it->second.lens : nullptr, std::move(what), out);
    } else {
      record_connector_error_locked(op_name(batch.op), c.future_id, batch.keys, nullptr, nullptr,
                                    std::move(what), out);
    }
  }
  if (it != tasks_.end()) {
    record_breaker_locked(it->second, (!c.ok || !c.error.empty()) && is_connection_error(c.error));
  }
  if (it == tasks_.end()) {
    // Abandoned: its task is gone (deadline, or an orphan cleanup). A late set may have written
    // its keys, which were tombstoned when the task failed: delete them now.
    if (batch.op == Op::kSet && supports_delete_ && !closed_) {
      ++stats_.cleanup_deletes;
      follow.push_back(cleanup_submission_locked(0, std::move(batch.keys)));
    }
    return;
  }
  const std::uint64_t serial = it->first;
  Task& task = it->second;
  switch (batch.op) {
    case Op::kSet:
      if (!c.ok) task.failed = true;
      task.settled.insert(task.settled.end(), batch.idx.begin(), batch.idx.end());
      if (--task.pending == 0) finish_store_locked(serial, out, follow);
      return;
    case Op::kDelete:
      // A failed store's cleanup: its failure is published now. A delete_keys() task: its
      // caller wakes when the task goes.
      if (task.kind == TaskKind::kStore) {
        out.add([this, id = task.l2_id] { complete(id, L2StoreResult::failure()); });
      }
      erase_task_locked(serial);
      return;
    case Op::kExists: {
      const auto* flags = per_key(c, batch.idx.size());
      if (!flags && c.ok) {  // ok, but not one flag per key
        ++stats_.protocol_errors;
        record_connector_error_locked(op_name(batch.op), c.future_id, task.keys, &batch.idx,
                                      nullptr, shape_error(c, batch.idx.size()), out);
      }
      if (task.kind == TaskKind::kLookup) {
        if (flags) {
          for (std::size_t j = 0; j < batch.idx.size(); ++j) task.hit[batch.idx[j]] = (*flags)[j];
        } else {
          task.failed = true;
        }
        if (--task.pending == 0) finish_lookup_locked(serial, out);
        return;
      }
      // The load's probe: get only what exists.
      --task.pending;
      std::vector<std::size_t> present;
      if (flags) {
        for (std::size_t j = 0; j < batch.idx.size(); ++j) {
          if ((*flags)[j]) {
            present.push_back(batch.idx[j]);
          } else {
            reconcile_miss_locked(task.keys[batch.idx[j]], task.epoch, out);
          }
        }
      }
      if (!present.empty()) start_batches_locked(task, serial, Op::kGet, present, follow);
      if (task.pending == 0) finish_load_locked(serial, out);
      return;
    }
    case Op::kGet: {
      const auto* flags = per_key(c, batch.idx.size());
      if (flags) {
        for (std::size_t j = 0; j < batch.idx.size(); ++j) {
          task.hit[batch.idx[j]] = (*flags)[j];
          // A get that reports an error may have missed by failing (a dead connection): only
          // a clean miss says the key is gone.
          if (!(*flags)[j] && c.error.empty()) {
            reconcile_miss_locked(task.keys[batch.idx[j]], task.epoch, out);
          }
        }
      } else if (c.ok && c.result_bytes.empty()) {
        for (std::size_t i : batch.idx) task.hit[i] = 1;  // all or nothing (older connectors)
      } else if (c.ok) {
        ++stats_.protocol_errors;  // flags of the wrong count: trust none
        record_connector_error_locked(op_name(batch.op), c.future_id, task.keys, &batch.idx,
                                      &task.lens, shape_error(c, batch.idx.size()), out);
      }
      if (--task.pending == 0) finish_load_locked(serial, out);
      return;
    }
  }
}

void NativeConnectorL2Adapter::finish_store_locked(std::uint64_t serial, Outbox& out,
                                                   std::vector<Submission>& follow) {
  Task& task = tasks_.at(serial);
  reserved_bytes_ -= task.reserved;
  task.reserved = 0;
  const TaskId id = task.l2_id;
  if (!task.failed) {
    std::vector<ObjectKey> keys;
    std::vector<std::uint64_t> sizes;
    for (std::size_t i : task.sent) {
      keys.push_back(task.keys[i]);
      sizes.push_back(task.lens[i]);
    }
    bridge_internal::BridgeKeys::Sized stored, replaced;
    keys_->publish_store(keys, sizes, &stored, &replaced);
    usage_.record_deleted(replaced.keys, replaced.sizes);
    usage_.record_stored(stored.keys, stored.sizes);
    out.add([this, stored = std::move(stored), replaced = std::move(replaced)] {
      usage_.fire_deleted(replaced.keys, replaced.sizes);
      usage_.fire_stored(stored.keys, stored.sizes);
    });
    out.add([this, id, bytes = task.bytes_sent] { complete(id, L2StoreResult::success(bytes)); });
    erase_task_locked(serial);
    return;
  }
  // Failed: nothing of it may stay visible. Hide every key sent, drop them from the usage, and
  // publish the failure only once the store has confirmed their deletion.
  ++stats_.failed_stores;
  std::vector<ObjectKey> sent;
  for (std::size_t i : task.sent) sent.push_back(task.keys[i]);
  for (const ObjectKey& key : sent) keys_->tombstone(key);
  forget_known_locked(sent, out);
  if (supports_delete_ && !closed_) {
    ++stats_.cleanup_deletes;
    task.in_cleanup = true;
    task.pending = 1;
    follow.push_back(cleanup_submission_locked(serial, std::move(sent)));
    return;
  }
  out.add([this, id] { complete(id, L2StoreResult::failure()); });
  erase_task_locked(serial);
}

void NativeConnectorL2Adapter::finish_lookup_locked(std::uint64_t serial, Outbox& out) {
  Task& task = tasks_.at(serial);
  Bitmap bits(task.keys.size());
  for (std::size_t i = 0; i < task.keys.size(); ++i) {
    const ObjectKey& key = task.keys[i];
    if (task.hit[i] && !keys_->tombstoned(key)) {
      bits.set(i);
      keys_->lock(key);  // one count per hit, duplicates included
    } else if (!task.failed && !task.hit[i]) {
      reconcile_miss_locked(key, task.epoch, out);
    }
  }
  out.add([this, id = task.l2_id, bits = std::move(bits)] { complete(id, bits); });
  erase_task_locked(serial);
}

void NativeConnectorL2Adapter::finish_load_locked(std::uint64_t serial, Outbox& out) {
  Task& task = tasks_.at(serial);
  Bitmap bits(task.keys.size());
  std::vector<ObjectKey> accessed;
  for (std::size_t i = 0; i < task.keys.size(); ++i) {
    if (!task.hit[i] || keys_->tombstoned(task.keys[i])) continue;
    try {
      // The logical size reports the bytes loaded (a no-op when they already match).
      task.objects[i]->set_used_size(static_cast<std::size_t>(task.lens[i]));
    } catch (const std::invalid_argument&) {
      continue;  // cannot happen: lens[i] <= physical_size() was checked at submit
    }
    bits.set(i);
    accessed.push_back(task.keys[i]);
  }
  if (!accessed.empty()) {
    out.add([this, accessed = std::move(accessed)] { usage_.notify_accessed(accessed); });
  }
  out.add([this, id = task.l2_id, bits = std::move(bits)] { complete(id, bits); });
  erase_task_locked(serial);
}

void NativeConnectorL2Adapter::publish_failure_locked(const Task& task, Outbox& out) {
  switch (task.kind) {
    case TaskKind::kStore:
      out.add([this, id = task.l2_id] { complete(id, L2StoreResult::failure()); });
      break;
    case TaskKind::kLookup:
    case TaskKind::kLoad:
      out.add([this, id = task.l2_id, n = task.keys.size()] { complete(id, Bitmap(n)); });
      break;
    case TaskKind::kDelete:
      break;  // internal: no caller waits for a result
  }
}

void NativeConnectorL2Adapter::expire_locked(Clock::time_point now, Outbox& out,
                                             std::vector<Submission>& follow) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const std::uint64_t serial = deadlines_.begin()->second;
    Task& task = tasks_.at(serial);
    ++stats_.deadline_failures;
    record_breaker_locked(task, /*connection_failure=*/true);  // the store did not answer
    static constexpr const char* kKindNames[] = {"store", "lookup", "load", "delete"};
    const bool sized = task.kind == TaskKind::kStore || task.kind == TaskKind::kLoad;
    record_connector_error_locked(kKindNames[static_cast<std::size_t>(task.kind)], 0, task.keys,
                                  nullptr, sized ? &task.lens : nullptr,
                                  "no completion within the task deadline (" +
                                      std::to_string(options_.task_deadline.count()) + " ms)",
                                  out);
    if (task.kind == TaskKind::kStore && !task.in_cleanup) {
      ++stats_.failed_stores;
      reserved_bytes_ -= task.reserved;
      std::vector<ObjectKey> sent, settled;
      for (std::size_t i : task.sent) sent.push_back(task.keys[i]);
      for (std::size_t i : task.settled) settled.push_back(task.keys[i]);
      for (const ObjectKey& key : sent) keys_->tombstone(key);
      forget_known_locked(sent, out);
      // Batches already completed may have written: delete their keys now. The batches
      // still out are deleted when they complete (on_batch_done, abandoned set).
      if (supports_delete_ && !settled.empty() && !closed_) {
        ++stats_.cleanup_deletes;
        follow.push_back(cleanup_submission_locked(0, std::move(settled)));
      }
    }
    // A delete's keys stay hidden until the late delete confirms.
    if (task.kind == TaskKind::kDelete) ++stats_.cleanup_failures;
    publish_failure_locked(task, out);
    erase_task_locked(serial);
  }
}

// ---------------------------------------------------------------------------------------------
// The loop.

NativeConnectorL2Adapter::Clock::time_point NativeConnectorL2Adapter::next_deadline() {
  std::lock_guard lock(mu_);
  planned_wake_ = deadlines_.empty() ? Clock::time_point::max() : deadlines_.begin()->first;
  return planned_wake_;
}

void NativeConnectorL2Adapter::on_wake() {
  // The loop leaves the connector's fd to us: look whether it is readable (or broken) now.
  pollfd p{connector_fd_, POLLIN, 0};
  bool connector_readable = false;
  if (::poll(&p, 1, 0) > 0) {
    connector_readable = (p.revents & POLLIN) != 0;
    if ((p.revents & (POLLERR | POLLNVAL)) != 0) {
      std::lock_guard lock(mu_);
      connector_fd_valid_ = false;  // deadlines still fail what is pending
    }
  }
  std::vector<Completion> done;
  bool drain_failed = false;
  if (connector_readable) {
    try {
      done = connector_->drain_completions();
    } catch (...) {
      drain_failed = true;
    }
  }
  Outbox out;
  std::vector<Submission> follow;
  {
    std::lock_guard lock(mu_);
    if (drain_failed) ++stats_.protocol_errors;
    for (Completion& c : done) {
      auto it = batches_.find(c.future_id);
      if (it == batches_.end()) {
        // Drained before launch() registered it (or an id never issued).
        if (early_.size() >= kMaxEarlyCompletions) {
          stats_.protocol_errors += early_.size();
          early_.clear();
        }
        early_.insert_or_assign(c.future_id, std::move(c));
        continue;
      }
      Batch batch = std::move(it->second);
      batches_.erase(it);
      on_batch_done(std::move(batch), c, out, follow);
    }
    expire_locked(Clock::now(), out, follow);
    if (closed_) follow.clear();  // close() fails the tasks; nothing new goes out
  }
  run(out);
  if (!follow.empty()) launch(std::move(follow));
}
}  // namespace lmcache::bridge
