#include "lmcache/core/completion_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace lmcache {
namespace {

using namespace std::chrono_literals;

TEST(TaskIdCounter, CountsFromZero) {
  TaskIdCounter ids;
  EXPECT_EQ(ids.next(), 0u);
  EXPECT_EQ(ids.next(), 1u);
  EXPECT_EQ(ids.peek(), 2u);
}

TEST(CompletionQueueConcurrency, ResultIsOneShot) {
  CompletionQueue<bool> q;
  EXPECT_FALSE(q.take(7).has_value()) << "unknown id";
  q.complete(7, true);
  auto r = q.take(7);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(*r);
  EXPECT_FALSE(q.take(7).has_value()) << "already taken";
}

TEST(CompletionQueueConcurrency, StoresBeforeNotifyingOncePerTask) {
  CompletionQueue<int> q;
  EXPECT_FALSE(wait_readable(q.event_fd(), 0ms));
  q.complete(1, 10);
  q.complete(2, 20);
  ASSERT_TRUE(wait_readable(q.event_fd(), 1000ms));
  EXPECT_EQ(q.consume_wakeup(), 2u) << "one notify per completed task, folded into one read";
  EXPECT_FALSE(wait_readable(q.event_fd(), 0ms));
  auto all = q.take_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all.at(1), 10);
  EXPECT_EQ(all.at(2), 20);
  EXPECT_TRUE(q.take_all().empty());
}

TEST(CompletionQueue, TakeIfLeavesAnUnwantedResultWaiting) {
  CompletionQueue<int> q;
  q.complete(1, 10);
  q.complete(2, 21);
  auto odd = [](int v) { return v % 2 == 1; };
  EXPECT_EQ(q.take_if(1, odd), std::nullopt);  // even: stays
  EXPECT_EQ(q.waiting(), 2u);
  EXPECT_EQ(q.take_if(2, odd), 21);
  EXPECT_EQ(q.take_if(2, odd), std::nullopt);  // one-shot
  EXPECT_EQ(q.take_if(7, odd), std::nullopt);  // unknown
  EXPECT_EQ(q.take(1), 10);
}

TEST(CompletionQueueConcurrency, DoubleCompletionIsALogicError) {
  CompletionQueue<int> q;
  q.complete(3, 1);
  EXPECT_THROW(q.complete(3, 2), std::logic_error);
}

TEST(CompletionQueueConcurrency, ConcurrentProducersEachResultTakenOnce) {
  CompletionQueue<int> q;
  TaskIdCounter ids;
  constexpr int kThreads = 4, kPerThread = 200;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        TaskId id = ids.next();
        q.complete(id, static_cast<int>(id));
      }
    });
  }
  std::set<TaskId> seen;
  while (seen.size() < kThreads * kPerThread) {
    wait_readable(q.event_fd(), 100ms);
    q.consume_wakeup();
    for (auto& [id, v] : q.take_all()) {
      EXPECT_EQ(static_cast<TaskId>(v), id);
      EXPECT_TRUE(seen.insert(id).second) << "id " << id << " handed out twice";
    }
  }
  for (auto& t : producers) t.join();
  EXPECT_EQ(q.waiting(), 0u);
}

TEST(CompletionQueueConcurrency, ResultsStayTakeableAfterClose) {
  CompletionQueue<int> q;
  q.complete(0, 5);
  q.close();
  EXPECT_EQ(q.event_fd(), -1);
  q.close();
  EXPECT_EQ(q.take(0).value_or(-1), 5);
}

}  // namespace
}  // namespace lmcache
