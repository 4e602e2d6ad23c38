#include "lmcache/testing/redis_benchmark.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "lmcache/testing/redis_server.h"

namespace lmcache::storage_testing {
namespace {

// The calls= count of `command` in the server's INFO commandstats (0 when never called).
long long calls_of(RedisServer& server, const std::string& command) {
  const std::string info = server.command({"INFO", "commandstats"}).str;
  const std::string head = "cmdstat_" + command + ":calls=";
  const std::size_t at = info.find(head);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + head.size()));
}

TEST(RedisBenchmark, ReportsTheRateOfRequestsTheServerServed) {
  if (!RedisServer::find_executable() || !RedisServer::find_executable("redis-benchmark")) {
    GTEST_SKIP() << "redis-server or redis-benchmark is not installed (scripts/install-deps.sh)";
  }
  RedisServer server;
  RedisBenchmarkRun run;
  run.port = server.port();
  run.value_bytes = 4096;
  run.requests = 200;
  run.clients = 2;
  EXPECT_GT(redis_benchmark_rps(run), 0.0);
  EXPECT_GE(calls_of(server, "set"), 200);
  EXPECT_EQ(calls_of(server, "get"), 0);
  run.command = "get";
  EXPECT_GT(redis_benchmark_rps(run), 0.0);
  EXPECT_GE(calls_of(server, "get"), 200);
  // The GETs found values of the size asked for.
  EXPECT_EQ(server.command({"STRLEN", "key:__rand_int__"}).integer, 4096);
}

TEST(RedisBenchmark, FailuresAreErrorsThatNameTheReason) {
  RedisBenchmarkRun run;
  run.command = "del";
  EXPECT_THROW(redis_benchmark_rps(run), std::invalid_argument);
  run.command = "set";
  run.requests = 0;
  EXPECT_THROW(redis_benchmark_rps(run), std::invalid_argument);
  run.requests = 1;
  run.executable = "/nonexistent/redis-benchmark";
  try {
    redis_benchmark_rps(run);
    ADD_FAILURE() << "a missing executable was run";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not installed"), std::string::npos) << e.what();
  }
  if (!RedisServer::find_executable() || !RedisServer::find_executable("redis-benchmark")) {
    GTEST_SKIP() << "redis-server or redis-benchmark is not installed (scripts/install-deps.sh)";
  }
  // A server that does not answer (paused): the run is killed at its timeout.
  RedisServer server;
  server.pause();
  run.executable = "redis-benchmark";
  run.port = server.port();
  run.timeout = std::chrono::milliseconds(500);
  try {
    redis_benchmark_rps(run);
    ADD_FAILURE() << "a run against a paused server returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("killed after 500 ms"), std::string::npos) << e.what();
  }
  server.resume();
}

}  // namespace
}  // namespace lmcache::storage_testing
