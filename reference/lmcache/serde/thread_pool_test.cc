#include "lmcache/serde/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
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

}  // namespace
}  // namespace lmcache
