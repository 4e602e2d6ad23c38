// What only AsyncSerdeProcessor promises: failure messages and how a failing batch stops, null
// objects, the id counter, estimate delegation, narrowing rules, pair order and keys, the shared
// bounded pool, submits that never wait, queriers racing, close() from every side (blocking on
// running work, concurrent closes, submits racing it, from inside a task), the destructor. The
// contracts every processor shares (distinct fds, one notify per task after its result,
// one-shot queries in their own direction, unknown ids, failures reported as false, concurrent
// submitters, mismatched batches, serialize narrowing and round trips, resources released) are
// checked once, by ProcessorConformance over this processor in serde_conformance_test.cc.
#include "lmcache/serde/async_serde_processor.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/process_resources.h"
#include "lmcache/core/testing/gate.h"
#include "lmcache/core/testing/test_keys.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// The thread count once it has settled down to `baseline` (or after 10 s, on a loaded host).
std::size_t settled_thread_count(std::size_t baseline) {
  const ProcessResources threads_only{std::numeric_limits<std::size_t>::max(), baseline};
  return wait_for_resources(threads_only, 10s).threads;
}

constexpr auto kWait = 5000ms;

MemoryObjPtr bytes_obj(std::size_t n) {
  return MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
}

// A serializer whose behaviour a test sets; counts calls and the peak of concurrent calls.
class FakeSerializer : public Serializer {
 public:
  std::function<std::size_t(const MemoryObj&, MemoryObj&)> body =
      [](const MemoryObj&, MemoryObj&) -> std::size_t { return 1; };
  std::size_t estimate = 1;

  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    calls.fetch_add(1);
    {
      std::lock_guard lock(keys_mu);
      keys.push_back(key);
    }
    return body(src, dst);
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc&) const override { return estimate; }

  std::atomic<int> calls{0};
  std::mutex keys_mu;
  std::vector<ObjectKey> keys;  // guarded by keys_mu; in call order
};

class FakeDeserializer : public Deserializer {
 public:
  std::function<void(const MemoryObj&, MemoryObj&)> body = [](const MemoryObj&, MemoryObj&) {};
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    calls.fetch_add(1);
    {
      std::lock_guard lock(keys_mu);
      keys.push_back(key);
    }
    body(src, dst);
  }
  std::atomic<int> calls{0};
  std::mutex keys_mu;
  std::vector<ObjectKey> keys;  // guarded by keys_mu; in call order
};

// Waits for `id` on `fd`, scanning after each wake-up as docs/async-completion.md requires; returns
// the result and adds the drained notifications to *notified.
std::optional<bool> await_result(const std::function<std::optional<bool>()>& query, int fd,
                                 std::uint64_t* notified = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto r = query()) return r;
    if (wait_readable(fd, 100ms)) {
      std::uint64_t n = consume_fd(fd);
      if (notified) *notified += n;
    }
  }
  return query();
}

std::optional<bool> await_serialize(AsyncSerdeProcessor& p, TaskId id) {
  return await_result([&] { return p.query_serialize_result(id); }, p.get_serialize_event_fd());
}
std::optional<bool> await_deserialize(AsyncSerdeProcessor& p, TaskId id) {
  return await_result([&] { return p.query_deserialize_result(id); }, p.get_deserialize_event_fd());
}

using core_internal::Gate;

bool fd_is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

struct Fixture {
  std::shared_ptr<FakeSerializer> ser = std::make_shared<FakeSerializer>();
  std::shared_ptr<FakeDeserializer> deser = std::make_shared<FakeDeserializer>();
};

TEST(AsyncSerdeProcessorConcurrency, DefaultPoolHasOneWorker) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  EXPECT_EQ(p.max_workers(), 1u);
}

