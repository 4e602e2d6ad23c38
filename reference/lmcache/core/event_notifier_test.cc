#include "lmcache/core/event_notifier.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "lmcache/core/testing/thread_state.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;

TEST(EventNotifierConcurrency, NonBlockingCloexecCounter) {
  EventNotifier n;
  ASSERT_GE(n.fd(), 0);
  EXPECT_NE(fcntl(n.fd(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(n.fd(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(n.consume(), 0u) << "nothing pending: EAGAIN is swallowed";
  n.notify();
  n.notify();
  n.notify();
  EXPECT_TRUE(wait_readable(n.fd(), 1000ms));
  EXPECT_EQ(n.consume(), 3u) << "notifies fold into one read";
  EXPECT_FALSE(wait_readable(n.fd(), 0ms));
}

TEST(EventNotifierConcurrency, CloseIsIdempotentAndReleasesTheFd) {
  EventNotifier n;
  int fd = n.fd();
  n.close();
  EXPECT_EQ(n.fd(), -1);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "descriptor must be closed";
  n.close();
  n.notify();  // no-op after close
  EXPECT_EQ(n.consume(), 0u);
}

TEST(EventNotifierConcurrency, DistinctInstancesHaveDistinctFds) {
  EventNotifier a, b;
  EXPECT_NE(a.fd(), b.fd());
  a.notify();
  EXPECT_FALSE(wait_readable(b.fd(), 0ms));
  EXPECT_EQ(consume_fd(a.fd()), 1u);
}

TEST(EventNotifierConcurrency, SpinningWaitSeesAnEventWhileSpinningOrAsleep) {
  EventNotifier n;
  std::chrono::nanoseconds spun{0};
  n.notify();
  // A spin far longer than any stall: a wait that returned before it ran out looked first.
  EXPECT_TRUE(wait_readable_spinning(n.fd(), 60s, 120000ms, &spun)) << "already readable";
  EXPECT_LT(spun, std::chrono::nanoseconds(60s)) << "it returned before the spin ran out";
  EXPECT_EQ(n.consume(), 1u) << "it only looks: the counter is the caller's to drain";

  // An event from another thread once this one sleeps in poll(), its spin spent: the sleeping
  // poll sees it. (No time is assumed: the other thread waits until this one is asleep.)
  spun = {};
  const pid_t waiter = core_internal::current_tid();
  std::thread late([&] {
    core_internal::wait_until_asleep_in_poll(waiter);
    n.notify();
  });
  EXPECT_TRUE(wait_readable_spinning(n.fd(), 50us, 600000ms, &spun));
  late.join();
  EXPECT_GE(spun, std::chrono::nanoseconds(50us)) << "the whole spin is counted as spent";
  EXPECT_EQ(n.consume(), 1u);
}

TEST(EventNotifierConcurrency, SpinningWaitTimesOutAndRefusesClosedFds) {
  EventNotifier n;
  std::chrono::nanoseconds spun{0};
  EXPECT_FALSE(wait_readable_spinning(n.fd(), 200us, 5ms, &spun));
  EXPECT_GE(spun, std::chrono::nanoseconds(200us));
  spun = {};
  EXPECT_FALSE(wait_readable_spinning(n.fd(), 0us, 0ms, &spun)) << "no spin: wait_readable()";
  EXPECT_EQ(spun.count(), 0);
  EXPECT_FALSE(wait_readable_spinning(-1, 100us, 100ms));
}

}  // namespace
}  // namespace lmcache
