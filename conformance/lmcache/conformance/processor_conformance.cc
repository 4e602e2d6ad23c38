#include "lmcache/conformance/processor_conformance.h"

#include <cstring>
#include <latch>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance {

namespace {

using internal::CollectNotifies;
using internal::PollUntil;
using internal::ResultTimeout;

enum class Dir { kSerialize, kDeserialize };

const char* DirName(Dir d) { return d == Dir::kSerialize ? "serialize" : "deserialize"; }

int FdOf(const SerdeProcessor& p, Dir d) {
  return d == Dir::kSerialize ? p.get_serialize_event_fd() : p.get_deserialize_event_fd();
}

std::optional<bool> QueryOf(SerdeProcessor& p, Dir d, TaskId id) {
  return d == Dir::kSerialize ? p.query_serialize_result(id) : p.query_deserialize_result(id);
}

TaskId SubmitOf(SerdeProcessor& p, Dir d, std::vector<MemoryObjPtr> srcs,
                std::vector<MemoryObjPtr> dsts) {
  return d == Dir::kSerialize ? p.submit_serialize(std::move(srcs), std::move(dsts))
                              : p.submit_deserialize(std::move(srcs), std::move(dsts));
}

// Owns a processor and closes it however the property ends.
struct Owned {
  SerdeProcessorPtr p;
  explicit Owned(const ProcessorUnderTest& put) : p(put.make()) {
    if (!p) throw std::runtime_error("the processor factory returned null");
  }
  ~Owned() {
    try {
      if (p) p->close();
    } catch (...) {
    }
  }
  SerdeProcessor& operator*() { return *p; }
  SerdeProcessor* operator->() { return p.get(); }
};

std::string Id(std::string_view property, const ProcessorUnderTest& put) {
  return "ProcessorConformance." + std::string(property) + "/" + put.name;
}

// An input every serde keeps exactly: small dyadic values.
MemoryObjPtr SafeInput(const MemoryLayoutDesc& layout, std::uint64_t seed) {
  static constexpr double kValues[] = {0.0, 0.5, -1.0, 2.0, 0.25, -0.125, 1.5, 3.0};
  MemoryObjPtr obj = MakeObject(layout);
  std::uint64_t x = seed | 1;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    DType d = layout.dtypes()[g];
    auto bytes = obj->group_bytes(g);
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      WriteElement(d, bytes.data() + i * element_size(d), kValues[(x >> 33) % 8]);
    }
  }
  return obj;
}

// A temp for the serialized form of `layout`, estimate-sized as the wrapper sizes it.
MemoryObjPtr TempFor(SerdeProcessor& p, const MemoryLayoutDesc& layout) {
  return MakeObject(ByteLayout(p.estimate_serialized_size(layout)));
}

MemoryLayoutDesc FixedLayout(const ProcessorUnderTest& put) {
  return MemoryLayoutDesc::single({4, 4}, put.input_dtypes.front());
}

// Waits for the result of `id` (taking it) or fails the case.
bool TakeResult(SerdeProcessor& p, Dir d, TaskId id, const std::string& what) {
  std::optional<bool> r = PollUntil([&] { return QueryOf(p, d, id); }, ResultTimeout());
  if (!r) {
    FailCase(what + ": " + DirName(d) + " task " + std::to_string(id) +
             " did not complete within " + std::to_string(ResultTimeout().count()) + " ms");
  }
  return *r;
}

