// ProcessorConformance's scenario properties (the stateful model, the lifecycle properties and the
// failure properties live in processor_conformance_model.cc, _lifecycle.cc and _failures.cc).
#include "lmcache/conformance/processor_conformance.h"

#include <algorithm>
#include <cstring>
#include <latch>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/processor_properties.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/close_quietly.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance {}  // namespace lmcache::conformance

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// ---------------------------------------------------------------------------------------------
// Shared helpers (internal/processor_properties.h).

const char* dir_name(Dir d) { return d == Dir::kSerialize ? "serialize" : "deserialize"; }

Dir other(Dir d) { return d == Dir::kSerialize ? Dir::kDeserialize : Dir::kSerialize; }

int fd_of(const SerdeProcessor& p, Dir d) {
  return d == Dir::kSerialize ? p.get_serialize_event_fd() : p.get_deserialize_event_fd();
}

std::optional<bool> query_of(SerdeProcessor& p, Dir d, TaskId id) {
  return d == Dir::kSerialize ? p.query_serialize_result(id) : p.query_deserialize_result(id);
}

TaskId submit_of(SerdeProcessor& p, Dir d, std::vector<MemoryObjPtr> srcs,
                 std::vector<MemoryObjPtr> dsts, std::vector<ObjectKey> keys) {
  if (keys.empty()) keys = probe_keys(srcs.size());
  return d == Dir::kSerialize
             ? p.submit_serialize(std::move(srcs), std::move(dsts), std::move(keys))
             : p.submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
}

std::vector<ObjectKey> gen_pair_keys(std::size_t n) {
  std::vector<ObjectKey> keys;
  while (keys.size() < n) {
    ObjectKey k =
        keys.empty() || *uniform_in_range(0, 2) == 0
            ? *gen_object_key()
            : *gen_key_varied_in(keys[*uniform_in_range<std::size_t>(0, keys.size())],
                                 *rc::gen::elementOf(std::vector<KeyField>(
                                     std::begin(kAllKeyFields), std::end(kAllKeyFields))));
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(std::move(k));
  }
  return keys;
}

std::string serialized_difference(const ProcessorUnderTest& put, const MemoryObj& a,
                                  const MemoryObj& b) {
  if (a.size() != b.size()) {
    return std::to_string(a.size()) + " bytes vs " + std::to_string(b.size());
  }
  if (put.randomized || same_bytes(a.data(), b.data(), a.size())) {
    return {};
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.data()[i] != b.data()[i]) {
      return "first difference at byte " + std::to_string(i) + " of " + std::to_string(a.size());
    }
  }
  return {};
}

MemoryObjPtr junk_temp_for(SerdeProcessor& p, const MemoryLayoutDesc& layout, std::uint64_t seed,
                           std::size_t extra) {
  MemoryObjPtr temp = temp_for(p, layout, extra);
  fill_bytes(temp->physical_bytes(), seed);
  return temp;
}

OwnedProcessor::OwnedProcessor(const ProcessorUnderTest& put) : p(put.make()) {
  if (!p) throw std::runtime_error("the processor factory returned null");
}

OwnedProcessor::~OwnedProcessor() {
  if (p) close_quietly(*p);
}

std::string rc_id(std::string_view property, const ProcessorUnderTest& put) {
  return "ProcessorConformance." + std::string(property) + "/" + put.name;
}

MemoryObjPtr safe_input(const MemoryLayoutDesc& layout, std::uint64_t seed) {
  static constexpr double kValues[] = {0.0, 0.5, -1.0, 2.0, 0.25, -0.125, 1.5, 3.0};
  MemoryObjPtr obj = make_object(layout);
  std::uint64_t x = seed | 1;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    DType d = layout.dtypes()[g];
    auto bytes = obj->group_bytes(g);
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      write_element(d, bytes.data() + i * element_size(d), kValues[(x >> 33) % 8]);
    }
  }
  return obj;
}

