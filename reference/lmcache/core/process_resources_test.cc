#include "lmcache/core/process_resources.h"

#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <latch>
#include <thread>

namespace lmcache {
namespace {

using ::testing::HasSubstr;

TEST(ProcessResources, AnOpenedFdIsCountedAndItsCloseUncounted) {
  const std::size_t before = open_fd_count();
  ASSERT_GT(before, 0u) << "/proc/self/fd must be readable";
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(open_fd_count(), before + 1);
  ::close(fd);
  EXPECT_EQ(open_fd_count(), before) << "the count excludes the descriptor used to read /proc";
}

TEST(ProcessResources, ARunningThreadIsCountedAndAJoinedOneIsNotAfterSettling) {
  const ProcessResources base = ProcessResources::take();
  ASSERT_GT(base.threads, 0u);
  std::latch started(1), release(1);
  std::thread t([&] {
    started.count_down();
    release.wait();
  });
  started.wait();
  EXPECT_EQ(thread_count(), base.threads + 1);
  EXPECT_THAT(resources_problem(base, ProcessResources::take()),
              HasSubstr("0 fd(s) and 1 thread(s) more than before"));
  release.count_down();
  t.join();
  const ProcessResources after = wait_for_resources(base);
  EXPECT_EQ(resources_problem(base, after), "");
}

TEST(ProcessResources, ProblemNamesBothCounts) {
  EXPECT_EQ(resources_problem({10, 3}, {10, 3}), "");
  EXPECT_EQ(resources_problem({10, 3}, {9, 2}), "") << "fewer is no problem";
  EXPECT_EQ(resources_problem({10, 3}, {12, 4}),
            "2 fd(s) and 1 thread(s) more than before (fds 10 -> 12, threads 3 -> 4)");
}

}  // namespace
}  // namespace lmcache
