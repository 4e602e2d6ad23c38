// File: lmcache/conformance/process_stats.h
//
// The kit's resource checks for "close() releases its fds and threads", over the process counts
// of lmcache/core/process_resources.h (ProcessResources::take() before creating an
// implementation, resources_left_over() after closing it), and its fd checks. Linux only
// (/proc/self).
#pragma once

#include <chrono>
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
// For a property that runs rounds of tasks and took the counts `halfway` through them: "" when
// the process is back to those counts within `timeout` (resources_left_over()). Otherwise it
// runs `more_rounds` (as many rounds again as the whole run had, so that a leak every few tasks
// shows again; it returns an error text for a round that failed, which is put in *round_error
// and ends the check with "") and looks again against the counts before them: a pool that grew
// late to its bound (a connection each worker opens on its first task, which a worker may first
// take late in a run on a loaded machine) holds still, and "" is returned; a leak grows again,
// and what the process holds more than `halfway` is returned, as resources_left_over() says it.
std::string growth_past_halfway(const ProcessResources& halfway,
                                const std::function<std::string()>& more_rounds,
                                std::chrono::milliseconds timeout, std::string* round_error);

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
