// File: lmcache/core/testing/thread_state.h
//
// Test support (never installed): waiting, with no time bound, until another thread of this
// process sleeps in poll(). A test whose event must come only after a waiter has stopped
// spinning and gone to sleep makes it so, instead of guessing how long that takes ("notify after
// 10 ms"), which a slow or loaded machine can make false.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace lmcache::core_internal {

// current_tid()
//
// The calling thread's kernel thread id.
inline pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// asleep_in_poll()
//
// True when thread `tid` of this process is asleep (state S) in poll() or ppoll(), as
// /proc/self/task/<tid>/stat and .../syscall say (where the kernel has no syscall file: asleep
// in anything).
inline bool asleep_in_poll(pid_t tid) {
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  std::ifstream stat_file(dir + "/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return false;
  const std::size_t paren = stat.rfind(')');  // the name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'S') {
    return false;
  }
  std::ifstream syscall_file(dir + "/syscall");
  std::string first;
  if (!(syscall_file >> first)) return true;
  if (first == "running") return false;
  std::istringstream number(first);
  long nr = -1;
  number >> nr;
#ifdef SYS_poll
  if (nr == SYS_poll) return true;
#endif
  return nr == SYS_ppoll;
}

// wait_until_asleep_in_poll()
//
// Returns once asleep_in_poll(tid) holds, re-reading /proc between yields; no time bound (a
// waiter that never sleeps is the bug a test looks for, and the test's own timeout ends it).
inline void wait_until_asleep_in_poll(pid_t tid) {
  while (!asleep_in_poll(tid)) std::this_thread::yield();
}

}  // namespace lmcache::core_internal
