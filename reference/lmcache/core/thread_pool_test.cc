#include "lmcache/core/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace lmcache {
namespace {

using namespace std::chrono_literals;

TEST(ThreadPoolConcurrency, RejectsZeroThreads) {
  EXPECT_THROW(ThreadPool(0), std::invalid_argument);
}

TEST(ThreadPoolConcurrency, RunsEveryJobBeforeShutdownReturns) {
  std::atomic<int> ran{0};
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3u);
  for (int i = 0; i < 500; ++i) pool.submit([&] { ran.fetch_add(1); });
  pool.shutdown();
  EXPECT_EQ(ran.load(), 500);
}

TEST(ThreadPoolConcurrency, OneThreadRunsJobsInFifoOrder) {
  std::vector<int> order;  // one worker: no lock needed
  ThreadPool pool(1);
  for (int i = 0; i < 20; ++i) pool.submit([&order, i] { order.push_back(i); });
  pool.shutdown();
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], i);
}

TEST(ThreadPoolConcurrency, SubmitAfterShutdownIsALogicErrorAndShutdownIsIdempotent) {
  ThreadPool pool(1);
  pool.shutdown();
  EXPECT_THROW(pool.submit([] {}), std::logic_error);
  EXPECT_NO_THROW(pool.shutdown());
}

TEST(ThreadPoolConcurrency, EmptyJobRejected) {
  ThreadPool pool(1);
  EXPECT_THROW(pool.submit(ThreadPool::Job()), std::invalid_argument);
}

TEST(ThreadPoolConcurrency, ThrowingJobIsCountedAndTheWorkerSurvives) {
  std::atomic<int> ran{0};
  ThreadPool pool(1);
  pool.submit([] { throw std::runtime_error("x"); });
  pool.submit([&] { ran.fetch_add(1); });
  pool.shutdown();
  EXPECT_EQ(pool.failed_jobs(), 1u);
  EXPECT_EQ(ran.load(), 1);
}

TEST(ThreadPoolConcurrency, WorkersRunConcurrently) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::atomic<int> met{0};
  ThreadPool pool(2);
  for (int i = 0; i < 2; ++i) {
    pool.submit([&] {
      std::unique_lock lock(mu);
      ++arrived;
      cv.notify_all();
      if (cv.wait_for(lock, 5s, [&] { return arrived == 2; })) met.fetch_add(1);
    });
  }
  pool.shutdown();
  EXPECT_EQ(met.load(), 2);
}

TEST(ThreadPoolConcurrency, ShutdownFromAWorkerIsALogicError) {
  std::atomic<bool> threw{false};
  ThreadPool pool(1);
  EXPECT_FALSE(pool.is_worker_thread());
  pool.submit([&] {
    try {
      pool.shutdown();
    } catch (const std::logic_error&) {
      threw = true;
    }
  });
  pool.shutdown();
  EXPECT_TRUE(threw.load());
}

TEST(ThreadPoolConcurrency, ConcurrentShutdownCallsAllWaitForTheDrain) {
  std::atomic<int> ran{0};
  ThreadPool pool(2);
  for (int i = 0; i < 100; ++i) {
    pool.submit([&] {
      std::this_thread::yield();
      ran.fetch_add(1);
    });
  }
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      pool.shutdown();
      if (ran.load() == 100) ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 3);
}

TEST(ThreadPoolConcurrency, RejectsNegativeIdleSpin) {
  EXPECT_THROW(ThreadPool(1, ThreadPoolOptions{std::chrono::nanoseconds(-1)}),
               std::invalid_argument);
}

