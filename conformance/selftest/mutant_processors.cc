// Processor mutants: the knob queue processor (knob_queue_processor.h) with one bug switched on per
// mutant, each paired with its property and a witness.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <latch>
#include <set>
#include <thread>

#include "knob_queue_processor.h"
#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

ProcessorUnderTest make_queue(ProcessorKnobs k) {
  ProcessorUnderTest p;
  p.name = k.over_checksum ? "queue_processor_checksum" : "queue_processor";
  p.make = [k] { return make_knob_queue_processor(k); };
  p.input_dtypes = {DType::kFloat32, DType::kBFloat16};
  p.reference = k.over_checksum ? reference_checksum_serde().reference
                                : reference_fp8_serde(Fp8Format::kE4M3FN).reference;
  return p;
}

Impl queue_impl(ProcessorKnobs k) {
  Impl i;
  i.processor = make_queue(k);
  return i;
}

// ---------------------------------------------------------------------------------------------
// Witness scenarios.

const MemoryLayoutDesc kLayout = MemoryLayoutDesc::single({4, 4}, DType::kFloat32);

MemoryObjPtr input(std::uint64_t seed) {
  MemoryObjPtr o = MemoryObj::allocate(kLayout);
  for (std::size_t i = 0; i < 16; ++i) {
    const float v = static_cast<float>((seed + i) % 7) * 0.5f - 1.0f;
    std::memcpy(o->data() + 4 * i, &v, 4);
  }
  return o;
}

MemoryObjPtr temp(std::size_t bytes = 24) {
  return MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8));
}

std::optional<bool> wait_result(SerdeProcessor& p, bool serialize, TaskId id) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = serialize ? p.query_serialize_result(id) : p.query_deserialize_result(id);
    if (r) return r;
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

// Runs one task and returns its result (nullopt: it never completed).
std::optional<bool> run_task(SerdeProcessor& p, bool serialize, std::vector<MemoryObjPtr> srcs,
                             std::vector<MemoryObjPtr> dsts) {
  std::vector<ObjectKey> keys = probe_keys(srcs.size());
  TaskId id = serialize ? p.submit_serialize(std::move(srcs), std::move(dsts), std::move(keys))
                        : p.submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
  return wait_result(p, serialize, id);
}

using ProcessorWitness = std::function<std::string(SerdeProcessor&)>;

std::function<std::string(const Impl&)> with_processor(ProcessorWitness w) {
  return [w](const Impl& i) {
    SerdeProcessorPtr p = i.processor.make();
    std::string r = w(*p);
    p->close();
    return r;
  };
}

void add(std::vector<Mutant>& out, std::string name, BugClass c, std::string property,
         std::string bug, ProcessorKnobs k, std::function<std::string(const Impl&)> witness) {
  ProcessorKnobs base;
  base.workers = k.workers;
  base.over_checksum = k.over_checksum;
  out.push_back(mutant(std::move(name), ImplementationKind::kProcessor, c, std::move(property),
                       std::move(bug), queue_impl(k), queue_impl(base), std::move(witness)));
}

}  // namespace

ProcessorUnderTest queue_processor() { return make_queue({}); }

ProcessorUnderTest queue_processor_over_checksum() { return make_queue({.over_checksum = true}); }