// One serialize task per element of `inputs`, then (when `then_deserialize`) one deserialize
// task per serialized temp; checks notifies, results and ordering per direction.
void RunNotifyScenario(SerdeProcessor& p, const std::vector<std::vector<MemoryObjPtr>>& batches) {
  std::vector<std::vector<MemoryObjPtr>> temps;
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    const Dir other = d == Dir::kSerialize ? Dir::kDeserialize : Dir::kSerialize;
    const int fd = FdOf(p, d);
    std::vector<TaskId> ids;
    for (std::size_t t = 0; t < batches.size(); ++t) {
      std::vector<MemoryObjPtr> srcs, dsts;
      if (d == Dir::kSerialize) {
        std::vector<MemoryObjPtr> tmp;
        for (auto& src : batches[t]) tmp.push_back(TempFor(p, src->layout()));
        srcs = batches[t];
        dsts = tmp;
        temps.push_back(tmp);
      } else {
        srcs = temps[t];
        for (auto& src : batches[t]) dsts.push_back(MakeObject(src->layout()));
      }
      ids.push_back(SubmitOf(p, d, srcs, dsts));
    }
    // Scan: every notify read must already have its result stored.
    std::uint64_t notified = 0;
    std::size_t taken = 0;
    std::vector<bool> done(ids.size(), false);
    auto deadline = std::chrono::steady_clock::now() + ResultTimeout();
    while (taken < ids.size()) {
      if (std::chrono::steady_clock::now() > deadline) {
        FailCase(std::to_string(ids.size() - taken) + " of " + std::to_string(ids.size()) + " " +
                 DirName(d) + " tasks did not complete within " +
                 std::to_string(ResultTimeout().count()) + " ms");
      }
      wait_readable(fd, std::chrono::milliseconds(2));
      std::uint64_t before_scan = notified + consume_fd(fd);
      notified = before_scan;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (done[i]) continue;
        if (auto r = QueryOf(p, d, ids[i])) {
          Require(*r, std::string(DirName(d)) + " task " + std::to_string(ids[i]) +
                          " completed false on a valid input");
          done[i] = true;
          ++taken;
        }
      }
      Require(taken >= before_scan, std::to_string(before_scan) + " " + DirName(d) +
                                        " notifies were read but only " + std::to_string(taken) +
                                        " results were stored: a notify came before its result");
    }
    std::uint64_t total = CollectNotifies(fd, ids.size(), notified);
    Require(total == ids.size(), std::to_string(ids.size()) + " " + DirName(d) +
                                     " tasks completed but the " + DirName(d) + " fd counted " +
                                     std::to_string(total) + " notifies (exactly one per task)");
    std::uint64_t cross = consume_fd(FdOf(p, other));
    Require(cross == 0, std::string(DirName(d)) + " tasks notified the " + DirName(other) + " fd " +
                            std::to_string(cross) + " time(s)");
  }
}

Verdict DistinctEventFds(const ProcessorUnderTest& put) {
  Owned a(put);
  Owned b(put);
  int fds[4] = {a->get_serialize_event_fd(), a->get_deserialize_event_fd(),
                b->get_serialize_event_fd(), b->get_deserialize_event_fd()};
  const char* names[4] = {"serialize fd", "deserialize fd", "second instance's serialize fd",
                          "second instance's deserialize fd"};
  if (std::string problem = DistinctOpenFdsProblem(fds, names); !problem.empty()) {
    return Verdict::Fail(problem);
  }
  return Verdict::Pass();
}

Verdict OneNotifyPerTask(const ProcessorUnderTest& put) {
  return RunRcProperty(Id("OneNotifyPerTask", put), {.max_success = 10, .shrink = false}, [&] {
    MemoryLayoutDesc layout = *GenLayout(put.input_dtypes, {1, 2, 64});
    int tasks = *rc::gen::inRange(1, 7);
    std::vector<std::vector<MemoryObjPtr>> batches;
    std::uint64_t seed = 1;
    for (int t = 0; t < tasks; ++t) {
      int pairs = *rc::gen::inRange(1, 4);
      std::vector<MemoryObjPtr> batch;
      for (int i = 0; i < pairs; ++i) batch.push_back(SafeInput(layout, seed++));
      batches.push_back(batch);
    }
    Owned p(put);
    RunNotifyScenario(*p, batches);
  });
}