// Ported from LMCache's Python tests, and the failure is kept for diagnostics.
TEST(AsyncSerdeProcessorConcurrency, FirstExceptionGivesFalseAndStillSignals) {
  Fixture f;
  f.ser->body = [](const MemoryObj&, MemoryObj&) -> std::size_t {
    throw std::invalid_argument("boom");
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId id = p.submit_serialize({bytes_obj(4)}, {bytes_obj(4)}, test_keys(1));
  ASSERT_TRUE(wait_readable(p.get_serialize_event_fd(), kWait));
  EXPECT_EQ(consume_fd(p.get_serialize_event_fd()), 1u);
  EXPECT_EQ(p.query_serialize_result(id), std::optional<bool>(false));
  EXPECT_EQ(p.failed_task_count(), 1u);
  ASSERT_TRUE(p.failure_message(id).has_value());
  EXPECT_THAT(*p.failure_message(id), HasSubstr("boom"));
  EXPECT_THAT(*p.failure_message(id), HasSubstr("serialize pair 0"));
}

TEST(AsyncSerdeProcessorConcurrency, FirstExceptionStopsTheBatchAndKeepsEarlierPairs) {
  Fixture f;
  f.ser->body = [&](const MemoryObj& src, MemoryObj&) -> std::size_t {
    if (src.size() == 2) throw std::runtime_error("second pair fails");
    return 3;
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  auto d0 = bytes_obj(8), d1 = bytes_obj(8), d2 = bytes_obj(8);
  TaskId id =
      p.submit_serialize({bytes_obj(1), bytes_obj(2), bytes_obj(3)}, {d0, d1, d2}, test_keys(3));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(false));
  EXPECT_EQ(f.ser->calls.load(), 2) << "pairs after the failure are not run";
  EXPECT_EQ(d0->size(), 3u) << "pairs before the failure stay done and narrowed";
  EXPECT_EQ(d1->size(), 8u) << "the failed pair is not narrowed";
  EXPECT_EQ(d2->size(), 8u);
  EXPECT_THAT(p.failure_message(id).value_or(""), HasSubstr("pair 1"));
}

TEST(AsyncSerdeProcessorConcurrency, DeserializeFailureGivesFalse) {
  Fixture f;
  f.deser->body = [](const MemoryObj&, MemoryObj&) { throw std::invalid_argument("bad bytes"); };
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId id = p.submit_deserialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  EXPECT_EQ(await_deserialize(p, id), std::optional<bool>(false));
  EXPECT_THAT(p.failure_message(id).value_or(""), HasSubstr("bad bytes"));
}

TEST(AsyncSerdeProcessorConcurrency, NonStandardExceptionGivesFalse) {
  Fixture f;
  f.ser->body = [](const MemoryObj&, MemoryObj&) -> std::size_t { throw 42; };
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId id = p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(false));
  EXPECT_THAT(p.failure_message(id).value_or(""), HasSubstr("unknown exception"));
}

TEST(AsyncSerdeProcessorConcurrency, NullObjectFailsTheTaskInsteadOfCrashing) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId a = p.submit_serialize({nullptr}, {bytes_obj(1)}, test_keys(1));
  TaskId b = p.submit_serialize({bytes_obj(1)}, {nullptr}, test_keys(1));
  TaskId c =
      p.submit_deserialize({bytes_obj(1), nullptr}, {bytes_obj(1), bytes_obj(1)}, test_keys(2));
  EXPECT_EQ(await_serialize(p, a), std::optional<bool>(false));
  EXPECT_EQ(await_serialize(p, b), std::optional<bool>(false));
  EXPECT_EQ(await_deserialize(p, c), std::optional<bool>(false));
  EXPECT_EQ(f.ser->calls.load(), 0);
  EXPECT_EQ(f.deser->calls.load(), 1) << "pair 0 ran before the null pair 1";
  EXPECT_THAT(p.failure_message(a).value_or(""), HasSubstr("null src"));
  EXPECT_THAT(p.failure_message(b).value_or(""), HasSubstr("null dst"));
}

TEST(AsyncSerdeProcessorConcurrency, IdsComeFromOneCounterAcrossDirections) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  std::vector<TaskId> ids = {
      p.submit_serialize({}, {}, test_keys(0)), p.submit_deserialize({}, {}, test_keys(0)),
      p.submit_serialize({}, {}, test_keys(0)), p.submit_deserialize({}, {}, test_keys(0))};
  EXPECT_EQ(ids, (std::vector<TaskId>{0, 1, 2, 3}));
}

// Ported from LMCache's Python tests.
TEST(AsyncSerdeProcessorConcurrency, EstimateDelegatesToSerializer) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  EXPECT_EQ(p.estimate_serialized_size(MemoryLayoutDesc()), 1u);
  f.ser->estimate = 777;
  EXPECT_EQ(p.estimate_serialized_size(MemoryLayoutDesc::single({3}, DType::kFloat32)), 777u);
}

// Ported from LMCache's Python tests.
TEST(AsyncSerdeProcessorConcurrency, FailedSerializeDoesNotNarrowDst) {
  Fixture f;
  f.ser->body = [](const MemoryObj&, MemoryObj&) -> std::size_t {
    throw std::runtime_error("nope");
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  auto dst = bytes_obj(4096);
  TaskId id = p.submit_serialize({bytes_obj(8)}, {dst}, test_keys(1));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(false));
  EXPECT_EQ(dst->size(), 4096u);
}

