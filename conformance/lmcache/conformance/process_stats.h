// File: lmcache/conformance/process_stats.h
//
// The kit's resource checks for "close() releases its fds and threads", over the process counts
// of lmcache/core/process_resources.h (ProcessResources::take() before creating an
// implementation, resources_left_over() after closing it), and its fd checks. Linux only
// (/proc/self).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include "lmcache/core/process_resources.h"

namespace lmcache::conformance {

// resources_left_over()
//
// Waits until the counts are back to `baseline` or `timeout` passes (a joined thread can linger
// in /proc for a moment; whole-machine stalls do not count, as for the kit's other waits:
// conformance/README.md). Returns an empty string on success, else what is left, e.g.
// "1 fd(s) and 0 thread(s) more than before (fds 12 -> 13, threads 3 -> 3)".
std::string resources_left_over(const ProcessResources& baseline,
                                std::chrono::milliseconds timeout = std::chrono::seconds(2));

// growth_past_halfway()
//
// For a property that ran `rounds` rounds of tasks (round(r) runs round r and returns an error
// text when it failed) and took the counts `halfway` through them. Nothing when the process is
// back to those counts within `timeout` (resources_left_over()). Otherwise it runs as many rounds
// again, round(rounds) .. round(2 * rounds - 1), so that a leak every few tasks shows again, and
// looks against the counts before them: a pool that grew late to its bound (a connection each
// worker opens on its first task, which a worker may first take late in a run on a loaded
// machine) holds still, and nothing is reported; a leak grows again, and `grew` says what the
// process holds more than `halfway`, as resources_left_over() does. A round that fails ends the
// check with its text in `round_error`.
struct HalfwayGrowth {
  std::string round_error;
  std::string grew;
};
HalfwayGrowth growth_past_halfway(const ProcessResources& halfway, std::size_t rounds,
                                  const std::function<std::string(std::size_t)>& round,
                                  std::chrono::milliseconds timeout);

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
