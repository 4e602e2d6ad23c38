// ProcessorConformance properties about a processor's life: close() (what it releases, what it
// completes, what stays queryable, what it refuses afterwards) and the resources a processor
// holds over hundreds of tasks.
#include <algorithm>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/task_id_stream.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// How many of `buffers` something other than the caller still references (the caller holds
// only these weak references).
std::size_t still_referenced(const std::vector<std::weak_ptr<MemoryObj>>& buffers) {
  return static_cast<std::size_t>(
      std::count_if(buffers.begin(), buffers.end(), [](const auto& w) { return !w.expired(); }));
}

}  // namespace

Verdict CloseReleasesResources(const ProcessorUnderTest& put) {
  ProcessResources baseline = ProcessResources::take();
  {
    SerdeProcessorPtr p = put.make();
    MemoryLayoutDesc layout = fixed_layout(put);
    std::vector<TaskId> ids;
    for (int i = 0; i < 3; ++i) {
      ids.push_back(
          p->submit_serialize({safe_input(layout, 13)}, {temp_for(*p, layout)}, probe_keys(1)));
    }
    for (TaskId id : ids) {
      if (!poll_until([&] { return p->query_serialize_result(id); }, result_timeout())) {
        p->close();
        return Verdict::fail("serialize task " + std::to_string(id) + " never completed");
      }
    }
    p->close();
    if (std::string leak = resources_left_over(baseline, settle_timeout()); !leak.empty()) {
      return Verdict::fail("after close() the process holds " + leak +
                           " of the processor: close() must release its fds and threads");
    }
    try {
      p->close();
    } catch (const std::exception& e) {
      return Verdict::fail(std::string("a second close() threw: ") + e.what());
    }
  }
  return Verdict::pass();
}

Verdict CloseCompletesQueuedWork(const ProcessorUnderTest& put) {
  // The queue must still hold work when close() is called, or a processor that drops its queue
  // passes by luck. So the first queued task is large (it keeps the workers busy), every buffer
  // exists before the first submit (the submits run back to back), and the check runs in
  // several rounds. Before that, two tasks complete (one true, one false) and are left untaken:
  // close() must not lose them.
  constexpr int kRounds = 3;
  constexpr int kSmallTasks = 15;
  const DType dtype = put.input_dtypes.front();
  const MemoryLayoutDesc big = MemoryLayoutDesc::single({1024, 2048}, dtype);
  const MemoryLayoutDesc small = MemoryLayoutDesc::single({64, 64}, dtype);
  for (int round = 0; round < kRounds; ++round) {
    const std::string in_round = "round " + std::to_string(round + 1) + ": ";
    SerdeProcessorPtr p = put.make();
    TaskId done_ok =
        p->submit_serialize({safe_input(small, 16)}, {temp_for(*p, small)}, probe_keys(1));
    TaskId done_bad =
        p->submit_serialize({safe_input(small, 16)}, {make_object(byte_layout(0))}, probe_keys(1));
    if (collect_notifies(p->get_serialize_event_fd(), 2) != 2) {
      p->close();
      return Verdict::fail(in_round + "two serialize tasks did not signal twice");
    }
    std::vector<std::pair<MemoryObjPtr, MemoryObjPtr>> work;
    work.emplace_back(safe_input(big, 17), temp_for(*p, big));
    for (int i = 0; i < kSmallTasks; ++i)
      work.emplace_back(safe_input(small, 18), temp_for(*p, small));
    std::vector<TaskId> ids;
    ids.reserve(work.size());
    for (auto& [src, temp] : work) ids.push_back(p->submit_serialize({src}, {temp}, probe_keys(1)));
    p->close();  // must wait for the queue
    const std::pair<TaskId, bool> completed[] = {{done_ok, true}, {done_bad, false}};
    for (const auto& [id, expected] : completed) {
      std::optional<bool> r = p->query_serialize_result(id);
      if (!r) {
        return Verdict::fail(in_round + "task " + std::to_string(id) + " completed " +
                             (expected ? "true" : "false") +
                             " before close() and was not taken, but has no result after "
                             "close(): results already stored must stay queryable");
      }
      if (*r != expected) {
        return Verdict::fail(in_round + "task " + std::to_string(id) + " completed " +
                             (expected ? "true" : "false") + " before close() but reads " +
                             (*r ? "true" : "false") + " after it");
      }
      if (p->query_serialize_result(id)) {
        return Verdict::fail(in_round + "task " + std::to_string(id) +
                             " answered twice after close()");
      }
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::optional<bool> r = p->query_serialize_result(ids[i]);
      if (!r) {
        return Verdict::fail(in_round + "task " + std::to_string(ids[i]) + " (" +
                             std::to_string(i + 1) + " of " + std::to_string(ids.size()) +
                             ") queued before close() has no result after close() returned");
      }
      if (!*r) return Verdict::fail("task " + std::to_string(ids[i]) + " completed false");
    }
  }
  return Verdict::pass();
}