MemoryObjPtr temp_for(SerdeProcessor& p, const MemoryLayoutDesc& layout, std::size_t extra) {
  return make_object(byte_layout(p.estimate_serialized_size(layout) + extra));
}

MemoryLayoutDesc gen_processor_layout(const ProcessorUnderTest& put, std::size_t max_elements) {
  // KV chunks only where a task may hold the depth's largest groups.
  SizeLimits limits = max_elements >= current_profile().max_group_elements
                          ? size_limits_with_chunks()
                          : size_limits();
  limits.max_groups = 3;
  limits.max_group_elements = std::min(limits.max_group_elements, max_elements);
  limits.max_total_elements = limits.max_group_elements;
  MemoryLayoutDesc layout = *gen_layout(put.input_dtypes, limits);
  // At least one element: a pair of an empty layout cannot be made to fail.
  if (layout.total_elements() == 0) return fixed_layout(put);
  return layout;
}

MemoryLayoutDesc fixed_layout(const ProcessorUnderTest& put) {
  return MemoryLayoutDesc::single({4, 4}, put.input_dtypes.front());
}

bool take_result(SerdeProcessor& p, Dir d, TaskId id, const std::string& what) {
  std::optional<bool> r = poll_until([&] { return query_of(p, d, id); }, result_timeout());
  if (!r) {
    fail_case(what + ": " + dir_name(d) + " task " + std::to_string(id) +
              " did not complete within " + std::to_string(result_timeout().count()) + " ms");
  }
  return *r;
}

std::string decoded_mismatch(const MemoryObj& input, const MemoryObj& decoded) {
  const MemoryLayoutDesc& layout = input.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    auto a = input.group_bytes(g);
    auto b = decoded.group_bytes(g);
    if (a.empty() || same_bytes(a.data(), b.data(), a.size())) continue;
    const DType dtype = layout.dtypes()[g];
    const std::size_t es = element_size(dtype);
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      if (!same_bytes(a.data() + i * es, b.data() + i * es, es)) {
        return describe_element(layout, g, i, read_element(dtype, a.data() + i * es),
                                read_element(dtype, b.data() + i * es)) +
               " in " + layout.to_string();
      }
    }
  }
  return {};
}

