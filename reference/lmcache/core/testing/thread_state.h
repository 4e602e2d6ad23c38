// File: lmcache/core/testing/thread_state.h
//
// Test support (never installed): waiting, with no time bound, until other threads of this
// process sleep (in poll(), or in anything). A test whose event must come only after a waiter
// has stopped spinning and gone to sleep, or once the process has settled, makes it so instead
// of guessing how long that takes ("notify after 10 ms"), which a slow or loaded machine can
// make false.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace lmcache::core_internal {

// current_tid()
//
// The calling thread's kernel thread id.
inline pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// thread_state()
//
// The state letter of thread `tid` of this process (/proc/self/task/<tid>/stat: 'R' running,
// 'S' asleep, 'D' asleep uninterruptibly, ...); '\0' when it does not exist (any more).
inline char thread_state(pid_t tid) {
  std::ifstream stat_file("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return '\0';
  const std::size_t paren = stat.rfind(')');  // the name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= stat.size()) return '\0';
  return stat[paren + 2];
}

// asleep_in_poll()
//
// True when thread `tid` of this process is asleep (state S) in poll() or ppoll(), as
// /proc/self/task/<tid>/stat and .../syscall say (where the kernel has no syscall file: asleep
// in anything).
inline bool asleep_in_poll(pid_t tid) {
  if (thread_state(tid) != 'S') return false;
  std::ifstream syscall_file("/proc/self/task/" + std::to_string(tid) + "/syscall");
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

// wait_until_other_threads_asleep()
//
// Returns once every thread of this process but the caller is asleep at the same reading (state
// S, D or stopped): the process has settled -- a loop thread has finished its scan and sleeps in
// poll(), workers wait for jobs. No time bound; a thread that never sleeps keeps it waiting.
inline void wait_until_other_threads_asleep() {
  const pid_t self = current_tid();
  for (;;) {
    bool all = true;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec)) {
      const pid_t tid = static_cast<pid_t>(std::stol(entry.path().filename().string()));
      if (tid == self) continue;
      const char state = thread_state(tid);
      if (state != 'S' && state != 'D' && state != 'T' && state != 't' && state != '\0') {
        all = false;
        break;
      }
    }
    if (all && !ec) return;
    std::this_thread::yield();
  }
}

}  // namespace lmcache::core_internal
