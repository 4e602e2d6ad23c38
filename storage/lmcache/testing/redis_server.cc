#include "lmcache/testing/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace lmcache::storage_testing {

namespace {

using namespace std::chrono_literals;

constexpr const char* kPortTaken = "Address already in use";

// A port the kernel just handed out for 127.0.0.1 (free now; the server binds it next).
int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("RedisServer: socket: " + std::string(strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("RedisServer: cannot find a free port: " + std::string(strerror(err)));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

std::optional<std::string> RedisServer::find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  const char* env = std::getenv("PATH");
  std::string path =
      env != nullptr ? env : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

RedisServer::RedisServer(RedisServerOptions options)
    : options_(std::move(options)), dir_("lmcache-redis-") {
  std::optional<std::string> exe = find_executable(options_.executable);
  if (!exe) {
    throw std::runtime_error("RedisServer: '" + options_.executable +
                             "' not found (Debian package redis-server; scripts/install-deps.sh "
                             "installs it)");
  }
  executable_ = *exe;
  for (int attempt = 0;; ++attempt) {
    port_ = pick_free_port();
    try {
      start();
      return;
    } catch (const std::runtime_error& e) {
      // The port was taken between picking it and binding it: pick another.
      if (attempt == 4 || std::string(e.what()).find(kPortTaken) == std::string::npos) throw;
    }
  }
}

RedisServer::~RedisServer() {
  try {
    stop();
  } catch (...) {
  }
}

resp::RespEndpoint RedisServer::endpoint() const {
  resp::RespEndpoint e;
  e.host = host_;
  e.port = port_;
  e.password = options_.password;
  return e;
}

void RedisServer::spawn() {
  const std::string log = (dir() / "redis.log").string();
  std::filesystem::remove(log);  // the log of this start only
  std::vector<std::string> args = {executable_, "--port",       std::to_string(port_),
                                   "--bind",    host_,          "--save",
                                   "",          "--appendonly", "no",
                                   "--dir",     dir().string(), "--logfile",
                                   log,         "--daemonize",  "no"};
  if (!options_.password.empty()) {
    args.push_back("--requirepass");
    args.push_back(options_.password);
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) throw std::runtime_error("RedisServer: open /dev/null failed");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(devnull);
    throw std::runtime_error("RedisServer: fork failed: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only. Die with the thread that started us.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(devnull);
  pid_ = pid;
  paused_ = false;
}

bool RedisServer::reap(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      paused_ = false;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
}

bool RedisServer::wait_ready(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  resp::RespEndpoint e = endpoint();
  e.connect_timeout = 200ms;
  e.io_timeout = 1000ms;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // it exited (port taken, bad option)
      pid_ = -1;
      return false;
    }
    try {
      resp::RespClient client(e);
      client.command({"PING"});  // any answer (PONG, or NOAUTH) means it is serving
      return true;
    } catch (const resp::RespError&) {
      // not listening yet
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

void RedisServer::start() {
  if (running()) return;
  for (int attempt = 0; attempt < 3; ++attempt) {
    spawn();
    if (wait_ready(options_.start_timeout)) return;
    if (running()) kill();
    if (log_tail().find(kPortTaken) == std::string::npos) break;  // not worth retrying
    std::this_thread::sleep_for(200ms);  // the port is briefly taken (a restart)
  }
  throw std::runtime_error("RedisServer: redis-server did not start on " + host_ + ":" +
                           std::to_string(port_) + "; log tail:\n" + log_tail());
}

void RedisServer::stop() {
  if (!running()) return;
  ::kill(pid_, SIGTERM);
  if (paused_) ::kill(pid_, SIGCONT);  // a stopped process handles SIGTERM only once resumed
  if (!reap(5000ms)) {
    ::kill(pid_, SIGKILL);
    reap(std::chrono::hours(1));
  }
}

void RedisServer::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  reap(std::chrono::hours(1));
}

void RedisServer::pause() {
  if (!running() || paused_) return;
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (!running() || !paused_) return;
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

void RedisServer::restart() {
  kill();
  start();
}

resp::RespReply RedisServer::command(const std::vector<std::string_view>& args) const {
  resp::RespClient client(endpoint());
  return client.command(args);
}

std::string RedisServer::log_tail(std::size_t max_bytes) const {
  std::ifstream in(dir() / "redis.log", std::ios::binary);
  if (!in) return "(no log)";
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

}  // namespace lmcache::storage_testing
