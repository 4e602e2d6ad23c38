#include "lmcache/core/poll_loop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "lmcache/core/event_notifier.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

// Counts scans and lets a test wait (bounded, generously) for a number of them.
class ScanCounter {
 public:
  void scanned() {
    std::lock_guard lock(mu_);
    ++scans_;
    cv_.notify_all();
  }
  // True when at least `n` scans happened within the (generous) bound.
  bool wait_for(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 60s, [&] { return scans_ >= n; });
  }
  int scans() {
    std::lock_guard lock(mu_);
    return scans_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int scans_ = 0;
};

// A wait that only a wake-up can end: if the loop waited out max_wait, the test would hang
// (and ctest's timeout would fail it) instead of passing.
constexpr PollLoopOptions kNoTimeout{std::chrono::hours(1)};

TEST(PollLoop, AnFdEventRunsEveryStepAndDrainsTheFd) {
  EventNotifier source;
  ScanCounter counter;
  std::atomic<int> second{0};
  PollLoop loop({source.fd()}, {[&] { counter.scanned(); }, [&] { second.fetch_add(1); }},
                kNoTimeout);
  loop.start();
  source.notify();
  source.notify();
  ASSERT_TRUE(counter.wait_for(1));
  loop.stop();
  EXPECT_EQ(second.load(), counter.scans());
  EXPECT_EQ(source.consume(), 0u) << "the loop drains the fds it watches";
}

TEST(PollLoop, WakeRunsAScan) {
  ScanCounter counter;
  PollLoop loop({}, {[&] { counter.scanned(); }}, kNoTimeout);
  loop.start();
  loop.wake();
  EXPECT_TRUE(counter.wait_for(1));
}

TEST(PollLoop, TheDeadlineRunsAScanWithoutAnyEvent) {
  ScanCounter counter;
  std::atomic<bool> due{true};
  PollLoop loop({}, {[&] {
                  counter.scanned();
                  due = false;
                }},
                kNoTimeout,
                [&] { return due ? PollLoop::Clock::now() : PollLoop::Clock::time_point::max(); });
  loop.start();
  EXPECT_TRUE(counter.wait_for(1));
}

TEST(PollLoop, AThrowingStepIsCountedAndTheOthersStillRun) {
  ScanCounter counter;
  PollLoop loop({},
                {[] { throw std::runtime_error("inner broke its contract"); }, [] { throw 42; },
                 [&] { counter.scanned(); }},
                kNoTimeout);
  EXPECT_EQ(loop.exceptions_swallowed(), 0u);
  EXPECT_EQ(loop.last_exception(), "");
  loop.start();
  loop.wake();
  ASSERT_TRUE(counter.wait_for(1));
  loop.stop();
  EXPECT_EQ(loop.exceptions_swallowed(), 2u * static_cast<std::uint64_t>(counter.scans()));
  EXPECT_THAT(loop.last_exception(), HasSubstr("not derived from std::exception"));
}

TEST(PollLoop, StopIsPromptIdempotentAndFinal) {
  std::atomic<int> scans{0};
  PollLoop loop({}, {[&] { scans.fetch_add(1); }}, kNoTimeout);
  loop.start();
  loop.stop();  // would wait an hour if it did not wake the loop itself
  loop.stop();
  const int after_stop = scans.load();
  loop.wake();  // a no-op now
  EXPECT_EQ(scans.load(), after_stop);
  EXPECT_THROW(loop.start(), std::logic_error);
}

TEST(PollLoop, WithoutConsumeFdsTheStepsDrainTheFds) {
  EventNotifier source;
  std::atomic<std::uint64_t> drained{0};
  ScanCounter counter;
  PollLoopOptions options = kNoTimeout;
  options.consume_fds = false;
  PollLoop loop({source.fd()}, {[&] {
                  drained.fetch_add(source.consume());
                  counter.scanned();
                }},
                options);
  loop.start();
  source.notify();
  source.notify();
  ASSERT_TRUE(counter.wait_for(1));
  loop.stop();
  EXPECT_EQ(drained.load(), 2u) << "the loop must leave the counter to the step";
}

TEST(PollLoop, AClosedFdIsDroppedAndTheLoopKeepsServing) {
  auto closed = std::make_unique<EventNotifier>();
  ScanCounter counter;
  std::atomic<bool> saw_loop_thread{false};
  PollLoop* self = nullptr;
  PollLoop loop({closed->fd()}, {[&] {
                  if (self->on_loop_thread()) saw_loop_thread = true;
                  counter.scanned();
                }},
                kNoTimeout);
  self = &loop;
  closed.reset();  // after the loop made its wake fd, so the number is not reused: POLLNVAL
  loop.start();
  ASSERT_TRUE(counter.wait_for(1));  // the POLLNVAL wake-up
  const int before = counter.scans();
  loop.wake();
  EXPECT_TRUE(counter.wait_for(before + 1));
  loop.stop();
  EXPECT_EQ(loop.broken_fd_count(), 1u);
  EXPECT_TRUE(saw_loop_thread.load());
  EXPECT_FALSE(loop.on_loop_thread());
}

TEST(PollLoop, BadArgumentsAreRejected) {
  EXPECT_THROW(PollLoop({-1}, {[] {}}), std::invalid_argument);
  EXPECT_THROW(PollLoop({}, {PollLoop::Step{}}), std::invalid_argument);
  EXPECT_THROW(PollLoop({}, {[] {}}, PollLoopOptions{0ms}), std::invalid_argument);
  PollLoop twice({}, {[] {}});
  twice.start();
  EXPECT_THROW(twice.start(), std::logic_error);
}

TEST(PollLoopConcurrency, WakesFromManyThreadsWhileScanning) {
  EventNotifier source;
  ScanCounter counter;
  PollLoop loop({source.fd()}, {[&] { counter.scanned(); }}, kNoTimeout);
  loop.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        loop.wake();
        source.notify();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(counter.wait_for(1));
  loop.stop();
}

}  // namespace
}  // namespace lmcache
