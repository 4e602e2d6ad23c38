// File: lmcache/conformance/process_stats.h
//
// Resource counts of the current process, for "close() releases its fds and threads": count
// before creating an implementation and after closing it. Linux only (/proc/self).
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

namespace lmcache::conformance {

// count_open_fds()
//
// Open file descriptors of this process (the entries of /proc/self/fd, less the one used to
// read it).
std::size_t count_open_fds();

// count_threads()
//
// Threads of this process (the entries of /proc/self/task).
std::size_t count_threads();

// ResourceSnapshot
//
// Both counts at one moment.
struct ResourceSnapshot {
  std::size_t fds = 0;
  std::size_t threads = 0;

  static ResourceSnapshot Take();
};

// wait_for_resources()
//
// Polls until the counts are back to `baseline` or `timeout` passes (a joined thread can linger
// in /proc for a moment). Returns an empty string on success, else a message such as
// "1 fd(s) and 0 thread(s) more than before creation".
std::string wait_for_resources(const ResourceSnapshot& baseline,
                               std::chrono::milliseconds timeout = std::chrono::seconds(2));

// is_open_fd()
//
// Whether `fd` is an open descriptor of this process.
bool is_open_fd(int fd);

// distinct_open_fds_problem()
//
// Empty when every fds[i] is open and no two are equal; otherwise what is wrong, naming the
// descriptors by names[i] (same length as fds), e.g. "load fd and second instance's load fd are
// the same fd 7".
std::string distinct_open_fds_problem(std::span<const int> fds, std::span<const char* const> names);

}  // namespace lmcache::conformance
