// File: conformance/tools/spawn.h
//
// How the runner starts its child processes (child.h): this binary again, in a process group of
// its own (a timeout kills the whole group), its output in a log, the run's RapidCheck parameters
// and depth in its environment.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace lmcache::conformance::tools {

// spawn_child()
//
// fork + exec of `exe` with `args`, stdout and stderr to `log` (opened without following a link),
// RC_PARAMS=`rc_params` and, when `depth` is not empty, LMCACHE_CONFORMANCE_DEPTH=`depth` in
// its environment instead of the runner's values. Each (from, to) of `pass_fds` is dup2()ed to
// `to` in the child, so that a pipe reaches it at a known number. Returns the child's pid, -1
// when fork() failed.
pid_t spawn_child(const std::string& exe, const std::vector<std::string>& args,
                  const std::string& log, const std::string& rc_params, const std::string& depth,
                  const std::vector<std::pair<int, int>>& pass_fds = {});

// open_child_log()
//
// Opens `log` for a child's stdout and stderr (created or truncated, never through a link made
// since the runner checked the path); the fd, or -1.
int open_child_log(const std::string& log);

// wait_child()
//
// Waits for child `pid` up to `timeout_s` seconds; on a timeout kills its process group and
// reaps it (*timed_out = true). *status is waitpid()'s.
void wait_child(pid_t pid, double timeout_s, int* status, bool* timed_out);

}  // namespace lmcache::conformance::tools
