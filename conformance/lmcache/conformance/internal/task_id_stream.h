// File: lmcache/conformance/internal/task_id_stream.h
//
// The stream behind every asynchronous suite's TaskIdsNeverReused (adapters, processors): tens
// of thousands of tasks submitted while an early one stays untaken, a bounded window of them in
// flight, each id checked against every id given before.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_set>

#include "lmcache/core/completion_queue.h"

namespace lmcache::conformance_internal {

// stream_of_unique_ids()
//
// Submits `count` tasks with `submit()` (which returns the task's id) while `early`, a task of
// `early_kind` ("load"), stays untaken; at most `window` of them are untaken at once: past that
// the oldest is taken with `take(id)`, and the rest at the end (`take` returns a failure's text,
// "" when the result was right). Every id must differ from every id in `seen` (those given
// before the stream) and from each other; `first_number` numbers the stream's first task in
// the messages. Returns the first failure's text, "" when there is none.
template <class Submit, class Take>
std::string stream_of_unique_ids(std::size_t count, std::size_t window, std::size_t first_number,
                                 TaskId early, const char* early_kind,
                                 std::unordered_set<TaskId> seen, Submit&& submit, Take&& take) {
  seen.reserve(seen.size() + count);
  std::deque<TaskId> in_flight;
  auto take_oldest = [&]() -> std::string {
    const TaskId id = in_flight.front();
    in_flight.pop_front();
    return take(id);
  };
  for (std::size_t i = 0; i < count; ++i) {
    const TaskId id = submit();
    if (!seen.insert(id).second) {
      return "task " + std::to_string(i + first_number) + " got id " + std::to_string(id) +
             ", already given to an earlier task" +
             (id == early ? std::string(" (the early ") + early_kind + ", still untaken)" : "") +
             ": task ids must stay unique while results are untaken";
    }
    in_flight.push_back(id);
    if (in_flight.size() >= window) {
      if (std::string e = take_oldest(); !e.empty()) return e;
    }
  }
  while (!in_flight.empty()) {
    if (std::string e = take_oldest(); !e.empty()) return e;
  }
  return {};
}

}  // namespace lmcache::conformance_internal
