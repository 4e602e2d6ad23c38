// File: conformance/tools/fork_server.h
//
// The runner's fork server for --python sources. Each property runs in a process of its own
// (child.h), and a process that starts the embedded interpreter pays for importing torch (about
// 1.5 s of CPU, more than most properties take). So the runner starts one server child, which
// starts the interpreter once without loading any implementation, and asks it for the process
// of each Python job: the server forks it, the interpreter already up, and it runs exactly as a
// spawned `--child run` would (it loads its source, then runs its one property).
//
// The job's process is the runner's own child, so that the runner waits for it, times it out and
// kills its process group as it does any child: the runner is a child subreaper
// (PR_SET_CHILD_SUBREAPER), and the server forks each job through an intermediate process that
// exits at once, so the job is re-parented to the runner before the server answers.
//
//   lmcache-conform --child fork-server     requests and replies on fd 3 (a Unix socket)
//   request: a uint32 count, then that many strings (the job's log path, then its child
//            arguments), each a uint32 length and its bytes; reply: the job's pid as an int64
//            (-1: no fork)
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lmcache::conformance::tools {

class ForkServer {
 public:
  // start()
  //
  // Starts the server (spawn_child() of `exe` with `rc_params` and `depth`, its own output to
  // `log`) and makes this process a child subreaper. nullptr when it cannot: the caller spawns
  // each job itself.
  static std::unique_ptr<ForkServer> start(const std::string& exe, const std::string& log,
                                           const std::string& rc_params, const std::string& depth);

  // fork_job()
  //
  // The pid of a new process, this process's child, that runs `args` (a `--child run ...`
  // command line, without the program name) with its stdout and stderr to `log`; -1 when the
  // server failed (it died, or did not answer within 30 s), after which every call returns -1
  // at once and the caller spawns the job itself.
  pid_t fork_job(const std::vector<std::string>& args, const std::string& log);

  // Closes the requests (the server exits on their end) and reaps the server, killing it when
  // it has not exited within 10 s.
  ~ForkServer();

  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

 private:
  ForkServer(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  void fail();

  pid_t pid_;
  int socket_;  // this side of the server's socket; -1 once the server failed
};

// serve_forks()
//
// The server's side (`--child fork-server`): starts the interpreter, then serves requests on
// fd 3 until they end. Each job's process calls `run_job` with its command line (the program
// name first) and exits with what it returns. Returns the server's exit status: 0 at the end of
// the requests, 3 when the interpreter cannot start, 4 on a malformed request.
int serve_forks(const std::string& program,
                const std::function<int(std::vector<std::string>)>& run_job);

}  // namespace lmcache::conformance::tools