Verdict OneShotQueries(const ProcessorUnderTest& put) {
  return RunRcProperty(Id("OneShotQueries", put), {.max_success = 10, .shrink = false}, [&] {
    MemoryLayoutDesc layout = *GenLayout(put.input_dtypes, {1, 2, 64});
    Owned p(put);
    MemoryObjPtr src = SafeInput(layout, 3);
    MemoryObjPtr temp = TempFor(*p, layout);
    TaskId s1 = p->submit_serialize({src}, {temp});
    Require(TakeResult(*p, Dir::kSerialize, s1, "OneShotQueries"), "serialize returned false");
    for (int i = 0; i < 3; ++i) {
      Require(!p->query_serialize_result(s1), "query_serialize_result(" + std::to_string(s1) +
                                                  ") answered again after its "
                                                  "result was taken");
    }
    // A completed, untaken serialize id is invisible to the deserialize direction.
    CollectNotifies(p->get_serialize_event_fd(), 1);
    MemoryObjPtr temp2 = TempFor(*p, layout);
    TaskId s2 = p->submit_serialize({src}, {temp2});
    Require(wait_readable(p->get_serialize_event_fd(), ResultTimeout()),
            "serialize fd never signalled");
    auto cross = p->query_deserialize_result(s2);
    Require(!cross, "query_deserialize_result() answered for serialize task " + std::to_string(s2));
    Require(TakeResult(*p, Dir::kSerialize, s2, "OneShotQueries"), "serialize returned false");
    MemoryObjPtr out = MakeObject(layout);
    TaskId d1 = p->submit_deserialize({temp}, {out});
    Require(TakeResult(*p, Dir::kDeserialize, d1, "OneShotQueries"), "deserialize returned false");
    Require(!p->query_deserialize_result(d1),
            "query_deserialize_result(" + std::to_string(d1) + ") answered twice");
    Require(!p->query_serialize_result(d1),
            "query_serialize_result() answered for deserialize task " + std::to_string(d1));
  });
}

Verdict UnknownIdsGiveNone(const ProcessorUnderTest& put) {
  Owned p(put);
  const TaskId probes[] = {0, 1, 2, 1000, TaskId{1} << 40, ~TaskId{0}};
  for (TaskId id : probes) {
    for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
      try {
        if (QueryOf(*p, d, id)) {
          return Verdict::Fail(std::string("query_") + DirName(d) + "_result(" +
                               std::to_string(id) + ") answered for an id never issued");
        }
      } catch (const std::exception& e) {
        return Verdict::Fail(std::string("query_") + DirName(d) + "_result(" + std::to_string(id) +
                             ") of an id never issued threw: " + e.what());
      }
    }
  }
  MemoryLayoutDesc layout = FixedLayout(put);
  TaskId id = p->submit_serialize({SafeInput(layout, 5)}, {TempFor(*p, layout)});
  if (!PollUntil([&] { return p->query_serialize_result(id); }, ResultTimeout())) {
    return Verdict::Fail("serialize task " + std::to_string(id) + " did not complete");
  }
  for (TaskId probe : {id + 1000, id + 12345}) {
    try {
      if (p->query_serialize_result(probe) || p->query_deserialize_result(probe)) {
        return Verdict::Fail("a query of id " + std::to_string(probe) + " (never issued) answered");
      }
    } catch (const std::exception& e) {
      return Verdict::Fail("a query of id " + std::to_string(probe) + " threw: " + e.what());
    }
  }
  return Verdict::Pass();
}

