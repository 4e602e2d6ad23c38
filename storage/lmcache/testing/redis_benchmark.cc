#include "lmcache/testing/redis_benchmark.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "lmcache/testing/redis_server.h"

namespace lmcache::storage_testing {
namespace {

constexpr std::size_t kMaxOutputBytes = 64 << 10;

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// The rps field of `command`'s CSV line ("SET","1523.81",...), or nullopt.
std::optional<double> parse_rps(const std::string& output, const std::string& command) {
  const std::string head = "\"" + upper(command) + "\",\"";
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(head, 0) != 0) continue;
    const std::string field = line.substr(head.size(), line.find('"', head.size()) - head.size());
    char* end = nullptr;
    const double rps = std::strtod(field.c_str(), &end);
    if (end != field.c_str() && *end == '\0' && rps > 0) return rps;
  }
  return std::nullopt;
}

}  // namespace

double redis_benchmark_rps(const RedisBenchmarkRun& run) {
  if (run.command != "set" && run.command != "get") {
    throw std::invalid_argument("redis_benchmark_rps: command must be \"set\" or \"get\", got \"" +
                                run.command + "\"");
  }
  if (run.requests < 1 || run.clients < 1 || run.clients > 1024 || run.value_bytes < 1 ||
      run.port < 1 || run.port > 65535) {
    throw std::invalid_argument(
        "redis_benchmark_rps: requests >= 1, clients 1..1024, value_bytes >= 1 and a port "
        "1..65535 are needed");
  }
  const std::optional<std::string> exe = RedisServer::find_executable(run.executable);
  if (!exe) {
    throw std::runtime_error("redis-benchmark: '" + run.executable +
                             "' is not installed (scripts/install-deps.sh installs redis-server, "
                             "which brings it)");
  }
  std::vector<std::string> args = {*exe,
                                   "-h",
                                   run.host,
                                   "-p",
                                   std::to_string(run.port),
                                   "-t",
                                   run.command == "get" ? "set,get" : "set",
                                   "-d",
                                   std::to_string(run.value_bytes),
                                   "-n",
                                   std::to_string(run.requests),
                                   "-c",
                                   std::to_string(run.clients),
                                   "-P",
                                   "1",
                                   "--csv",
                                   "-q"};
  if (!run.password.empty())
    args.insert(args.begin() + 1, {"-a", run.password, "--no-auth-warning"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    throw std::runtime_error("redis-benchmark: pipe failed: " + std::string(std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw std::runtime_error("redis-benchmark: fork failed: " + std::string(std::strerror(errno)));
  }
  if (pid == 0) {  // async-signal-safe calls only
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(out[1]);

  // Read until EOF or the deadline; keep at most kMaxOutputBytes.
  std::string output;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + run.timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (output.size() < kMaxOutputBytes) {
      output.append(
          buf, std::min<std::size_t>(static_cast<std::size_t>(n), kMaxOutputBytes - output.size()));
    }
  }
  ::close(out[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string first_line = output.substr(0, output.find('\n'));
  if (timed_out) {
    throw std::runtime_error("redis-benchmark: killed after " +
                             std::to_string(run.timeout.count()) + " ms (" +
                             std::to_string(run.requests) + " " + run.command + " requests of " +
                             std::to_string(run.value_bytes) + " B)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("redis-benchmark: " +
                             (WIFEXITED(status)
                                  ? "exited " + std::to_string(WEXITSTATUS(status))
                                  : "killed by signal " + std::to_string(WTERMSIG(status))) +
                             (first_line.empty() ? std::string() : ": \"" + first_line + "\""));
  }
  if (const std::optional<double> rps = parse_rps(output, run.command)) return *rps;
  throw std::runtime_error("redis-benchmark: no " + upper(run.command) +
                           " figure in its output (first line: \"" + first_line + "\")");
}

}  // namespace lmcache::storage_testing