// A count larger than the destination cannot be applied: the task fails.
TEST(AsyncSerdeProcessorConcurrency, ImpossibleByteCountFailsTheTask) {
  Fixture f;
  f.ser->body = [](const MemoryObj&, MemoryObj&) -> std::size_t { return 5000; };
  AsyncSerdeProcessor p(f.ser, f.deser);
  auto dst = bytes_obj(4096);
  TaskId id = p.submit_serialize({bytes_obj(8)}, {dst}, test_keys(1));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(false));
  EXPECT_EQ(dst->size(), 4096u);
}

TEST(AsyncSerdeProcessorConcurrency, EachPairIsNarrowedToItsOwnCount) {
  Fixture f;
  f.ser->body = [](const MemoryObj& src, MemoryObj&) -> std::size_t { return src.size() * 2; };
  AsyncSerdeProcessor p(f.ser, f.deser);
  auto d0 = bytes_obj(64), d1 = bytes_obj(64);
  TaskId id = p.submit_serialize({bytes_obj(3), bytes_obj(5)}, {d0, d1}, test_keys(2));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(true));
  EXPECT_EQ(d0->size(), 6u);
  EXPECT_EQ(d1->size(), 10u);
}

TEST(AsyncSerdeProcessorConcurrency, PairsRunInOrder) {
  Fixture f;
  std::vector<std::size_t> order;  // one worker: no lock needed
  f.ser->body = [&](const MemoryObj& src, MemoryObj&) -> std::size_t {
    order.push_back(src.size());
    return 0;
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId id =
      p.submit_serialize({bytes_obj(1), bytes_obj(2), bytes_obj(3), bytes_obj(4)},
                         {bytes_obj(1), bytes_obj(1), bytes_obj(1), bytes_obj(1)}, test_keys(4));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(true));
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 2, 3, 4}));
}

TEST(AsyncSerdeProcessorConcurrency, EmptyBatchSucceeds) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  TaskId id = p.submit_serialize({}, {}, test_keys(0));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(true));
  EXPECT_EQ(f.ser->calls.load(), 0);
}

TEST(AsyncSerdeProcessorConcurrency, EachPairGetsItsOwnKeyInBothDirections) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  const auto ks = test_keys(3);
  EXPECT_EQ(await_serialize(p, p.submit_serialize({bytes_obj(1), bytes_obj(1), bytes_obj(1)},
                                                  {bytes_obj(1), bytes_obj(1), bytes_obj(1)}, ks)),
            std::optional<bool>(true));
  EXPECT_EQ(p.deserialize_inline({bytes_obj(1), bytes_obj(1)}, {bytes_obj(1), bytes_obj(1)},
                                 {ks[2], ks[0]}),
            std::optional<bool>(true));
  p.close();
  EXPECT_EQ(f.ser->keys, ks) << "pairs run in order, each with its key";
  EXPECT_EQ(f.deser->keys, (std::vector<ObjectKey>{ks[2], ks[0]}));
}

TEST(AsyncSerdeProcessorConcurrency, KeyListOfAnotherLengthRejectedNamingIt) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser);
  for (std::size_t nkeys : {0u, 1u, 3u}) {
    try {
      p.submit_serialize({bytes_obj(1), bytes_obj(1)}, {bytes_obj(1), bytes_obj(1)},
                         test_keys(nkeys));
      FAIL() << "expected invalid_argument for " << nkeys << " keys";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("keys has " + std::to_string(nkeys)));
    }
  }
  EXPECT_THROW(p.submit_deserialize({bytes_obj(1)}, {bytes_obj(1)}, {}), std::invalid_argument);
  EXPECT_THROW(p.serialize_inline({bytes_obj(1)}, {bytes_obj(1)}, test_keys(2)),
               std::invalid_argument);
  p.close();
  EXPECT_EQ(f.ser->calls.load(), 0);
  EXPECT_EQ(f.deser->calls.load(), 0);
}

TEST(AsyncSerdeProcessorConcurrency, ConstructionRejectsZeroWorkersAndNullPair) {
  Fixture f;
  EXPECT_THROW(AsyncSerdeProcessor(f.ser, f.deser, 0), std::invalid_argument);
  EXPECT_THROW(AsyncSerdeProcessor(nullptr, f.deser), std::invalid_argument);
  EXPECT_THROW(AsyncSerdeProcessor(f.ser, nullptr), std::invalid_argument);
}