TEST(ThreadPoolConcurrency, SpinningWorkersRunEveryJobAndShutDown) {
  std::atomic<int> ran{0};
  ThreadPool pool(2, ThreadPoolOptions{std::chrono::milliseconds(5)});
  for (int round = 0; round < 50; ++round) {
    pool.submit([&] { ran.fetch_add(1); });
    if (round % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  pool.shutdown();  // wakes the spinners too
  EXPECT_EQ(ran.load(), 50);
}

// Each part index runs exactly once, whatever the number of parts and workers.
TEST(ThreadPoolConcurrency, RunPartsRunsEveryPartOnce) {
  for (std::size_t workers : {1, 3}) {
    for (auto spin : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(100000)}) {
      ThreadPool pool(workers, ThreadPoolOptions{spin});
      for (std::size_t parts : {0, 1, 2, 3, 17, 256}) {
        std::vector<std::atomic<int>> runs(parts);
        pool.run_parts(parts, [&](std::size_t i) { runs.at(i).fetch_add(1); });
        for (std::size_t i = 0; i < parts; ++i) {
          EXPECT_EQ(runs[i].load(), 1) << "part " << i << " of " << parts << ", workers " << workers
                                       << ", spin " << spin.count() << " ns";
        }
      }
    }
  }
}

// Workers do take parts: two parts that each wait until both are running at once can only
// finish when a worker ran one of them while the caller ran the other.
TEST(ThreadPoolConcurrency, RunPartsRunsPartsOnWorkersConcurrently) {
  ThreadPool pool(1);
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  std::atomic<int> met{0};
  std::set<std::thread::id> threads;
  pool.run_parts(2, [&](std::size_t) {
    std::unique_lock lock(mu);
    ++running;
    threads.insert(std::this_thread::get_id());
    cv.notify_all();
    if (cv.wait_for(lock, 10s, [&] { return running == 2; })) met.fetch_add(1);
  });
  EXPECT_EQ(met.load(), 2);
  EXPECT_EQ(threads.size(), 2u);
}

// The caller never waits for a worker to become free: with the only worker blocked, every
// part runs on the calling thread.
TEST(ThreadPoolConcurrency, RunPartsWithEveryWorkerBusyRunsOnTheCaller) {
  ThreadPool pool(1);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  bool blocked = false;
  pool.submit([&] {
    std::unique_lock lock(mu);
    blocked = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return blocked; }));
  }
  const auto caller = std::this_thread::get_id();
  std::atomic<int> on_caller{0};
  pool.run_parts(8, [&](std::size_t) {
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
  });
  EXPECT_EQ(on_caller.load(), 8);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  pool.shutdown();
}

TEST(ThreadPoolConcurrency, RunPartsFromAWorkerDoesNotDeadlock) {
  ThreadPool pool(1);
  std::atomic<int> ran{0};
  pool.submit([&] { pool.run_parts(16, [&](std::size_t) { ran.fetch_add(1); }); });
  pool.shutdown();
  EXPECT_EQ(ran.load(), 16);
}

TEST(ThreadPoolConcurrency, RunPartsAfterShutdownRunsOnTheCaller) {
  ThreadPool pool(2);
  pool.shutdown();
  std::atomic<int> ran{0};
  pool.run_parts(5, [&](std::size_t) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 5);
}

TEST(ThreadPoolConcurrency, RunPartsRethrowsAfterEveryPartRan) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run_parts(9,
                              [&](std::size_t i) {
                                ran.fetch_add(1);
                                if (i % 4 == 1) throw std::runtime_error("part failed");
                              }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 9);
  EXPECT_EQ(pool.failed_jobs(), 0u);  // helper jobs never leak a part's exception
}

TEST(ThreadPoolConcurrency, RunPartsRejectsMoreThanUint32Parts) {
  ThreadPool pool(1);
  const std::size_t too_many = std::size_t{std::numeric_limits<std::uint32_t>::max()} + 1;
  EXPECT_THROW(pool.run_parts(too_many, [](std::size_t) {}), std::invalid_argument);
}

// Many small calls back to back: helper jobs that find nothing left must not pile up, block
// or run a part twice.
TEST(ThreadPoolConcurrency, RunPartsBackToBackFromSeveralThreads) {
  ThreadPool pool(2, ThreadPoolOptions{std::chrono::microseconds(20)});
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t) {
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call) {
        pool.run_parts(4, [&](std::size_t i) { total.fetch_add(static_cast<long>(i) + 1); });
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 3L * 200 * (1 + 2 + 3 + 4));
}

std::size_t affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return static_cast<std::size_t>(CPU_COUNT(&set));
}

TEST(ComputePoolConcurrency, OnePoolSizedToTheCpusLessOne) {
  ThreadPool* pool = compute_pool();
  EXPECT_EQ(compute_pool(), pool);
  const std::size_t cpus = affinity_cpus();
  if (cpus == 1) {
    EXPECT_EQ(pool, nullptr);
    return;
  }
  ASSERT_NE(pool, nullptr);
  if (cpus > 1) {
    EXPECT_EQ(pool->num_threads(), cpus - 1);
  }
  std::atomic<int> ran{0};
  pool->run_parts(64, [&](std::size_t) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 64);
}

