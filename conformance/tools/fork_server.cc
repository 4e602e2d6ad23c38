#include "fork_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "lmcache/conformance/python/python_source.h"
#include "spawn.h"

namespace lmcache::conformance::tools {

namespace {

constexpr int kServerFd = 3;
// A request is a handful of paths and names: anything larger is not the runner's.
constexpr std::uint32_t kMaxStrings = 64;
constexpr std::uint32_t kMaxStringBytes = 1u << 16;
constexpr int kReplyTimeoutMs = 30'000;

bool send_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // MSG_NOSIGNAL: a server that died is a failed request, not a SIGPIPE for the runner.
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Reads exactly `n` bytes; false at the end of the stream, on an error, or when `timeout_ms`
// (negative: none) passes between two reads.
bool read_all(int fd, void* data, std::size_t n, int timeout_ms = -1) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

enum class Request { kRead, kEnd, kMalformed };

Request read_request(int fd, std::vector<std::string>* strings) {
  std::uint32_t count = 0;
  if (!read_all(fd, &count, sizeof count)) return Request::kEnd;
  if (count < 2 || count > kMaxStrings) return Request::kMalformed;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t len = 0;
    if (!read_all(fd, &len, sizeof len) || len > kMaxStringBytes) return Request::kMalformed;
    std::string s(len, '\0');
    if (!read_all(fd, s.data(), len)) return Request::kMalformed;
    strings->push_back(std::move(s));
  }
  return Request::kRead;
}

// Forks the job of `request` (its log path, then its arguments) through an intermediate process
// that exits at once, so that the job is re-parented to the runner (the subreaper); returns
// the job's pid once that happened, -1 when a fork failed.
std::int64_t fork_job_process(const std::vector<std::string>& request, const std::string& program,
                              const std::function<int(std::vector<std::string>)>& run_job) {
  int pid_pipe[2];
  if (pipe2(pid_pipe, O_CLOEXEC) != 0) return -1;
  std::cout.flush();  // nothing buffered here is written again by the job
  std::cerr.flush();
  const pid_t middle = python::fork_with_interpreter();
  if (middle == 0) {
    close(pid_pipe[0]);
    const pid_t job = python::fork_with_interpreter();
    if (job == 0) {
      close(pid_pipe[1]);
      close(kServerFd);
      setpgid(0, 0);  // as spawn_child(): a timeout kills the job's whole group
      const int log = open_child_log(request[0]);
      if (log >= 0) {
        dup2(log, STDOUT_FILENO);
        dup2(log, STDERR_FILENO);
        close(log);
      }
      std::vector<std::string> args = {program};
      args.insert(args.end(), request.begin() + 1, request.end());
      std::exit(run_job(std::move(args)));
    }
    const std::int64_t reply = job;
    _exit(write(pid_pipe[1], &reply, sizeof reply) == sizeof reply ? 0 : 1);
  }
  close(pid_pipe[1]);
  std::int64_t job = -1;
  if (middle < 0 || !read_all(pid_pipe[0], &job, sizeof job)) job = -1;
  close(pid_pipe[0]);
  // Once the intermediate is reaped, the job is the runner's child.
  if (middle > 0) waitpid(middle, nullptr, 0);
  return job;
}

}  // namespace

std::unique_ptr<ForkServer> ForkServer::start(const std::string& exe, const std::string& log,
                                              const std::string& rc_params,
                                              const std::string& depth) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return nullptr;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    close(sv[0]);
    close(sv[1]);
    return nullptr;
  }
  const pid_t pid =
      spawn_child(exe, {"--child", "fork-server"}, log, rc_params, depth, {{sv[1], kServerFd}});
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return nullptr;
  }
  return std::unique_ptr<ForkServer>(new ForkServer(pid, sv[0]));
}

pid_t ForkServer::fork_job(const std::vector<std::string>& args, const std::string& log) {
  if (socket_ < 0) return -1;
  std::string message;
  auto put = [&message](std::uint32_t v) {
    message.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  auto put_string = [&](const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    message += s;
  };
  put(static_cast<std::uint32_t>(args.size() + 1));
  put_string(log);
  for (const std::string& a : args) put_string(a);
  std::int64_t job = -1;
  if (!send_all(socket_, message.data(), message.size()) ||
      !read_all(socket_, &job, sizeof job, kReplyTimeoutMs)) {
    fail();
    return -1;
  }
  if (job <= 0) return -1;
  const auto pid = static_cast<pid_t>(job);
  setpgid(pid, pid);  // the job does so too; whichever runs first
  return pid;
}

void ForkServer::fail() {
  if (socket_ < 0) return;
  close(socket_);
  socket_ = -1;
  kill(pid_, SIGKILL);
}

ForkServer::~ForkServer() {
  if (socket_ >= 0) close(socket_);  // the end of the requests: the server exits
  int status = 0;
  bool timed_out = false;
  wait_child(pid_, 10, &status, &timed_out);
}

int serve_forks(const std::string& program,
                const std::function<int(std::vector<std::string>)>& run_job) {
  if (std::string error = python::start_interpreter(); !error.empty()) {
    std::cerr << "lmcache-conform fork server: " << error << "\n";
    return 3;
  }
  for (;;) {
    std::vector<std::string> request;
    switch (read_request(kServerFd, &request)) {
      case Request::kEnd:
        return 0;
      case Request::kMalformed:
        std::cerr << "lmcache-conform fork server: malformed request\n";
        return 4;
      case Request::kRead:
        break;
    }
    const std::int64_t job = fork_job_process(request, program, run_job);
    if (!send_all(kServerFd, &job, sizeof job)) return 0;  // the runner is gone
  }
}

}  // namespace lmcache::conformance::tools