void add_processor_mutants(std::vector<Mutant>& out) {
  add(out, "one_fd_for_both_directions", BugClass::kFailureOrder, "DistinctEventFds",
      "one eventfd for both directions", {.same_fd = true}, with_processor([](SerdeProcessor& p) {
        return p.get_serialize_event_fd() == p.get_deserialize_event_fd()
                   ? std::string("both directions share fd ") +
                         std::to_string(p.get_serialize_event_fd())
                   : std::string();
      }));
  add(out, "missing_notify", BugClass::kFailureOrder, "OneNotifyPerTask",
      "every second task is never signalled", {.skip_every_second_notify = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        for (int i = 0; i < 2; ++i) run_task(p, true, {input(1)}, {temp()});
        std::this_thread::sleep_for(50ms);
        std::uint64_t n = consume_fd(p.get_serialize_event_fd());
        return n == 2 ? "" : "2 tasks gave " + std::to_string(n) + " notifies";
      }));
  add(out, "query_answers_twice", BugClass::kFailureOrder, "OneShotQueries",
      "a query does not take the result", {.answer_twice = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        TaskId id = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        wait_result(p, true, id);
        return p.query_serialize_result(id) ? "a result was handed out twice" : "";
      }));
  add(out, "unknown_id_throws", BugClass::kFailureOrder, "UnknownIdsGiveNone",
      "a query of an id never issued throws", {.throw_on_unknown = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        try {
          p.query_serialize_result(12345);
        } catch (const std::exception& e) {
          return std::string("threw: ") + e.what();
        }
        return {};
      }));
  add(out, "failure_not_signalled", BugClass::kFailureOrder, "FailureReportedAsFalse",
      "a failed task is never signalled", {.no_notify_on_failure = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        run_task(p, true, {input(1)}, {temp(0)});
        std::this_thread::sleep_for(50ms);
        return consume_fd(p.get_serialize_event_fd()) == 1 ? "" : "the failed task gave no notify";
      }));
  add(out, "racy_task_ids", BugClass::kConcurrency, "ConcurrentSubmitters",
      "ids from a read-then-write counter", {.racy_ids = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        std::vector<TaskId> ids(4);
        std::latch start(4);
        std::vector<std::thread> pool;
        for (int t = 0; t < 4; ++t) {
          pool.emplace_back([&, t] {
            start.arrive_and_wait();
            ids[static_cast<std::size_t>(t)] =
                p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
          });
        }
        for (auto& th : pool) th.join();
        return std::set<TaskId>(ids.begin(), ids.end()).size() == 4 ? ""
                                                                    : "4 submits got repeated ids";
      }));
  auto close_leak = [](const Impl& i) -> std::string {
    ProcessResources before = ProcessResources::take();
    {
      SerdeProcessorPtr p = i.processor.make();
      run_task(*p, true, {input(1)}, {temp()});
      p->close();
      std::string leak = resources_left_over(before, 1s);
      if (!leak.empty()) return "after close(): " + leak;
    }
    return {};
  };
  add(out, "processor_close_leaks_fd", BugClass::kState, "CloseReleasesResources",
      "close() leaves an eventfd open", {.leak_fd_on_close = true}, close_leak);
  add(out, "processor_close_leaks_thread", BugClass::kState, "CloseReleasesResources",
      "close() does not join the worker", {.leak_thread_on_close = true}, close_leak);
  add(out, "close_drops_queued_work", BugClass::kFailureOrder, "CloseCompletesQueuedWork",
      "close() drops what is still queued", {.drop_queued_on_close = true},
      [](const Impl& impl) -> std::string {
        // Tasks still queued when close() runs: 16 of 1 MiB each behind one worker, in up to 10
        // rounds (a fresh processor each), since how far the worker got before close() is the
        // scheduler's business; a correct processor answers every task of every round.
        const MemoryLayoutDesc big = MemoryLayoutDesc::single({512, 512}, DType::kFloat32);
        MemoryObjPtr src = MemoryObj::allocate(big);
        for (int round = 0; round < 10; ++round) {
          SerdeProcessorPtr p = impl.processor.make();
          std::vector<TaskId> ids;
          for (int i = 0; i < 16; ++i) {
            ids.push_back(p->submit_serialize({src}, {temp(p->estimate_serialized_size(big))},
                                              probe_keys(1)));
          }
          p->close();
          for (TaskId id : ids) {
            if (!p->query_serialize_result(id)) return "a task queued before close() has no result";
          }
        }
        return {};
      });
  add(out, "submit_after_close_accepted", BugClass::kFailureOrder, "UseAfterClose",
      "a submit after close() is accepted", {.submit_after_close_ok = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        p.close();
        try {
          p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        } catch (const std::logic_error&) {
          return {};
        }
        return "a submit after close() was accepted";
      }));
  add(out, "mismatched_batch_accepted", BugClass::kFailureOrder, "MismatchedBatchRejected",
      "lists of different lengths are accepted", {.accept_mismatched = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        try {
          p.submit_serialize({input(1), input(2)}, {temp()}, probe_keys(2));
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "2 sources and 1 destination were accepted";
      }));
  add(out, "processor_key_count_unchecked", BugClass::kSizes, "MismatchedBatchRejected",
      "compares the lengths of srcs and dsts only: a task with more or fewer keys than pairs is "
      "accepted",
      {.key_count_unchecked = true}, with_processor([](SerdeProcessor& p) -> std::string {
        try {
          p.submit_deserialize({temp()}, {input(1)}, probe_keys(3));
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a deserialize of 1 pair with 3 keys was accepted";
      }));
  add(out, "ids_per_direction", BugClass::kState, "OneShotQueries",
      "one id counter per direction: the first serialize and the first deserialize are both 0, "
      "and a query of either direction takes the other's result",
      {.ids_per_direction = true}, with_processor([](SerdeProcessor& p) -> std::string {
        TaskId s = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        TaskId d = p.submit_deserialize({temp(0)}, {MemoryObj::allocate(kLayout)}, probe_keys(1));
        return s == d ? "a serialize and a deserialize task both got id " + std::to_string(s) : "";
      }));
  add(out, "pads_past_count", BugClass::kSizes, "SerializeThenDeserialize",
      "serialize zero-pads each temp to an 8-byte boundary past the count it reports",
      {.pads_past_count = true}, with_processor([](SerdeProcessor& p) -> std::string {
        // 9 float32 elements: 9 fp8 bytes, 7 of padding to the next multiple of 8.
        MemoryObjPtr src = MemoryObj::allocate(MemoryLayoutDesc::single({3, 3}, DType::kFloat32));
        std::memset(src->data(), 0, src->size());
        MemoryObjPtr t = temp(100);
        std::memset(t->physical_bytes().data(), 0x5A, 100);
        run_task(p, true, {src}, {t});
        const std::size_t n = t->size();
        for (std::size_t b = n; b < 100; ++b) {
          if (t->physical_bytes()[b] != std::byte{0x5A}) {
            return "byte " + std::to_string(b) + " past the count " + std::to_string(n) +
                   " changed";
          }
        }
        return {};
      }));
  add(out, "empty_batch_dropped", BugClass::kSizes, "OneNotifyPerTask",
      "an empty batch gets an id but is never queued: no result, no notify",
      {.empty_batch_dropped = true}, with_processor([](SerdeProcessor& p) -> std::string {
        TaskId id = p.submit_serialize({}, {}, {});
        return wait_result(p, true, id) ? "" : "an empty batch never completed";
      }));
  add(out, "frames_first_pair_size", BugClass::kSizes, "SerializeThenDeserialize",
      "serializes every pair of a batch as if it had the first pair's layout",
      {.frames_first_pair_size = true}, with_processor([](SerdeProcessor& p) -> std::string {
        const MemoryLayoutDesc small = MemoryLayoutDesc::single({2, 2}, DType::kFloat32);
        MemoryObjPtr a = MemoryObj::allocate(small), b = input(1);
        std::memset(a->data(), 0, a->size());
        MemoryObjPtr ta = temp(p.estimate_serialized_size(small)), tb = temp();
        run_task(p, true, {a, b}, {ta, tb});
        MemoryObjPtr out = MemoryObj::allocate(kLayout);
        run_task(p, false, {tb}, {out});
        return std::memcmp(out->data(), b->data(), b->size()) == 0
                   ? ""
                   : "the second, larger pair did not decode to its input";
      }));
  add(out, "estimate_too_small", BugClass::kSizes, "SerializeThenDeserialize",
      "estimates 0 bytes for everything", {.zero_estimate = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        auto r = run_task(p, true, {input(1)}, {temp(p.estimate_serialized_size(kLayout))});
        return r.value_or(false) ? "" : "a serialize into an estimate-sized temp failed";
      }));

  // Realistic bugs.
  add(out, "decodes_every_pair_into_the_first", BugClass::kData, "SerializeThenDeserialize",
      "a deserialize batch decodes every pair into dsts[0] (and reports success)",
      {.decode_all_into_first = true}, with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr a = input(1), b = input(2), ta = temp(), tb = temp();
        run_task(p, true, {a, b}, {ta, tb});
        MemoryObjPtr oa = MemoryObj::allocate(kLayout), ob = MemoryObj::allocate(kLayout);
        run_task(p, false, {ta, tb}, {oa, ob});
        return std::memcmp(ob->data(), b->data(), 64) == 0 ? "" : "pair 1 was not decoded";
      }));
  add(out, "reports_the_last_pair", BugClass::kFailureOrder, "FailureReportedAsFalse",
      "a task reports how its last pair went, so a failing pair before a good one is lost",
      {.result_of_last_pair = true}, with_processor([](SerdeProcessor& p) -> std::string {
        auto r = run_task(p, true, {input(1), input(2)}, {temp(0), temp()});
        return r.value_or(true) ? "a task whose first pair failed completed true" : "";
      }));
  add(out, "failures_answered_twice", BugClass::kFailureOrder, "OneShotQueries",
      "failed results stay in the completion map", {.failures_answered_twice = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        TaskId id = p.submit_serialize({input(1)}, {temp(0)}, probe_keys(1));
        wait_result(p, true, id);
        return p.query_serialize_result(id) ? "a failed result was handed out twice" : "";
      }));
  add(out, "close_clears_results", BugClass::kFailureOrder, "CloseCompletesQueuedWork",
      "close() clears results that completed and were not taken yet",
      {.close_clears_results = true}, with_processor([](SerdeProcessor& p) -> std::string {
        TaskId id = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        wait_readable(p.get_serialize_event_fd(), 5s);
        p.close();
        return p.query_serialize_result(id) ? "" : "a completed result is gone after close()";
      }));
  add(out, "fd_leak_every_64_tasks", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "opens an eventfd every 64 tasks and closes them only in close()",
      {.fd_leak_every_64_tasks = true}, with_processor([](SerdeProcessor& p) -> std::string {
        run_task(p, true, {input(1)}, {temp()});
        const std::size_t before = open_fd_count();
        for (int i = 0; i < 200; ++i) run_task(p, true, {input(1)}, {temp()});
        return open_fd_count() > before
                   ? "200 tasks opened " + std::to_string(open_fd_count() - before) + " fds"
                   : "";
      }));
  add(out, "keeps_task_buffers", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "keeps every task's buffers until close()", {.keeps_task_buffers = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr src = input(1);
        run_task(p, true, {src}, {temp()});
        std::this_thread::sleep_for(20ms);
        return src.use_count() > 1 ? "a finished task's source is still referenced" : "";
      }));
  add(out, "sticky_failure_flag", BugClass::kState, "StatefulModel",
      "an error flag set by a failed task also fails the next task", {.sticky_failure = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        run_task(p, true, {input(1)}, {temp(0)});
        return run_task(p, true, {input(1)}, {temp()}).value_or(false)
                   ? ""
                   : "a valid task after a failed one completed false";
      }));
  add(out, "shared_pair_cursor", BugClass::kConcurrency, "ConcurrentSubmitters",
      "two workers, and the running task's pair index is a member both share",
      {.workers = 2, .shared_pair_cursor = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        const std::vector<ObjectKey> keys = probe_keys(6);
        for (int round = 0; round < 50; ++round) {
          std::vector<MemoryObjPtr> srcs, temps;
          for (int i = 0; i < 6; ++i) {
            srcs.push_back(input(static_cast<std::uint64_t>(i)));
            temps.push_back(temp());
          }
          TaskId a = p.submit_serialize(srcs, temps, keys);
          std::vector<MemoryObjPtr> temps2;
          for (int i = 0; i < 6; ++i) temps2.push_back(temp());
          TaskId b = p.submit_serialize(srcs, temps2, keys);
          wait_result(p, true, a);
          wait_result(p, true, b);
          for (int i = 0; i < 6; ++i) {
            if (std::memcmp(temps[static_cast<std::size_t>(i)]->data(),
                            temps2[static_cast<std::size_t>(i)]->data(), 16) != 0) {
              return "two tasks running at once serialized the same inputs differently";
            }
          }
        }
        return {};
      }));
  add(out, "serialized_temps_not_narrowed", BugClass::kSizes, "SerializeThenDeserialize",
      "a serialized temp keeps its capacity as size(), so the inner stores the estimate",
      {.no_narrowing = true}, with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr t = temp(100);
        run_task(p, true, {input(1)}, {t});
        return t->size() == 16 ? ""
                               : "16 bytes serialized into a 100-byte temp, size() " +
                                     std::to_string(t->size());
      }));
  add(out, "at_most_16_pairs", BugClass::kSizes, "SerializeThenDeserialize",
      "a fixed array of 16 pairs per task: the rest are skipped, the task still succeeds",
      {.at_most_16_pairs = true}, with_processor([](SerdeProcessor& p) -> std::string {
        std::vector<MemoryObjPtr> srcs, temps;
        for (int i = 0; i < 20; ++i) {
          srcs.push_back(input(1));
          temps.push_back(temp());
        }
        run_task(p, true, srcs, temps);
        return temps[19]->size() == 16 ? "" : "pair 19 of 20 was not serialized";
      }));
  add(out, "flaky_every_97th_task", BugClass::kLuck, "ResourcesBoundedOverManyTasks",
      "one task in 97 (counted across the process) completes false on valid input",
      {.flaky_every_97th_task = true}, with_processor([](SerdeProcessor& p) -> std::string {
        for (int i = 0; i < 100; ++i) {
          if (!run_task(p, true, {input(1)}, {temp()}).value_or(false)) {
            return "task " + std::to_string(i) + " of 100 valid ones completed false";
          }
        }
        return {};
      }));
  // Keys through the processor: a processor over a key-binding serde (checksum) that hands
  // pairs the wrong keys. Its own batches round-trip; pairs read alone or in other batches do not,
  // and its frames are not the reference's.
  add(out, "processor_key_of_first_pair", BugClass::kData, "KeysFollowTheirPairs",
      "every pair of a task is serialized and deserialized under the task's first key",
      {.over_checksum = true, .key_of_first_pair = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        const std::size_t frame = 16 * 4 + 17;
        std::vector<MemoryObjPtr> temps = {temp(frame), temp(frame)};
        TaskId s = p.submit_serialize({input(1), input(2)}, temps, probe_keys(2));
        wait_result(p, true, s);
        TaskId d = p.submit_deserialize({temps[1]}, {MemoryObj::allocate(kLayout)}, {probe_key(1)});
        return wait_result(p, false, d).value_or(false)
                   ? ""
                   : "pair 1 of a batch did not deserialize alone under its own key";
      }));
  add(out, "processor_shared_outcome", BugClass::kConcurrency, "FailureReportedAsFalse",
      "two workers; a task's outcome is one member of the processor that each task sets true when "
      "it starts and false when a pair fails: a task failing beside a good one fails it too",
      {.workers = 2, .shared_outcome = true}, with_processor([](SerdeProcessor& p) -> std::string {
        const MemoryLayoutDesc big = MemoryLayoutDesc::single({1 << 18}, DType::kFloat32);
        MemoryObjPtr src = MemoryObj::allocate(big);
        std::memset(src->data(), 0, src->size());
        for (int attempt = 0; attempt < 20; ++attempt) {
          std::vector<MemoryObjPtr> dsts;
          for (int i = 0; i < 4; ++i) dsts.push_back(temp(p.estimate_serialized_size(big)));
          TaskId good = p.submit_serialize({src, src, src, src}, dsts, probe_keys(4));
          for (int b = 0; b < 4; ++b) run_task(p, true, {input(1)}, {temp(0)});
          if (!wait_result(p, true, good).value_or(true)) {
            return "a valid task failed while failing tasks ran beside it";
          }
        }
        return "";
      }));
  add(out, "processor_inline_key_of_first_pair", BugClass::kData, "InlineMatchesSubmitted",
      "its inline path (the one the serde wrapper takes for small tasks) runs every pair under the "
      "task's first key; submitted tasks are right",
      {.over_checksum = true, .inline_key_of_first_pair = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        std::vector<MemoryObjPtr> temps = {temp(16 * 4 + 17), temp(16 * 4 + 17)};
        if (!p.serialize_inline({input(1), input(2)}, temps, probe_keys(2)).value_or(false)) {
          return "";
        }
        return p.deserialize_inline({temps[1]}, {MemoryObj::allocate(kLayout)}, {probe_key(1)})
                       .value_or(false)
                   ? ""
                   : "pair 1 of an inline batch did not deserialize alone under its own key";
      }));
  add(out, "processor_inline_submits_and_waits", BugClass::kFailureOrder, "InlineMatchesSubmitted",
      "its inline path submits the task and waits for the result: it draws an id and signals an fd "
      "that nobody waits on (the wrapper's poll loop then wakes for nothing and its count of "
      "signals runs ahead)",
      {.inline_submits_and_waits = true}, with_processor([](SerdeProcessor& p) -> std::string {
        std::vector<MemoryObjPtr> temps = {temp()};
        if (!p.serialize_inline({input(1)}, temps, probe_keys(1))) return "";
        pollfd fd{p.get_serialize_event_fd(), POLLIN, 0};
        return ::poll(&fd, 1, 100) == 1 ? "an inline serialize signalled the serialize fd" : "";
      }));
  add(out, "processor_ignores_keys", BugClass::kData, "MatchesReference",
      "every pair goes to the serde under one default key, in both directions",
      {.over_checksum = true, .ignores_keys = true},
      with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr src = input(3);
        MemoryObjPtr t = temp(16 * 4 + 17);
        TaskId s = p.submit_serialize({src}, {t}, {probe_key(5)});
        wait_result(p, true, s);
        MemoryObjPtr want = temp(16 * 4 + 17);
        want->set_used_size(ChecksumSerializer().serialize(*src, *want, probe_key(5)));
        return t->size() == want->size() && std::memcmp(t->data(), want->data(), t->size()) == 0
                   ? ""
                   : "the frame is not the checksum frame of its own key";
      }));
  // A lossy serde's rounding: values every serde keeps round-trip whatever the rounding, so
  // only inputs from the whole value domain, held to the reference's frames, show it.
  add(out, "processor_fp8_rounds_toward_zero", BugClass::kData, "MatchesReference",
      "the processor's fp8 codes are rounded toward zero instead of to nearest even",
      {.rounds_toward_zero = true}, with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr src = MemoryObj::allocate(MemoryLayoutDesc::single({1}, DType::kFloat32));
        const float v = 1.1875f;  // between e4m3fn's 1.125 and 1.25: nearest even is 1.25
        std::memcpy(src->data(), &v, 4);
        MemoryObjPtr t = temp(64);
        TaskId s = p.submit_serialize({src}, {t}, probe_keys(1));
        wait_result(p, true, s);
        MemoryObjPtr want = temp(64);
        want->set_used_size(Fp8Serializer().serialize(*src, *want, probe_key(0)));
        return t->size() == want->size() && std::memcmp(t->data(), want->data(), t->size()) == 0
                   ? ""
                   : "1.1875 is not encoded as the reference's code for 1.25";
      }));
  add(out, "temps_rounded_up", BugClass::kSizes, "SerializeThenDeserialize",
      "serialized temps are narrowed to the count rounded up to 8 bytes (unwritten bytes inside "
      "size())",
      {.temps_rounded_up = true}, with_processor([](SerdeProcessor& p) -> std::string {
        MemoryObjPtr src = MemoryObj::allocate(MemoryLayoutDesc::single({13}, DType::kFloat32));
        MemoryObjPtr t = temp(40);
        TaskId s = p.submit_serialize({src}, {t}, probe_keys(1));
        wait_result(p, true, s);
        return t->size() == 13 ? "" : "13 bytes serialized, size() " + std::to_string(t->size());
      }));
  add(out, "processor_ids_16_bit", BugClass::kState, "TaskIdsNeverReused",
      "task ids are kept in 16 bits: the 65,537th task gets the first one's id",
      {.ids_16_bit = true}, with_processor([](SerdeProcessor& p) -> std::string {
        const TaskId first = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        for (int i = 0; i < 65535; ++i) {
          const TaskId id = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
          if (i % 1024 == 0) wait_result(p, true, id);
        }
        const TaskId later = p.submit_serialize({input(1)}, {temp()}, probe_keys(1));
        return later == first ? "task 65,537 got the first task's id " + std::to_string(first) : "";
      }));
}

}  // namespace lmcache::conformance::selftest