Verdict FailureReportedAsFalse(const ProcessorUnderTest& put) {
  Owned p(put);
  MemoryLayoutDesc layout = FixedLayout(put);
  MemoryObjPtr src = SafeInput(layout, 7);
  auto too_small = [] { return MakeObject(ByteLayout(0)); };
  // Serialize: only a bad pair; a good pair then a bad one; a good pair alone.
  struct Case {
    std::vector<MemoryObjPtr> srcs, dsts;
    bool expected;
    const char* what;
  };
  std::vector<Case> ser_cases = {
      {{src}, {too_small()}, false, "a pair whose destination is 0 bytes"},
      {{src, src}, {TempFor(*p, layout), too_small()}, false, "a good pair then a bad one"},
      {{src}, {TempFor(*p, layout)}, true, "a good pair"},
  };
  MemoryObjPtr good_temp = ser_cases[2].dsts[0];
  std::vector<TaskId> ids;
  for (auto& c : ser_cases) ids.push_back(p->submit_serialize(c.srcs, c.dsts));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto r = PollUntil([&] { return p->query_serialize_result(ids[i]); }, ResultTimeout());
    if (!r)
      return Verdict::Fail(std::string("serialize of ") + ser_cases[i].what + " never completed");
    if (*r != ser_cases[i].expected) {
      return Verdict::Fail(std::string("serialize of ") + ser_cases[i].what + " completed " +
                           (*r ? "true" : "false") + ", expected " +
                           (ser_cases[i].expected ? "true" : "false"));
    }
  }
  std::uint64_t n = CollectNotifies(p->get_serialize_event_fd(), ids.size());
  if (n != ids.size()) {
    return Verdict::Fail(std::to_string(ids.size()) + " serialize tasks (2 failing) gave " +
                         std::to_string(n) + " notifies: failed tasks must be signalled too");
  }
  // Deserialize from an empty source: the pair must throw, the task complete false.
  TaskId bad = p->submit_deserialize({MakeObject(ByteLayout(0))}, {MakeObject(layout)});
  TaskId good = p->submit_deserialize({good_temp}, {MakeObject(layout)});
  auto rb = PollUntil([&] { return p->query_deserialize_result(bad); }, ResultTimeout());
  auto rg = PollUntil([&] { return p->query_deserialize_result(good); }, ResultTimeout());
  if (!rb || !rg) return Verdict::Fail("a deserialize task never completed");
  if (*rb) return Verdict::Fail("deserialize from an empty source completed true");
  if (!*rg) return Verdict::Fail("deserialize of a valid temp completed false");
  n = CollectNotifies(p->get_deserialize_event_fd(), 2);
  if (n != 2) {
    return Verdict::Fail("2 deserialize tasks (1 failing) gave " + std::to_string(n) +
                         " notifies: failed tasks must be signalled too");
  }
  return Verdict::Pass();
}

Verdict ConcurrentSubmitters(const ProcessorUnderTest& put) {
  return RunRcProperty(Id("ConcurrentSubmitters", put), {.max_success = 5, .shrink = false}, [&] {
    MemoryLayoutDesc layout = *GenLayout(put.input_dtypes, {1, 2, 64});
    constexpr int kThreads = 4;
    constexpr int kPerThread = 6;
    Owned p(put);
    MemoryObjPtr src = SafeInput(layout, 11);
    // The reference bytes, and a temp every deserialize task reads.
    MemoryObjPtr reference = TempFor(*p, layout);
    TaskId r = p->submit_serialize({src}, {reference});
    Require(TakeResult(*p, Dir::kSerialize, r, "reference serialize"), "serialize returned false");
    CollectNotifies(p->get_serialize_event_fd(), 1);

    struct Submitted {
      Dir dir;
      TaskId id;
      MemoryObjPtr dst;
    };
    std::vector<std::vector<Submitted>> per_thread(kThreads);
    std::vector<std::string> errors(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          for (int i = 0; i < kPerThread; ++i) {
            Dir d = (i + t) % 2 == 0 ? Dir::kSerialize : Dir::kDeserialize;
            MemoryObjPtr dst = d == Dir::kSerialize ? TempFor(*p, layout) : MakeObject(layout);
            MemoryObjPtr s = d == Dir::kSerialize ? src : reference;
            per_thread[t].push_back({d, SubmitOf(*p, d, {s}, {dst}), dst});
          }
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (auto& e : errors) Require(e.empty(), "a concurrent submit threw: " + e);
    std::set<TaskId> seen[2];
    std::size_t count[2] = {0, 0};
    for (auto& list : per_thread) {
      for (auto& s : list) {
        int k = s.dir == Dir::kSerialize ? 0 : 1;
        Require(seen[k].insert(s.id).second, std::string("two concurrent ") + DirName(s.dir) +
                                                 " submits got the same id " +
                                                 std::to_string(s.id));
        ++count[k];
      }
    }
    for (auto& list : per_thread) {
      for (auto& s : list) {
        Require(TakeResult(*p, s.dir, s.id, "concurrent submit"),
                std::string(DirName(s.dir)) + " task " + std::to_string(s.id) + " returned false");
        if (s.dir == Dir::kSerialize) {
          Require(s.dst->size() == reference->size() &&
                      std::memcmp(s.dst->data(), reference->data(), reference->size()) == 0,
                  "a concurrent serialize produced different bytes than a single one");
        }
      }
    }
    for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
      std::size_t k = d == Dir::kSerialize ? 0 : 1;
      std::uint64_t n = CollectNotifies(FdOf(*p, d), count[k]);
      Require(n == count[k], std::to_string(count[k]) + " concurrent " + DirName(d) +
                                 " tasks gave " + std::to_string(n) + " notifies");
    }
  });
}