// One notify per task (a batch is one task), counted through the eventfd counter.
// The Done-when scenario of the issue, by name through the registry lives in
// serde_registry_test.cc; here the pool is checked to be shared by both directions.
TEST(AsyncSerdeProcessorConcurrency, PoolIsSharedAndBoundedByMaxWorkers) {
  Fixture f;
  std::atomic<int> in_flight{0}, peak{0};
  auto enter = [&] {
    int now = in_flight.fetch_add(1) + 1;
    int old = peak.load();
    while (now > old && !peak.compare_exchange_weak(old, now)) {
    }
    std::this_thread::yield();
    in_flight.fetch_sub(1);
  };
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    enter();
    return 0;
  };
  f.deser->body = [&](const MemoryObj&, MemoryObj&) { enter(); };
  AsyncSerdeProcessor p(f.ser, f.deser, 2);
  for (int i = 0; i < 50; ++i) {
    p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
    p.submit_deserialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  }
  p.close();
  EXPECT_EQ(f.ser->calls.load(), 50);
  EXPECT_EQ(f.deser->calls.load(), 50);
  EXPECT_GE(peak.load(), 1);
  EXPECT_LE(peak.load(), 2) << "never more than max_workers tasks at once, both directions";
}

// Two tasks of different directions run at the same time with max_workers = 2: each waits
// (bounded) until it sees the other.
TEST(AsyncSerdeProcessorConcurrency, BothDirectionsRunConcurrentlyWithTwoWorkers) {
  Fixture f;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  auto rendezvous = [&] {
    std::unique_lock lock(mu);
    ++arrived;
    cv.notify_all();
    if (!cv.wait_for(lock, kWait, [&] { return arrived >= 2; })) {
      throw std::runtime_error("the other direction never ran concurrently");
    }
  };
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    rendezvous();
    return 0;
  };
  f.deser->body = [&](const MemoryObj&, MemoryObj&) { rendezvous(); };
  AsyncSerdeProcessor p(f.ser, f.deser, 2);
  TaskId s = p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  TaskId d = p.submit_deserialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  EXPECT_EQ(await_serialize(p, s), std::optional<bool>(true));
  EXPECT_EQ(await_deserialize(p, d), std::optional<bool>(true));
}

TEST(AsyncSerdeProcessorConcurrency, SubmitNeverWaitsForRunningWork) {
  Fixture f;
  Gate gate;
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    if (!gate.wait(kWait)) throw std::runtime_error("gate never opened");
    return 0;
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  // The only worker is blocked in the first task; further submits still return ids.
  std::vector<TaskId> ids;
  for (int i = 0; i < 10; ++i)
    ids.push_back(p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1)));
  for (TaskId id : ids) EXPECT_EQ(p.query_serialize_result(id), std::nullopt) << "still pending";
  gate.open();
  for (TaskId id : ids) EXPECT_EQ(await_serialize(p, id), std::optional<bool>(true));
}

TEST(AsyncSerdeProcessorConcurrency, ConcurrentQueriersTakeEachResultOnce) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser, 2);
  constexpr int kTasks = 100;
  for (int i = 0; i < kTasks; ++i) p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  p.close();
  std::atomic<int> taken{0};
  std::vector<std::thread> queriers;
  for (int t = 0; t < 4; ++t) {
    queriers.emplace_back([&] {
      for (TaskId id = 0; id < kTasks; ++id) {
        if (p.query_serialize_result(id)) taken.fetch_add(1);
      }
    });
  }
  for (auto& th : queriers) th.join();
  EXPECT_EQ(taken.load(), kTasks);
}

