// File: lmcache/testing/redis_server.h
//
// RedisServer: a private redis-server (Debian's `redis-server`, installed by
// scripts/install-deps.sh) for tests, fault campaigns and benchmarks. It listens on 127.0.0.1
// at a free port, keeps nothing on disk (no RDB snapshots, no AOF), works in its own temporary
// directory (its log is there) and touches nothing else. It can be killed (SIGKILL), paused
// (SIGSTOP) and resumed (SIGCONT), and restarted on the same port, which is what the real-fault
// campaigns need; command() sends one command (CONFIG SET maxmemory, CLIENT KILL, FLUSHALL, ...).
//
// The server runs as a child process that the kernel kills if the thread that started it dies
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind; start and stop it from one
// thread (the test's).
//
// Thread safety: command() may be called from any thread; the lifecycle calls (start, stop,
// kill, pause, resume, restart) from one thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/resp/resp_client.h"
#include "lmcache/testing/temp_dir.h"

// LMCACHE_SKIP_WITHOUT_REDIS()
//
// In a gtest test body (or SetUp): skips the test, saying how to install it, when redis-server
// is not installed. A macro, because GTEST_SKIP() returns from the function it expands in.
#define LMCACHE_SKIP_WITHOUT_REDIS()                                               \
  if (!::lmcache::storage_testing::RedisServer::find_executable()) {               \
    GTEST_SKIP() << "redis-server is not installed (Debian package redis-server; " \
                    "scripts/install-deps.sh installs it)";                        \
  }

namespace lmcache::storage_testing {

struct RedisServerOptions {
  // The executable: a path, or a name searched in $PATH.
  std::string executable = "redis-server";
  // requirepass; endpoint() and command() then authenticate with it.
  std::string password;
  // Extra "--name value" arguments (e.g. {"--maxmemory", "10mb"}).
  std::vector<std::string> extra_args;
  // How long start() waits for the first PONG.
  std::chrono::milliseconds start_timeout{10000};
};

class RedisServer {
 public:
  // find_executable()
  //
  // The full path of `name` (itself when it contains '/'), when it is an executable file;
  // nullopt otherwise. Tests skip, naming the reason, when this is nullopt.
  static std::optional<std::string> find_executable(const std::string& name = "redis-server");

  // RedisServer()
  //
  // Picks a free port and starts the server (start()). Throws std::runtime_error naming the
  // reason (no executable, it exited, no answer to PING within start_timeout; the log tail is
  // included).
  explicit RedisServer(RedisServerOptions options = {});
  // Stops the server (SIGKILL if it does not stop in time) and removes its directory.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  bool paused() const { return paused_; }
  const std::filesystem::path& dir() const { return dir_.path(); }

  // An endpoint for RespClient / the resp connector (with the password, if any).
  resp::RespEndpoint endpoint() const;

  // start()
  //
  // Starts the server on port() when it is not running and waits until it answers PING
  // (retrying a few times only if the port is briefly taken).
  void start();
  // stop(): SIGTERM (a paused server is resumed first), SIGKILL after 5 s; waits for it.
  void stop();
  // kill(): SIGKILL, then waits for it. Data not persisted (all of it) is lost.
  void kill();
  // pause() / resume(): SIGSTOP / SIGCONT. A paused server accepts connections (the kernel
  // does) but answers nothing.
  void pause();
  void resume();
  // restart(): kill() when running, then start() on the same port: an empty server.
  void restart();

  // command()
  //
  // Sends one command on a fresh connection and returns the reply. Throws resp::RespError.
  resp::RespReply command(const std::vector<std::string_view>& args) const;

  // The last lines of the server's log (for failure messages).
  std::string log_tail(std::size_t max_bytes = 2000) const;

 private:
  void spawn();
  bool wait_ready(std::chrono::milliseconds timeout);
  bool reap(std::chrono::milliseconds timeout);

  RedisServerOptions options_;
  std::string executable_;
  TempDir dir_;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

}  // namespace lmcache::storage_testing
