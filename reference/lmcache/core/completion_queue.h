// File: lmcache/core/completion_queue.h
//
// The one async-bookkeeping helper every component uses (processor, wrapper, adapters, fault
// injectors): task ids, a lock, a completion map and an eventfd.
//
// Contract (docs/async-completion.md): a producer calls complete() once per task; the result is
// stored *before* the eventfd is notified, and notified exactly once. Retrieval is one-shot: take()
// returns a value exactly once per id; pending, unknown, already-taken ids give nullopt and never
// throw.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/core/event_notifier.h"

namespace lmcache {

using TaskId = std::uint64_t;

// TaskIdCounter
//
// Hands out 0, 1, 2, ... A component shares one counter across all of its directions, so an
// id of one direction is never valid in another.
class TaskIdCounter {
 public:
  TaskId next() { return next_.fetch_add(1, std::memory_order_relaxed); }
  TaskId peek() const { return next_.load(std::memory_order_relaxed); }

 private:
  std::atomic<TaskId> next_{0};
};

template <class Result>
class CompletionQueue {
 public:
  CompletionQueue() = default;
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // event_fd()
  //
  // Signalled once per complete(); -1 after close().
  int event_fd() const { return notifier_.fd(); }

  // complete()
  //
  // Stores `result` for `id`, then notifies once. Throws std::logic_error if a result for `id`
  // is already waiting (a task completed twice).
  void complete(TaskId id, Result result) {
    {
      std::lock_guard lock(mu_);
      auto [it, inserted] = results_.try_emplace(id, std::move(result));
      if (!inserted) {
        throw std::logic_error("task " + std::to_string(id) + " completed twice");
      }
    }
    notifier_.notify();
  }

  // take()
  //
  // Removes and returns the result for `id`; nullopt if none is waiting.
  std::optional<Result> take(TaskId id) {
    std::lock_guard lock(mu_);
    auto it = results_.find(id);
    if (it == results_.end()) return std::nullopt;
    std::optional<Result> out(std::move(it->second));
    results_.erase(it);
    return out;
  }

  // take_if()
  //
  // take(), but only when `wanted(result)` holds: a result it does not want stays waiting (one
  // queue, and so one fd, for two kinds of result, each taken by its own query).
  template <class Pred>
  std::optional<Result> take_if(TaskId id, Pred&& wanted) {
    std::lock_guard lock(mu_);
    auto it = results_.find(id);
    if (it == results_.end() || !wanted(std::as_const(it->second))) return std::nullopt;
    std::optional<Result> out(std::move(it->second));
    results_.erase(it);
    return out;
  }

  // take_all()
  //
  // Removes and returns every waiting result, ordered by id.
  std::map<TaskId, Result> take_all() {
    std::lock_guard lock(mu_);
    return std::exchange(results_, {});
  }

  // waiting()
  //
  // How many results wait to be taken.
  std::size_t waiting() const {
    std::lock_guard lock(mu_);
    return results_.size();
  }

  // consume_wakeup()
  //
  // Drains this queue's own eventfd (for consumers that poll it themselves).
  std::uint64_t consume_wakeup() { return notifier_.consume(); }

  // close()
  //
  // Closes the eventfd; results already stored stay takeable. Idempotent.
  void close() { notifier_.close(); }

 private:
  mutable std::mutex mu_;
  std::map<TaskId, Result> results_;
  EventNotifier notifier_;
};

}  // namespace lmcache