namespace {

// The number of pairs per task such that a task of `layout` stays within `budget` elements.
std::size_t pairs_within(const MemoryLayoutDesc& layout, std::size_t max_pairs,
                         std::size_t budget) {
  const std::size_t each = std::max<std::size_t>(1, layout.total_elements());
  return std::clamp<std::size_t>(budget / each, 1, max_pairs);
}

// One serialize task per batch, then one deserialize task per serialized batch; checks the
// notifies, the results and their order per direction, and the decoded values.
void run_notify_scenario(SerdeProcessor& p, const std::vector<std::vector<MemoryObjPtr>>& batches) {
  std::vector<std::vector<MemoryObjPtr>> temps, outs;
  // Every id the processor handed out, with its direction: one counter numbers both directions
  // (docs/async-completion.md, rule 4), so no two tasks of one processor share an id.
  std::map<TaskId, Dir> issued;
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    const int fd = fd_of(p, d);
    std::vector<TaskId> ids;
    for (std::size_t t = 0; t < batches.size(); ++t) {
      std::vector<MemoryObjPtr> dsts;
      if (d == Dir::kSerialize) {
        for (auto& src : batches[t]) dsts.push_back(temp_for(p, src->layout()));
        temps.push_back(dsts);
        ids.push_back(submit_of(p, d, batches[t], dsts));
      } else {
        for (auto& src : batches[t]) dsts.push_back(make_object(src->layout()));
        outs.push_back(dsts);
        ids.push_back(submit_of(p, d, temps[t], dsts));
      }
      const auto [it, fresh] = issued.emplace(ids.back(), d);
      require(fresh, std::string(dir_name(d)) + " task " + std::to_string(t) + " got id " +
                         std::to_string(ids.back()) + ", which an earlier " + dir_name(it->second) +
                         " task of this processor has: one counter numbers both directions "
                         "(docs/async-completion.md, rule 4), so an id names one task");
    }
    // Scan: every notify read must already have its result stored.
    std::uint64_t notified = 0;
    std::size_t taken = 0;
    std::vector<bool> done(ids.size(), false);
    auto deadline = wait_deadline(result_timeout());
    while (taken < ids.size()) {
      if (deadline.expired()) {
        fail_case(std::to_string(ids.size() - taken) + " of " + std::to_string(ids.size()) + " " +
                  dir_name(d) + " tasks did not complete within " +
                  std::to_string(result_timeout().count()) + " ms");
      }
      wait_readable(fd, std::chrono::milliseconds(2));
      std::uint64_t before_scan = notified + consume_fd(fd);
      notified = before_scan;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (done[i]) continue;
        if (auto r = query_of(p, d, ids[i])) {
          require(*r, std::string(dir_name(d)) + " task " + std::to_string(ids[i]) +
                          " completed false on a valid input");
          done[i] = true;
          ++taken;
        }
      }
      require(taken >= before_scan, std::to_string(before_scan) + " " + dir_name(d) +
                                        " notifies were read but only " + std::to_string(taken) +
                                        " results were stored: a notify came before its result");
    }
    std::uint64_t total = collect_notifies(fd, ids.size(), notified);
    require(total == ids.size(), std::to_string(ids.size()) + " " + dir_name(d) +
                                     " tasks completed but the " + dir_name(d) + " fd counted " +
                                     std::to_string(total) + " notifies (exactly one per task)");
    std::uint64_t cross = consume_fd(fd_of(p, other(d)));
    require(cross == 0, std::string(dir_name(d)) + " tasks notified the " + dir_name(other(d)) +
                            " fd " + std::to_string(cross) + " time(s)");
  }
  for (std::size_t t = 0; t < batches.size(); ++t) {
    for (std::size_t i = 0; i < batches[t].size(); ++i) {
      std::string m = decoded_mismatch(*batches[t][i], *outs[t][i]);
      require(m.empty(), "task " + std::to_string(t) + " pair " + std::to_string(i) + " of " +
                             std::to_string(batches[t].size()) +
                             " did not decode to its own input: " + m);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Properties.

Verdict DistinctEventFds(const ProcessorUnderTest& put) {
  OwnedProcessor a(put);
  OwnedProcessor b(put);
  int fds[4] = {a->get_serialize_event_fd(), a->get_deserialize_event_fd(),
                b->get_serialize_event_fd(), b->get_deserialize_event_fd()};
  const char* names[4] = {"serialize fd", "deserialize fd", "second instance's serialize fd",
                          "second instance's deserialize fd"};
  if (std::string problem = distinct_open_fds_problem(fds, names); !problem.empty()) {
    return Verdict::fail(problem);
  }
  return Verdict::pass();
}

Verdict OneNotifyPerTask(const ProcessorUnderTest& put) {
  return run_rc_property(rc_id("OneNotifyPerTask", put), {.max_success = 10, .shrink = false}, [&] {
    const std::size_t budget = current_profile().max_group_elements;
    MemoryLayoutDesc layout = gen_processor_layout(put, budget / 4);
    const std::size_t max_pairs = pairs_within(layout, current_profile().max_batch, budget);
    int tasks = *uniform_in_range(1, 7);
    std::vector<std::vector<MemoryObjPtr>> batches;
    std::uint64_t seed = 1;
    for (int t = 0; t < tasks; ++t) {
      // An empty batch is a task too: an id, a true result and one notify (docs/serde.md).
      const std::size_t pairs = *uniform_in_range(0, 7) == 0 ? 0 : *gen_batch_size(max_pairs);
      std::vector<MemoryObjPtr> batch;
      for (std::size_t i = 0; i < pairs; ++i) batch.push_back(safe_input(layout, seed++));
      batches.push_back(batch);
    }
    OwnedProcessor p(put);
    run_notify_scenario(*p, batches);
  });
}

Verdict OneShotQueries(const ProcessorUnderTest& put) {
  return run_rc_property(rc_id("OneShotQueries", put), {.max_success = 10, .shrink = false}, [&] {
    MemoryLayoutDesc layout = gen_processor_layout(put, 1u << 16);
    OwnedProcessor p(put);
    MemoryObjPtr src = safe_input(layout, 3);
    // The first task of each direction, both completed and untaken: neither direction's query
    // answers the other's id (or takes its result), also where per-direction counters would
    // number both 0.
    {
      TaskId s0 = p->submit_serialize({src}, {temp_for(*p, layout)}, probe_keys(1));
      TaskId d0 = p->submit_deserialize({make_object(byte_layout(0))}, {make_object(layout)},
                                        probe_keys(1));
      require(wait_signalled(p->get_serialize_event_fd(), result_timeout()) &&
                  wait_signalled(p->get_deserialize_event_fd(), result_timeout()),
              "a serialize and a deserialize task did not both signal within " +
                  std::to_string(result_timeout().count()) + " ms");
      require(!p->query_deserialize_result(s0),
              "query_deserialize_result(" + std::to_string(s0) +
                  ") answered for the serialize task of that id (the first deserialize task "
                  "has id " +
                  std::to_string(d0) +
                  "): one counter numbers both directions, so an id names one task");
      require(!p->query_serialize_result(d0),
              "query_serialize_result(" + std::to_string(d0) +
                  ") answered for the deserialize task of that id (the first serialize task has "
                  "id " +
                  std::to_string(s0) + ")");
      require(take_result(*p, Dir::kSerialize, s0, "OneShotQueries"), "serialize returned false");
      require(!take_result(*p, Dir::kDeserialize, d0, "a failing deserialize"),
              "a deserialize from an empty source completed true");
      collect_notifies(p->get_serialize_event_fd(), 1);
      collect_notifies(p->get_deserialize_event_fd(), 1);
    }
    MemoryObjPtr temp = temp_for(*p, layout);
    TaskId s1 = p->submit_serialize({src}, {temp}, probe_keys(1));
    require(take_result(*p, Dir::kSerialize, s1, "OneShotQueries"), "serialize returned false");
    for (int i = 0; i < 3; ++i) {
      require(!p->query_serialize_result(s1), "query_serialize_result(" + std::to_string(s1) +
                                                  ") answered again after its result was taken");
    }
    // A completed, untaken serialize id is invisible to the deserialize direction.
    collect_notifies(p->get_serialize_event_fd(), 1);
    MemoryObjPtr temp2 = temp_for(*p, layout);
    TaskId s2 = p->submit_serialize({src}, {temp2}, probe_keys(1));
    require(wait_signalled(p->get_serialize_event_fd(), result_timeout()),
            "serialize fd never signalled");
    auto cross = p->query_deserialize_result(s2);
    require(!cross, "query_deserialize_result() answered for serialize task " + std::to_string(s2));
    require(take_result(*p, Dir::kSerialize, s2, "OneShotQueries"), "serialize returned false");
    MemoryObjPtr out = make_object(layout);
    TaskId d1 = p->submit_deserialize({temp}, {out}, probe_keys(1));
    require(take_result(*p, Dir::kDeserialize, d1, "OneShotQueries"), "deserialize returned false");
    require(!p->query_deserialize_result(d1),
            "query_deserialize_result(" + std::to_string(d1) + ") answered twice");
    require(!p->query_serialize_result(d1),
            "query_serialize_result() answered for deserialize task " + std::to_string(d1));
    // Failures are results too: handed out once, in their own direction only.
    TaskId f1 = p->submit_serialize({src}, {make_object(byte_layout(0))}, probe_keys(1));
    TaskId f2 =
        p->submit_deserialize({make_object(byte_layout(0))}, {make_object(layout)}, probe_keys(1));
    require(!take_result(*p, Dir::kSerialize, f1, "a failing serialize"),
            "a serialize into a 0-byte destination completed true");
    require(!take_result(*p, Dir::kDeserialize, f2, "a failing deserialize"),
            "a deserialize from an empty source completed true");
    for (int i = 0; i < 3; ++i) {
      require(!p->query_serialize_result(f1) && !p->query_deserialize_result(f1),
              "the failed serialize task " + std::to_string(f1) +
                  " answered again after its false was taken");
      require(!p->query_deserialize_result(f2) && !p->query_serialize_result(f2),
              "the failed deserialize task " + std::to_string(f2) +
                  " answered again after its false was taken");
    }
  });
}

Verdict UnknownIdsGiveNone(const ProcessorUnderTest& put) {
  OwnedProcessor p(put);
  const TaskId probes[] = {0, 1, 2, 1000, TaskId{1} << 40, ~TaskId{0}};
  for (TaskId id : probes) {
    for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
      try {
        if (query_of(*p, d, id)) {
          return Verdict::fail(std::string("query_") + dir_name(d) + "_result(" +
                               std::to_string(id) + ") answered for an id never issued");
        }
      } catch (const std::exception& e) {
        return Verdict::fail(std::string("query_") + dir_name(d) + "_result(" + std::to_string(id) +
                             ") of an id never issued threw: " + e.what());
      }
    }
  }
  MemoryLayoutDesc layout = fixed_layout(put);
  TaskId id = p->submit_serialize({safe_input(layout, 5)}, {temp_for(*p, layout)}, probe_keys(1));
  if (!poll_until([&] { return p->query_serialize_result(id); }, result_timeout())) {
    return Verdict::fail("serialize task " + std::to_string(id) + " did not complete");
  }
  for (TaskId probe : {id + 1000, id + 12345}) {
    try {
      if (p->query_serialize_result(probe) || p->query_deserialize_result(probe)) {
        return Verdict::fail("a query of id " + std::to_string(probe) + " (never issued) answered");
      }
    } catch (const std::exception& e) {
      return Verdict::fail("a query of id " + std::to_string(probe) + " threw: " + e.what());
    }
  }
  return Verdict::pass();
}

Verdict ConcurrentSubmitters(const ProcessorUnderTest& put) {
  return run_rc_property(
      rc_id("ConcurrentSubmitters", put), {.max_success = 8, .shrink = false}, [&] {
        constexpr int kThreads = 4;
        constexpr int kPerThread = 6;
        OwnedProcessor p(put);
        // Each thread its own layout and values, and the temp a single serialize makes of them.
        struct Input {
          MemoryObjPtr src;
          MemoryObjPtr reference;  // serialized alone, narrowed
          ObjectKey key;           // every pair of the thread's tasks goes under it
        };
        std::vector<Input> inputs;
        const std::vector<ObjectKey> thread_keys = gen_pair_keys(kThreads);
        for (int t = 0; t < kThreads; ++t) {
          MemoryLayoutDesc layout = gen_processor_layout(put, 1u << 14);
          Input in{safe_input(layout, 11 + static_cast<std::uint64_t>(t)), temp_for(*p, layout),
                   thread_keys[static_cast<std::size_t>(t)]};
          TaskId r = p->submit_serialize({in.src}, {in.reference}, {in.key});
          require(take_result(*p, Dir::kSerialize, r, "reference serialize"),
                  "serialize returned false");
          inputs.push_back(in);
        }
        collect_notifies(p->get_serialize_event_fd(), kThreads);

        struct Submitted {
          Dir dir;
          TaskId id;
          int thread;
          std::vector<MemoryObjPtr> dsts;
        };
        std::vector<std::vector<Submitted>> per_thread(kThreads);
        std::vector<std::string> errors(kThreads);
        std::latch start(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            start.arrive_and_wait();
            try {
              const Input& in = inputs[static_cast<std::size_t>(t)];
              for (int i = 0; i < kPerThread; ++i) {
                Dir d = (i + t) % 2 == 0 ? Dir::kSerialize : Dir::kDeserialize;
                // Tasks of 1 to 4 pairs of the thread's input.
                const std::size_t pairs = 1 + static_cast<std::size_t>(i + t) % 4;
                std::vector<MemoryObjPtr> srcs, dsts;
                for (std::size_t k = 0; k < pairs; ++k) {
                  srcs.push_back(d == Dir::kSerialize ? in.src : in.reference);
                  dsts.push_back(d == Dir::kSerialize ? temp_for(*p, in.src->layout())
                                                      : make_object(in.src->layout()));
                }
                per_thread[static_cast<std::size_t>(t)].push_back(
                    {d, submit_of(*p, d, srcs, dsts, std::vector<ObjectKey>(pairs, in.key)), t,
                     dsts});
              }
            } catch (const std::exception& e) {
              errors[static_cast<std::size_t>(t)] = e.what();
            }
          });
        }
        for (auto& th : threads) th.join();
        for (auto& e : errors) require(e.empty(), "a concurrent submit threw: " + e);
        std::set<TaskId> seen[2];
        std::size_t count[2] = {0, 0};
        for (auto& list : per_thread) {
          for (auto& s : list) {
            const int k = s.dir == Dir::kSerialize ? 0 : 1;
            require(seen[k].insert(s.id).second, std::string("two concurrent ") + dir_name(s.dir) +
                                                     " submits got the same id " +
                                                     std::to_string(s.id));
            ++count[k];
          }
        }
        for (auto& list : per_thread) {
          for (auto& s : list) {
            const Input& in = inputs[static_cast<std::size_t>(s.thread)];
            require(
                take_result(*p, s.dir, s.id, "concurrent submit"),
                std::string(dir_name(s.dir)) + " task " + std::to_string(s.id) + " returned false");
            for (std::size_t k = 0; k < s.dsts.size(); ++k) {
              const MemoryObj& dst = *s.dsts[k];
              const std::string which = " (pair " + std::to_string(k) + " of " +
                                        std::to_string(s.dsts.size()) + ") submitted by thread " +
                                        std::to_string(s.thread) + " among 4";
              if (s.dir == Dir::kSerialize) {
                std::string diff = serialized_difference(put, *in.reference, dst);
                require(diff.empty(),
                        "a serialize" + which +
                            " produced other bytes than the same serialize alone: " + diff);
              } else {
                std::string m = decoded_mismatch(*in.src, dst);
                require(m.empty(),
                        "a deserialize" + which + " did not decode to that thread's input: " + m);
              }
            }
          }
        }
        for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
          std::size_t k = d == Dir::kSerialize ? 0 : 1;
          std::uint64_t n = collect_notifies(fd_of(*p, d), count[k]);
          require(n == count[k], std::to_string(count[k]) + " concurrent " + dir_name(d) +
                                     " tasks gave " + std::to_string(n) + " notifies");
        }
      });
}

