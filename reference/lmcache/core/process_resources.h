// File: lmcache/core/process_resources.h
//
// Open-fd and thread counts of the current process, for the checks "close() releases its fds
// and threads": take a snapshot before building a component and compare after closing it.
// Linux only (/proc/self). One convention everywhere: a count is what the process holds, not
// counting the descriptor used to read /proc/self/fd itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace lmcache {

// open_fd_count()
//
// Open file descriptors of this process (the entries of /proc/self/fd, less the one used to
// read it); 0 when /proc is not available.
std::size_t open_fd_count();

// thread_count()
//
// Threads of this process (the entries of /proc/self/task); 0 when /proc is not available.
std::size_t thread_count();

// ProcessResources
//
// Both counts at one moment.
struct ProcessResources {
  std::size_t fds = 0;
  std::size_t threads = 0;

  // take()
  //
  // The counts now.
  static ProcessResources take();
};

// wait_for_resources()
//
// Re-reads the counts until neither exceeds `baseline` or `timeout` passes (a joined thread can
// linger in /proc for a moment, and a closed fd in a just-exited thread's table), and returns
// the last counts read. Whole-machine stalls do not count against `timeout`, up to
// `max_stalls` of them (lmcache/core/stall_tolerant_deadline.h). Never throws.
ProcessResources wait_for_resources(
    const ProcessResources& baseline, std::chrono::milliseconds timeout = std::chrono::seconds(1),
    std::chrono::milliseconds max_stalls = std::chrono::seconds(30));

// resources_problem()
//
// Empty when `now` holds no more fds or threads than `baseline`; otherwise a sentence such as
// "2 fd(s) and 1 thread(s) more than before (fds 12 -> 14, threads 3 -> 4)".
std::string resources_problem(const ProcessResources& baseline, const ProcessResources& now);

}  // namespace lmcache