TEST(ComputePoolConcurrency, ConcurrentFirstCallsAgree) {
  std::vector<ThreadPool*> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = compute_pool(); });
  }
  for (auto& t : threads) t.join();
  for (ThreadPool* p : seen) EXPECT_EQ(p, seen[0]);
}

// A child made by fork() has none of the parent's threads: it gets a pool of its own, and
// run_parts works there. (Not in the TSan subset: TSan and fork() do not mix well.)
TEST(ComputePoolAfterFork, ChildGetsAWorkingPool) {
  ThreadPool* parent = compute_pool();
  if (parent != nullptr) parent->run_parts(4, [](std::size_t) {});  // workers exist
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int> ran{0};
    ThreadPool* pool = compute_pool();
    if (pool != nullptr) pool->run_parts(32, [&](std::size_t) { ran.fetch_add(1); });
    const bool ok = (pool == nullptr) == (parent == nullptr) && (pool == nullptr || ran == 32);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The calling thread pinned to one CPU of its affinity set, for the scope; threads it starts
// meanwhile (a pool's workers) inherit the pin. A worker then always runs on the caller's CPU,
// which makes every call that shares parts one that held its caller up (run_parts(): "a worker
// ran a part on the caller's CPU"), whatever the timing.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    CPU_ZERO(&saved_);
    pinned_ = sched_getaffinity(0, sizeof(saved_), &saved_) == 0;
    int cpu = 0;
    while (pinned_ && cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved_)) ++cpu;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pinned_ = pinned_ && cpu < CPU_SETSIZE && sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinnedToOneCpu() {
    if (pinned_) sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  bool pinned() const { return pinned_; }

 private:
  cpu_set_t saved_;
  bool pinned_ = false;
};

// Whether a run_parts() call of two parts on a one-worker pool offered the worker a part: the
// caller's first part submits a marker job and waits for it. The queue is FIFO and the worker
// alone, so a helper job the call queued runs before the marker and claims the second part,
// while the caller holds the first; a call that queued nothing (the back-off) leaves the second
// part to the caller. No wake-up time is assumed: the caller waits as long as the worker takes.
// Returns the number of parts the worker ran: 0 when it was offered none, else 1 or 2 (it may
// claim the first part too before the caller does).
int parts_the_worker_ran(ThreadPool& pool) {
  const auto caller = std::this_thread::get_id();
  std::mutex mu;
  std::condition_variable cv;
  bool marker_ran = false;
  std::atomic<int> on_worker{0};
  pool.run_parts(2, [&](std::size_t i) {
    if (std::this_thread::get_id() != caller) {
      on_worker.fetch_add(1);
      return;
    }
    if (i != 0) return;
    pool.submit([&] {
      std::lock_guard lock(mu);
      marker_ran = true;
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return marker_ran; });
  });
  return on_worker.load();
}

// A worker that holds the caller up (here: it runs on the caller's CPU, both pinned to one)
// makes the pool run the following calls on the caller alone for the back-off period (10
// minutes here, so that the test cannot outlive it).
TEST(ThreadPoolConcurrency, RunPartsBacksOffAfterAWorkerHeldTheCallerUp) {
  PinnedToOneCpu pin;
  if (!pin.pinned()) GTEST_SKIP() << "cannot pin this thread to one CPU";
  ThreadPool pool(1, ThreadPoolOptions{.held_up_backoff = std::chrono::minutes(10)});
  ASSERT_GE(parts_the_worker_ran(pool), 1) << "the first call offered the worker nothing";
  // Backing off: the following calls offer the worker nothing.
  for (int call = 0; call < 3; ++call) EXPECT_EQ(parts_the_worker_ran(pool), 0) << "call " << call;
}

// With the back-off off, workers keep being offered parts, call after call, though each call is
// one that held its caller up.
TEST(ThreadPoolConcurrency, RunPartsWithoutBackOffKeepsSharing) {
  PinnedToOneCpu pin;
  if (!pin.pinned()) GTEST_SKIP() << "cannot pin this thread to one CPU";
  ThreadPool pool(1, ThreadPoolOptions{.held_up_backoff = std::chrono::nanoseconds(0)});
  for (int call = 0; call < 3; ++call) EXPECT_GE(parts_the_worker_ran(pool), 1) << "call " << call;
}

TEST(ThreadPoolConcurrency, RejectsNegativeBackOff) {
  EXPECT_THROW(ThreadPool(1, ThreadPoolOptions{.held_up_backoff = std::chrono::nanoseconds(-1)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace lmcache