Verdict UseAfterClose(const ProcessorUnderTest& put) {
  SerdeProcessorPtr p = put.make();
  MemoryLayoutDesc layout = fixed_layout(put);
  MemoryObjPtr src = safe_input(layout, 19);
  MemoryObjPtr temp = temp_for(*p, layout);
  p->close();
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    try {
      if (d == Dir::kSerialize) {
        p->submit_serialize({src}, {temp}, probe_keys(1));
      } else {
        p->submit_deserialize({temp}, {make_object(layout)}, probe_keys(1));
      }
      return Verdict::fail(std::string("submit_") + dir_name(d) + "() after close() did not throw");
    } catch (const std::logic_error&) {
    } catch (const std::exception& e) {
      return Verdict::fail(
          std::string("submit_") + dir_name(d) +
          "() after close() threw something other than std::logic_error: " + e.what());
    }
  }
  try {
    p->close();
    (void)p->query_serialize_result(0);
    (void)p->query_deserialize_result(0);
  } catch (const std::exception& e) {
    return Verdict::fail(std::string("close() or a query after close() threw: ") + e.what());
  }
  return Verdict::pass();
}

Verdict ResourcesBoundedOverManyTasks(const ProcessorUnderTest& put) {
  // Waves of 8 tasks in flight (serializes and deserializes, one in four failing), every result
  // taken before the next wave. The counts are taken after a warm-up wave, halfway and at the
  // end: a pool that grows to its size does so early (or, if it grew late, holds still over the
  // waves run to confirm); a leak keeps growing.
  const std::size_t total = current_profile().resource_tasks;
  constexpr std::size_t kWave = 8;
  OwnedProcessor p(put);
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({8, 33}, put.input_dtypes.front());
  MemoryObjPtr src = safe_input(layout, 41);
  MemoryObjPtr good_temp = temp_for(*p, layout);
  {
    TaskId id = p->submit_serialize({src}, {good_temp}, probe_keys(1));
    if (!poll_until([&] { return p->query_serialize_result(id); }, result_timeout())
             .value_or(false)) {
      return Verdict::fail("a serialize of a valid pair did not complete true");
    }
  }
  std::vector<std::weak_ptr<MemoryObj>> handed;
  std::size_t done = 0;
  auto run_wave = [&](std::size_t wave) -> std::string {
    struct Task {
      Dir dir;
      TaskId id;
      bool expected;
    };
    std::vector<Task> tasks;
    for (std::size_t i = 0; i < kWave; ++i) {
      const Dir d = i % 2 == 0 ? Dir::kSerialize : Dir::kDeserialize;
      const bool fails = (wave + i) % 4 == 3;
      MemoryObjPtr in = d == Dir::kSerialize ? safe_input(layout, 42 + i)
                                             : (fails ? make_object(byte_layout(0)) : good_temp);
      MemoryObjPtr out = d == Dir::kSerialize
                             ? (fails ? make_object(byte_layout(0)) : temp_for(*p, layout))
                             : make_object(layout);
      if (in != good_temp) handed.push_back(in);
      handed.push_back(out);
      tasks.push_back({d, submit_of(*p, d, {in}, {out}), !fails});
    }
    for (const Task& t : tasks) {
      std::optional<bool> r =
          poll_until([&] { return query_of(*p, t.dir, t.id); }, result_timeout());
      if (!r) {
        return std::string(dir_name(t.dir)) + " task " + std::to_string(t.id) + " (task " +
               std::to_string(done + 1) + " of the run) never completed";
      }
      if (*r != t.expected) {
        return std::string(dir_name(t.dir)) + " task " + std::to_string(t.id) + " (task " +
               std::to_string(done + 1) + " of the run) completed " + (*r ? "true" : "false") +
               " on " + (t.expected ? "a valid" : "an invalid") + " pair";
      }
      ++done;
    }
    consume_fd(p->get_serialize_event_fd());
    consume_fd(p->get_deserialize_event_fd());
    return {};
  };
  const std::size_t waves = std::max<std::size_t>(4, total / kWave);
  if (std::string e = run_wave(0); !e.empty()) return Verdict::fail(e);
  ProcessResources halfway;
  for (std::size_t w = 1; w < waves; ++w) {
    if (std::string e = run_wave(w); !e.empty()) return Verdict::fail(e);
    if (w == waves / 2) halfway = ProcessResources::take();
  }
  // Settle: a joined thread or a closed fd can linger in /proc for a moment. Grown since
  // halfway: as many waves again tell a pool that grew late from a leak.
  const HalfwayGrowth growth = growth_past_halfway(halfway, waves, run_wave, settle_timeout());
  if (!growth.round_error.empty()) return Verdict::fail(growth.round_error);
  if (!growth.grew.empty()) {
    return Verdict::fail("the processor keeps growing: after " + std::to_string(done) +
                         " tasks the process holds " + growth.grew +
                         " (before: halfway through the first " + std::to_string(waves) +
                         " waves; it grew again over as many waves more): a leak per task or "
                         "every few tasks");
  }
  auto held = poll_until(
      [&]() -> std::optional<std::size_t> {
        std::size_t n = still_referenced(handed);
        return n <= kWave ? std::optional<std::size_t>(n) : std::nullopt;
      },
      settle_timeout());
  if (!held) {
    return Verdict::fail("after " + std::to_string(done) +
                         " tasks whose results were all taken, "
                         "the processor still references " +
                         std::to_string(still_referenced(handed)) + " of the " +
                         std::to_string(handed.size()) +
                         " caller buffers it was given (it must drop them when a task is done)");
  }
  return Verdict::pass();
}

