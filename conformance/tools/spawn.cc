#include "spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

extern char** environ;

namespace lmcache::conformance::tools {

pid_t spawn_child(const std::string& exe, const std::vector<std::string>& args,
                  const std::string& log, const std::string& rc_params, const std::string& depth,
                  const std::vector<std::pair<int, int>>& pass_fds) {
  // Everything the child needs is built before fork(): only async-signal-safe calls after it.
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "RC_PARAMS=", 10) != 0 &&
        std::strncmp(*e, "LMCACHE_CONFORMANCE_DEPTH=", 26) != 0) {
      env_s.emplace_back(*e);
    }
  }
  env_s.push_back("RC_PARAMS=" + rc_params);
  if (!depth.empty()) env_s.push_back("LMCACHE_CONFORMANCE_DEPTH=" + depth);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  int fd = open_child_log(log);
  std::vector<int> moved(pass_fds.size(), -1);  // allocated before fork()
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // the whole group is killed on a timeout
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    // Each passed fd goes above the low numbers first, so that no dup2() below overwrites
    // another one still to be passed; dup2() clears O_CLOEXEC on its copy.
    for (std::size_t i = 0; i < pass_fds.size(); ++i) {
      moved[i] = fcntl(pass_fds[i].first, F_DUPFD_CLOEXEC, 64);
    }
    for (std::size_t i = 0; i < pass_fds.size(); ++i) dup2(moved[i], pass_fds[i].second);
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);
  if (fd >= 0) close(fd);
  return pid;
}

int open_child_log(const std::string& log) {
  // The log was checked (check_output_path()); O_NOFOLLOW keeps a link made since from being
  // followed.
  return open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
}

void wait_child(pid_t pid, double timeout_s, int* status, bool* timed_out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  *timed_out = false;
  for (;;) {
    if (waitpid(pid, status, WNOHANG) == pid) return;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, status, 0);
      *timed_out = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace lmcache::conformance::tools
