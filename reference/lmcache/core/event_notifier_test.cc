#include "lmcache/core/event_notifier.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>

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

}  // namespace
}  // namespace lmcache