Verdict CloseReleasesResources(const ProcessorUnderTest& put) {
  ResourceSnapshot baseline = ResourceSnapshot::Take();
  {
    SerdeProcessorPtr p = put.make();
    MemoryLayoutDesc layout = FixedLayout(put);
    std::vector<TaskId> ids;
    for (int i = 0; i < 3; ++i) {
      ids.push_back(p->submit_serialize({SafeInput(layout, 13)}, {TempFor(*p, layout)}));
    }
    for (TaskId id : ids) {
      if (!PollUntil([&] { return p->query_serialize_result(id); }, ResultTimeout())) {
        p->close();
        return Verdict::Fail("serialize task " + std::to_string(id) + " never completed");
      }
    }
    p->close();
    if (std::string leak = WaitForResources(baseline, internal::SettleTimeout()); !leak.empty()) {
      return Verdict::Fail("after close() the process holds " + leak +
                           " of the processor: close() must release its fds and threads");
    }
    try {
      p->close();
    } catch (const std::exception& e) {
      return Verdict::Fail(std::string("a second close() threw: ") + e.what());
    }
  }
  return Verdict::Pass();
}

Verdict CloseCompletesQueuedWork(const ProcessorUnderTest& put) {
  // The queue must still hold work when close() is called, or a processor that drops its queue
  // passes by luck. So the first task is large (it keeps the workers busy), every buffer exists
  // before the first submit (the submits run back to back), and the check runs in several rounds.
  constexpr int kRounds = 3;
  constexpr int kSmallTasks = 15;
  const DType dtype = put.input_dtypes.front();
  const MemoryLayoutDesc big = MemoryLayoutDesc::single({1024, 2048}, dtype);
  const MemoryLayoutDesc small = MemoryLayoutDesc::single({64, 64}, dtype);
  for (int round = 0; round < kRounds; ++round) {
    SerdeProcessorPtr p = put.make();
    std::vector<std::pair<MemoryObjPtr, MemoryObjPtr>> work;
    work.emplace_back(SafeInput(big, 17), TempFor(*p, big));
    for (int i = 0; i < kSmallTasks; ++i)
      work.emplace_back(SafeInput(small, 18), TempFor(*p, small));
    std::vector<TaskId> ids;
    ids.reserve(work.size());
    for (auto& [src, temp] : work) ids.push_back(p->submit_serialize({src}, {temp}));
    p->close();  // must wait for the queue
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::optional<bool> r = p->query_serialize_result(ids[i]);
      if (!r) {
        return Verdict::Fail("round " + std::to_string(round + 1) + ": task " +
                             std::to_string(ids[i]) + " (" + std::to_string(i + 1) + " of " +
                             std::to_string(ids.size()) +
                             ") queued before close() has no result after close() returned");
      }
      if (!*r) return Verdict::Fail("task " + std::to_string(ids[i]) + " completed false");
    }
  }
  return Verdict::Pass();
}

Verdict UseAfterClose(const ProcessorUnderTest& put) {
  SerdeProcessorPtr p = put.make();
  MemoryLayoutDesc layout = FixedLayout(put);
  MemoryObjPtr src = SafeInput(layout, 19);
  MemoryObjPtr temp = TempFor(*p, layout);
  p->close();
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    try {
      if (d == Dir::kSerialize) {
        p->submit_serialize({src}, {temp});
      } else {
        p->submit_deserialize({temp}, {MakeObject(layout)});
      }
      return Verdict::Fail(std::string("submit_") + DirName(d) + "() after close() did not throw");
    } catch (const std::logic_error&) {
    } catch (const std::exception& e) {
      return Verdict::Fail(
          std::string("submit_") + DirName(d) +
          "() after close() threw something other than std::logic_error: " + e.what());
    }
  }
  try {
    p->close();
    (void)p->query_serialize_result(0);
    (void)p->query_deserialize_result(0);
  } catch (const std::exception& e) {
    return Verdict::Fail(std::string("close() or a query after close() threw: ") + e.what());
  }
  return Verdict::Pass();
}

