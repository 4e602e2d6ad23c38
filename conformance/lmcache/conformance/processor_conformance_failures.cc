// ProcessorConformance.FailureReportedAsFalse: a task with a failing pair at any position
// completes false and is signalled once, and the tasks around it keep their own outcomes, also
// when failures complete on other workers while a long task runs.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/plain_objects.h"
#include "lmcache/conformance/probe_keys.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// A task of chunk-sized pairs followed by tasks that fail at once: with several workers, the
// failures complete while the long task still runs, so a task outcome kept in the processor (or
// per worker) and shared with the tasks beside it shows as a good task completing false.
Verdict failures_while_others_run(const ProcessorUnderTest& put, SerdeProcessor& p) {
  constexpr int kRounds = 4;
  constexpr int kFailing = 16;
  constexpr std::size_t kPairs = 6;
  // Chunk-sized pairs (up to 1 Mi elements each): long enough that the failures end first.
  const std::size_t elements = std::clamp<std::size_t>(
      std::max(current_profile().max_chunk_bytes / 4, current_profile().max_group_elements),
      std::size_t{1} << 12, std::size_t{1} << 20);
  const MemoryLayoutDesc big =
      MemoryLayoutDesc::single({static_cast<std::int64_t>(elements)}, put.input_dtypes.front());
  const MemoryObjPtr src = safe_input(big, 11);
  const MemoryObjPtr small = safe_input(fixed_layout(put), 12);
  std::size_t tasks = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<MemoryObjPtr> dsts;
    for (std::size_t i = 0; i < kPairs; ++i) dsts.push_back(temp_for(p, big));
    const TaskId good =
        p.submit_serialize(std::vector<MemoryObjPtr>(kPairs, src), dsts, probe_keys(kPairs));
    std::vector<TaskId> failing;
    for (int f = 0; f < kFailing; ++f) {
      failing.push_back(p.submit_serialize({small}, {make_object(byte_layout(0))}, probe_keys(1)));
    }
    tasks += 1 + kFailing;
    const std::string what = "a serialize of " + std::to_string(kPairs) + " valid pairs of " +
                             big.to_string() + " followed by " + std::to_string(kFailing) +
                             " tasks that fail at once (round " + std::to_string(round + 1) +
                             " of " + std::to_string(kRounds) + ")";
    for (TaskId id : failing) {
      const auto r = poll_until([&] { return p.query_serialize_result(id); }, result_timeout());
      if (!r) return Verdict::fail("a failing task of " + what + " never completed");
      if (*r) return Verdict::fail("a task into a 0-byte destination completed true in " + what);
    }
    const auto r = poll_until([&] { return p.query_serialize_result(good); }, result_timeout());
    if (!r) return Verdict::fail("the valid task of " + what + " never completed");
    if (!*r) {
      return Verdict::fail("the valid task of " + what +
                           " completed false: the failures beside it changed its outcome");
    }
  }
  collect_notifies(p.get_serialize_event_fd(), tasks);
  return Verdict::pass();
}

}  // namespace

Verdict FailureReportedAsFalse(const ProcessorUnderTest& put) {
  OwnedProcessor p(put);
  MemoryLayoutDesc layout = fixed_layout(put);
  MemoryObjPtr src = safe_input(layout, 7);
  MemoryObjPtr good_temp = temp_for(*p, layout);
  {
    TaskId id = p->submit_serialize({src}, {good_temp}, probe_keys(1));
    if (!poll_until([&] { return p->query_serialize_result(id); }, result_timeout())
             .value_or(false)) {
      return Verdict::fail(
          "serialize of a valid pair into an estimate-sized temp did not "
          "complete true");
    }
    collect_notifies(p->get_serialize_event_fd(), 1);
  }
  // Batches of 1, 2, 3 and 5 pairs with the failing pair at every position (a failing pair
  // before good ones included), each followed by an all-good batch: a failure is per task.
  struct Task {
    Dir dir;
    TaskId id;
    bool expected;
    std::string what;
  };
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    std::vector<Task> tasks;
    for (std::size_t n : {1u, 2u, 3u, 5u}) {
      for (std::size_t bad = 0; bad <= n; ++bad) {  // bad == n: no failing pair
        std::vector<MemoryObjPtr> srcs, dsts;
        for (std::size_t i = 0; i < n; ++i) {
          const bool fails = i == bad;
          if (d == Dir::kSerialize) {
            srcs.push_back(src);
            dsts.push_back(fails ? make_object(byte_layout(0)) : temp_for(*p, layout));
          } else {
            srcs.push_back(fails ? make_object(byte_layout(0)) : good_temp);
            dsts.push_back(make_object(layout));
          }
        }
        std::string what =
            std::string(dir_name(d)) + " of " + std::to_string(n) + " pair(s)" +
            (bad < n ? " whose pair " + std::to_string(bad) + " fails (" +
                           (d == Dir::kSerialize ? "0-byte destination" : "empty source") + ")"
                     : " that are all valid");
        // Every valid source of a deserialize is good_temp, serialized under probe_key(0): each
        // pair goes under that key (a key-binding serde rejects a frame under another).
        std::vector<ObjectKey> keys(n, probe_key(0));
        tasks.push_back({d, submit_of(*p, d, srcs, dsts, keys), bad == n, what});
      }
    }
    for (const Task& t : tasks) {
      auto r = poll_until([&] { return query_of(*p, t.dir, t.id); }, result_timeout());
      if (!r) return Verdict::fail("the " + t.what + " never completed");
      if (*r != t.expected) {
        return Verdict::fail("the " + t.what + " completed " + (*r ? "true" : "false") +
                             ", expected " + (t.expected ? "true" : "false") +
                             (t.expected ? "" : " (the task fails at its first failing pair)"));
      }
    }
    std::uint64_t n = collect_notifies(fd_of(*p, d), tasks.size());
    if (n != tasks.size()) {
      return Verdict::fail(std::to_string(tasks.size()) + " " + dir_name(d) + " tasks (" +
                           std::to_string(tasks.size() - 4) + " failing) gave " +
                           std::to_string(n) + " notifies: failed tasks must be signalled too");
    }
  }
  return failures_while_others_run(put, *p);
}

}  // namespace lmcache::conformance_internal::processor_properties