TEST(AsyncSerdeProcessorConcurrency, CloseDrainsQueuedWorkJoinsThreadsAndClosesFds) {
  const std::size_t before = thread_count();
  Fixture f;
  Gate gate;
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    if (!gate.wait(kWait)) throw std::runtime_error("gate never opened");
    return 1;
  };
  auto p = std::make_unique<AsyncSerdeProcessor>(f.ser, f.deser, 3);
  EXPECT_EQ(thread_count(), before + 3) << "the pool's threads are started up front";
  const int sfd = p->get_serialize_event_fd(), dfd = p->get_deserialize_event_fd();
  ASSERT_TRUE(fd_is_open(sfd));
  ASSERT_TRUE(fd_is_open(dfd));

  std::vector<TaskId> ids;
  for (int i = 0; i < 8; ++i)
    ids.push_back(p->submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1)));
  TaskId d = p->submit_deserialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));

  std::atomic<bool> closed{false};
  std::thread closer([&] {
    p->close();
    closed = true;
  });
  // close() cannot return while tasks are blocked on the gate, whatever the timing.
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(closed.load());
  gate.open();
  closer.join();

  EXPECT_EQ(f.ser->calls.load(), 8) << "queued work still ran";
  EXPECT_EQ(f.deser->calls.load(), 1);
  for (TaskId id : ids) {
    EXPECT_EQ(p->query_serialize_result(id), std::optional<bool>(true)) << "query after close";
  }
  EXPECT_EQ(p->query_deserialize_result(d), std::optional<bool>(true));
  // A joined thread can stay listed in /proc for a moment: wait (bounded) for it to go.
  EXPECT_EQ(settled_thread_count(before), before) << "close() joins the workers";
  EXPECT_FALSE(fd_is_open(sfd));
  EXPECT_FALSE(fd_is_open(dfd));
  EXPECT_EQ(p->get_serialize_event_fd(), -1);
  EXPECT_EQ(p->get_deserialize_event_fd(), -1);

  EXPECT_THROW(p->submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1)), std::logic_error);
  EXPECT_THROW(p->submit_deserialize({}, {}, test_keys(0)), std::logic_error);
  EXPECT_NO_THROW(p->close()) << "idempotent";
  EXPECT_EQ(p->estimate_serialized_size(MemoryLayoutDesc()), 1u) << "still answers after close";
  p.reset();
  EXPECT_EQ(settled_thread_count(before), before);
}

TEST(AsyncSerdeProcessorConcurrency, ConcurrentCloseCallsAllReturnAfterTheDrain) {
  Fixture f;
  std::atomic<int> done{0};
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    std::this_thread::yield();
    done.fetch_add(1);
    return 0;
  };
  AsyncSerdeProcessor p(f.ser, f.deser, 2);
  for (int i = 0; i < 40; ++i) p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  std::vector<std::thread> closers;
  std::atomic<int> seen_after{0};
  for (int t = 0; t < 3; ++t) {
    closers.emplace_back([&] {
      p.close();
      if (done.load() == 40) seen_after.fetch_add(1);
    });
  }
  for (auto& th : closers) th.join();
  EXPECT_EQ(seen_after.load(), 3) << "no close() returns before the work is drained";
}

TEST(AsyncSerdeProcessorConcurrency, SubmitRacingCloseEitherRunsOrThrowsLogicError) {
  Fixture f;
  AsyncSerdeProcessor p(f.ser, f.deser, 2);
  std::atomic<int> accepted{0}, rejected{0};
  std::thread submitter([&] {
    for (int i = 0; i < 200; ++i) {
      try {
        p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
        accepted.fetch_add(1);
      } catch (const std::logic_error&) {
        rejected.fetch_add(1);
      }
    }
  });
  std::this_thread::yield();
  p.close();
  submitter.join();
  EXPECT_EQ(accepted.load() + rejected.load(), 200);
  EXPECT_EQ(f.ser->calls.load(), accepted.load()) << "every accepted task ran before close()";
}

TEST(AsyncSerdeProcessorConcurrency, CloseFromInsideATaskIsALogicError) {
  Fixture f;
  AsyncSerdeProcessor* self = nullptr;
  f.ser->body = [&](const MemoryObj&, MemoryObj&) -> std::size_t {
    self->close();  // throws: it would join its own thread
    return 0;
  };
  AsyncSerdeProcessor p(f.ser, f.deser);
  self = &p;
  TaskId id = p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  EXPECT_EQ(await_serialize(p, id), std::optional<bool>(false));
  EXPECT_THAT(p.failure_message(id).value_or(""), HasSubstr("inside a serde task"));
}

TEST(AsyncSerdeProcessorConcurrency, FailureMessagesAreBounded) {
  Fixture f;
  f.ser->body = [](const MemoryObj&, MemoryObj&) -> std::size_t { throw std::runtime_error("x"); };
  AsyncSerdeProcessor p(f.ser, f.deser);
  const std::size_t n = AsyncSerdeProcessor::kMaxFailureMessages + 10;
  for (std::size_t i = 0; i < n; ++i)
    p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  p.close();
  EXPECT_EQ(p.failed_task_count(), n);
  EXPECT_FALSE(p.failure_message(0).has_value()) << "the oldest message was dropped";
  EXPECT_TRUE(p.failure_message(n - 1).has_value());
}

TEST(AsyncSerdeProcessorConcurrency, DestructorDrainsQueuedWork) {
  Fixture f;
  {
    AsyncSerdeProcessor p(f.ser, f.deser, 2);
    for (int i = 0; i < 20; ++i) p.submit_serialize({bytes_obj(1)}, {bytes_obj(1)}, test_keys(1));
  }
  EXPECT_EQ(f.ser->calls.load(), 20);
}

}  // namespace
}  // namespace lmcache
