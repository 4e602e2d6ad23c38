// File: lmcache/fault/internal/publication_schedule.h
//
// Internal to FaultInjectL2Adapter: when the results it holds back become visible, and in
// which order. A result is either scheduled at a due time (now, or later for a delay fault) or
// held (reorder / coalesce faults): a held result is published together with the next result of
// the same direction that becomes due — right after it (reorder) or right before it
// (coalesce) — or alone once its own time runs out. Not thread-safe: the adapter calls it under
// its mutex.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <vector>

#include "lmcache/l2/l2_adapter.h"

namespace lmcache::fault_internal {

class PublicationSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kDirections = 3;  // store, lookup, load

  // schedule()
  //
  // Publishes `id` once `due` has passed.
  void schedule(TaskId id, Clock::time_point due) { due_.emplace(due, id); }

  // hold()
  //
  // Holds `id` (of `direction`, 0..kDirections-1) until the next result of that direction is
  // published, or until `until`. `coalesce`: published right before that result, else right
  // after it.
  void hold(int direction, TaskId id, Clock::time_point until, bool coalesce) {
    held_[direction].push_back({id, until, coalesce});
  }

  // next_deadline()
  //
  // The earliest time something becomes due; Clock::time_point::max() when nothing waits.
  Clock::time_point next_deadline() const;

  // take_due()
  //
  // Removes and returns, in publication order, every result due at `now`: first the held ones
  // whose time ran out, then each scheduled one in due order with the held results of its
  // direction around it. `direction_of(id)` gives a scheduled result's direction.
  template <typename DirectionOf>
  std::vector<TaskId> take_due(Clock::time_point now, DirectionOf&& direction_of) {
    std::vector<TaskId> out;
    for (auto& held : held_) {
      std::vector<Held> keep;
      for (const Held& h : held) {
        if (h.until <= now) {
          out.push_back(h.id);
        } else {
          keep.push_back(h);
        }
      }
      held.swap(keep);
    }
    while (!due_.empty() && due_.begin()->first <= now) {
      const TaskId id = due_.begin()->second;
      due_.erase(due_.begin());
      auto& held = held_[direction_of(id)];
      std::vector<TaskId> after;
      for (const Held& h : held) {
        if (h.coalesce) {
          out.push_back(h.id);  // coalesce: back to back, before
        } else {
          after.push_back(h.id);  // reorder: after
        }
      }
      held.clear();
      out.push_back(id);
      out.insert(out.end(), after.begin(), after.end());
    }
    return out;
  }

  // clear()
  //
  // Forgets everything (close()).
  void clear();

 private:
  struct Held {
    TaskId id;
    Clock::time_point until;
    bool coalesce;
  };
  std::multimap<Clock::time_point, TaskId> due_;
  std::vector<Held> held_[kDirections];
};

}  // namespace lmcache::fault_internal