Verdict TaskIdsNeverReused(const ProcessorUnderTest& put) {
  // Past 2^16 tasks, with an early serialize still untaken: an id kept in 16 bits (or a result
  // table indexed by one) hands a later task the early one's id.
  constexpr std::size_t kTasks = (std::size_t{1} << 16) + 100;
  constexpr std::size_t kInFlight = 256;
  OwnedProcessor p(put);
  const MemoryLayoutDesc layout = fixed_layout(put);
  MemoryObjPtr src = safe_input(layout, 77);
  const TaskId early = p->submit_serialize({src}, {temp_for(*p, layout)}, probe_keys(1));
  const std::string failure = stream_of_unique_ids(
      kTasks, kInFlight, /*first_number=*/2, early, "serialize", {early},
      [&] { return p->submit_serialize({src}, {temp_for(*p, layout)}, probe_keys(1)); },
      [&](TaskId id) -> std::string {
        std::optional<bool> r =
            poll_until([&] { return p->query_serialize_result(id); }, result_timeout());
        if (!r) return "serialize task " + std::to_string(id) + " did not complete";
        if (!*r) return "a valid serialize (task " + std::to_string(id) + ") completed false";
        return {};
      });
  if (!failure.empty()) return Verdict::fail(failure);
  std::optional<bool> r =
      poll_until([&] { return p->query_serialize_result(early); }, result_timeout());
  if (!r || !*r) {
    return Verdict::fail("the early serialize (task " + std::to_string(early) + "), taken after " +
                         std::to_string(kTasks) + " later tasks, answered " +
                         (r ? "false" : "nothing") + " instead of true");
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::processor_properties