Verdict MismatchedBatchRejected(const ProcessorUnderTest& put) {
  OwnedProcessor p(put);
  MemoryLayoutDesc layout = fixed_layout(put);
  MemoryObjPtr src = safe_input(layout, 23);
  // Every list in turn is the odd one out, one shorter or one longer than the other two (an
  // empty list included), in both directions: an implementation that compares two of the
  // three lists only is caught whichever it leaves out.
  enum List { kSrcs, kDsts, kKeys };
  const char* const list_name[] = {"srcs", "dsts", "keys"};
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    for (List odd : {kSrcs, kDsts, kKeys}) {
      for (std::size_t n : {std::size_t{1}, std::size_t{2}}) {
        for (std::size_t odd_n : {n - 1, n + 1}) {
          auto count = [&](List l) { return l == odd ? odd_n : n; };
          std::vector<MemoryObjPtr> srcs, dsts;
          for (std::size_t i = 0; i < count(kSrcs); ++i) {
            srcs.push_back(d == Dir::kSerialize ? src : temp_for(*p, layout));
          }
          for (std::size_t i = 0; i < count(kDsts); ++i) {
            dsts.push_back(d == Dir::kSerialize ? temp_for(*p, layout) : make_object(layout));
          }
          const std::string what =
              std::string("submit_") + dir_name(d) + "() with " + std::to_string(count(kSrcs)) +
              " srcs, " + std::to_string(count(kDsts)) + " dsts and " +
              std::to_string(count(kKeys)) + " keys (" + list_name[odd] + " the odd one)";
          try {
            if (d == Dir::kSerialize) {
              p->submit_serialize(srcs, dsts, probe_keys(count(kKeys)));
            } else {
              p->submit_deserialize(srcs, dsts, probe_keys(count(kKeys)));
            }
            return Verdict::fail(what + " did not throw std::invalid_argument");
          } catch (const std::invalid_argument&) {
          } catch (const std::exception& e) {
            return Verdict::fail(what +
                                 " threw something other than std::invalid_argument: " + e.what());
          }
        }
      }
    }
  }
  std::this_thread::sleep_for(kSettle);
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    if (std::uint64_t n = consume_fd(fd_of(*p, d)); n != 0) {
      return Verdict::fail(std::string("a rejected ") + dir_name(d) + " submit still notified (" +
                           std::to_string(n) + ")");
    }
  }
  return Verdict::pass();
}