Verdict MismatchedBatchRejected(const ProcessorUnderTest& put) {
  Owned p(put);
  MemoryLayoutDesc layout = FixedLayout(put);
  MemoryObjPtr src = SafeInput(layout, 23);
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    try {
      if (d == Dir::kSerialize) {
        p->submit_serialize({src, src}, {TempFor(*p, layout)});
      } else {
        p->submit_deserialize({TempFor(*p, layout)}, {MakeObject(layout), MakeObject(layout)});
      }
      return Verdict::Fail(std::string("submit_") + DirName(d) +
                           "() with lists of 2 and 1 did not throw std::invalid_argument");
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
      return Verdict::Fail(std::string("submit_") + DirName(d) +
                           "() with lists of different lengths threw something other than "
                           "std::invalid_argument: " +
                           e.what());
    }
  }
  std::this_thread::sleep_for(internal::kSettle);
  for (Dir d : {Dir::kSerialize, Dir::kDeserialize}) {
    if (std::uint64_t n = consume_fd(FdOf(*p, d)); n != 0) {
      return Verdict::Fail(std::string("a rejected ") + DirName(d) + " submit still notified (" +
                           std::to_string(n) + ")");
    }
  }
  return Verdict::Pass();
}

Verdict SerializeThenDeserialize(const ProcessorUnderTest& put) {
  return RunRcProperty(
      Id("SerializeThenDeserialize", put), {.max_success = 20, .shrink = false}, [&] {
        MemoryLayoutDesc layout = *GenLayout(put.input_dtypes, {1, 3, 128});
        Owned p(put);
        std::size_t estimate = p->estimate_serialized_size(layout);
        MemoryObjPtr temp = MakeObject(ByteLayout(estimate));
        TaskId s = p->submit_serialize({SafeInput(layout, 29)}, {temp});
        Require(TakeResult(*p, Dir::kSerialize, s, "serialize"),
                "serialize into an estimate-sized temp (" + std::to_string(estimate) +
                    " bytes) of " + layout.to_string() + " completed false");
        Require(temp->size() <= estimate,
                "after serialize the temp reports " + std::to_string(temp->size()) +
                    " bytes, more than the " + std::to_string(estimate) + "-byte estimate");
        TaskId d = p->submit_deserialize({temp}, {MakeObject(layout)});
        Require(TakeResult(*p, Dir::kDeserialize, d, "deserialize"),
                "deserialize of the processor's own output completed false");
      });
}

}  // namespace

Verdict RunProcessorProperty(std::string_view property, const ProcessorUnderTest& processor) {
  using Fn = Verdict (*)(const ProcessorUnderTest&);
  static const std::pair<std::string_view, Fn> kTable[] = {
      {"DistinctEventFds", &DistinctEventFds},
      {"OneNotifyPerTask", &OneNotifyPerTask},
      {"OneShotQueries", &OneShotQueries},
      {"UnknownIdsGiveNone", &UnknownIdsGiveNone},
      {"FailureReportedAsFalse", &FailureReportedAsFalse},
      {"ConcurrentSubmitters", &ConcurrentSubmitters},
      {"CloseReleasesResources", &CloseReleasesResources},
      {"CloseCompletesQueuedWork", &CloseCompletesQueuedWork},
      {"UseAfterClose", &UseAfterClose},
      {"MismatchedBatchRejected", &MismatchedBatchRejected},
      {"SerializeThenDeserialize", &SerializeThenDeserialize},
  };
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(processor);
      } catch (const std::exception& e) {
        return Verdict::Fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::Fail("unknown processor property '" + std::string(property) + "'");
}

namespace internal {
int ProcessorConformanceLinkAnchor() { return 0; }
}  // namespace internal

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ProcessorConformance);

LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, DistinctEventFds, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, OneNotifyPerTask, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, OneShotQueries, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, UnknownIdsGiveNone, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, FailureReportedAsFalse, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, ConcurrentSubmitters, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, CloseReleasesResources, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, CloseCompletesQueuedWork, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, UseAfterClose, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, MismatchedBatchRejected, RunProcessorProperty)
LMCACHE_CONFORMANCE_PROPERTY(ProcessorConformance, SerializeThenDeserialize, RunProcessorProperty)

}  // namespace lmcache::conformance