Verdict SerializeThenDeserialize(const ProcessorUnderTest& put) {
  return run_rc_property(
      rc_id("SerializeThenDeserialize", put), {.max_success = 20, .shrink = false}, [&] {
        const DepthProfile& profile = current_profile();
        MemoryLayoutDesc layout = gen_processor_layout(put, profile.max_group_elements);
        const std::size_t max_pairs =
            pairs_within(layout, profile.max_batch, profile.max_group_elements);
        std::size_t pairs = *gen_batch_size(max_pairs);
        // Half the batches mix in a second layout, no larger than the first: it leads the
        // batch, the first layout follows it, the rest are drawn (a later pair larger than the
        // first, and smaller ones after larger): each pair is framed by its own size.
        std::vector<MemoryLayoutDesc> layouts(pairs, layout);
        bool mixed = false;
        if (max_pairs >= 2 && *uniform_in_range(0, 2) == 1) {
          pairs = std::max<std::size_t>(pairs, 2);
          const MemoryLayoutDesc other =
              gen_processor_layout(put, std::max<std::size_t>(layout.total_elements(), 16));
          mixed = !(other == layout);
          layouts.resize(pairs, layout);
          for (auto& l : layouts) {
            if (*uniform_in_range(0, 2) == 1) l = other;
          }
          layouts[0] = other;
          layouts[1] = layout;
        }
        OwnedProcessor p(put);
        const std::vector<ObjectKey> keys = gen_pair_keys(pairs);
        std::vector<MemoryObjPtr> inputs, temps, roomy, outs;
        for (std::size_t i = 0; i < pairs; ++i) {
          inputs.push_back(safe_input(layouts[i], 29 + i));
          // Temps start as junk, different in each: a byte inside the narrowed size that a
          // serialize leaves unwritten shows as a difference between the two.
          temps.push_back(junk_temp_for(*p, layouts[i], 1000 + i));
          // The same serialize into a temp with more capacity must narrow to the same size.
          roomy.push_back(junk_temp_for(*p, layouts[i], 2000 + i, 64 + i));
          outs.push_back(make_object(layouts[i]));
        }
        // What each temp held before: bytes past the count a serialize reports stay as they
        // were, as the serde's own contract says (docs/serde.md).
        auto snapshot = [](const std::vector<MemoryObjPtr>& objs) {
          std::vector<std::vector<std::byte>> out;
          for (const auto& o : objs) {
            auto bytes = o->physical_bytes();
            out.emplace_back(bytes.begin(), bytes.end());
          }
          return out;
        };
        const auto temps_before = snapshot(temps);
        const auto roomy_before = snapshot(roomy);
        const std::string what =
            std::to_string(pairs) + " pair(s) of " +
            (mixed ? "mixed layouts, the first " + layouts[0].to_string() : layout.to_string());
        TaskId s = p->submit_serialize(inputs, temps, keys);
        TaskId r = p->submit_serialize(inputs, roomy, keys);
        require(take_result(*p, Dir::kSerialize, s, "serialize"),
                "serialize of " + what + " into estimate-sized temps completed false");
        require(take_result(*p, Dir::kSerialize, r, "serialize"),
                "serialize of " + what + " into temps larger than the estimate completed false");
        for (std::size_t i = 0; i < pairs; ++i) {
          const std::size_t estimate = p->estimate_serialized_size(layouts[i]);
          const std::string pair =
              "pair " + std::to_string(i) + " (" + layouts[i].to_string() + ")";
          require(temps[i]->size() <= estimate, "after serialize, the temp of " + pair +
                                                    " reports " + std::to_string(temps[i]->size()) +
                                                    " bytes, more than the " +
                                                    std::to_string(estimate) + "-byte estimate");
          require(serialized_difference(put, *temps[i], *roomy[i]).empty(),
                  "the same input (" + pair + ") serialized into a temp of " +
                      std::to_string(estimate) + " bytes reports " +
                      std::to_string(temps[i]->size()) + " bytes, into one of " +
                      std::to_string(roomy[i]->physical_size()) + " bytes " +
                      std::to_string(roomy[i]->size()) +
                      " (or other bytes): a serialized temp must be narrowed to the bytes "
                      "written, whatever its capacity");
          for (auto [obj, before] :
               {std::pair{&temps[i], &temps_before[i]}, std::pair{&roomy[i], &roomy_before[i]}}) {
            auto now = (*obj)->physical_bytes();
            for (std::size_t b = (*obj)->size(); b < now.size(); ++b) {
              require(now[b] == (*before)[b], "serialize of " + pair + " narrowed its " +
                                                  std::to_string(now.size()) + "-byte temp to " +
                                                  std::to_string((*obj)->size()) +
                                                  " bytes but changed byte " + std::to_string(b) +
                                                  " past that count (bytes of dst past the written "
                                                  "count are left untouched)");
            }
          }
        }
        TaskId d = p->submit_deserialize(temps, outs, keys);
        require(take_result(*p, Dir::kDeserialize, d, "deserialize"),
                "deserialize of the processor's own output (" + what + ") completed false");
        for (std::size_t i = 0; i < pairs; ++i) {
          std::string m = decoded_mismatch(*inputs[i], *outs[i]);
          require(m.empty(), "pair " + std::to_string(i) + " of " + std::to_string(pairs) + " (" +
                                 layouts[i].to_string() +
                                 ") did not come back as its own input: " + m);
        }
      });
}

}  // namespace lmcache::conformance_internal::processor_properties

namespace lmcache::conformance {

Verdict run_processor_property(std::string_view property, const ProcessorUnderTest& processor) {
  using Fn = Verdict (*)(const ProcessorUnderTest&);
#define LMCACHE_PROCESSOR_ENTRY(Name, Checks) \
  {#Name, &conformance_internal::processor_properties::Name},
  static const std::pair<std::string_view, Fn> kTable[] = {
      LMCACHE_CONFORMANCE_PROCESSOR_PROPERTIES(LMCACHE_PROCESSOR_ENTRY)};
#undef LMCACHE_PROCESSOR_ENTRY
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(processor);
      } catch (const std::exception& e) {
        return Verdict::fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::fail("unknown processor property '" + std::string(property) + "'");
}

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
int processor_conformance_link_anchor() { return 0; }
}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ProcessorConformance);

#define LMCACHE_PROCESSOR_TEST(Name, Checks) \
  LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, Name, run_processor_property)
LMCACHE_CONFORMANCE_PROCESSOR_PROPERTIES(LMCACHE_PROCESSOR_TEST)
#undef LMCACHE_PROCESSOR_TEST

}  // namespace lmcache::conformance
