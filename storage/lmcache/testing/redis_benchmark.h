// File: lmcache/testing/redis_benchmark.h
//
// Debian's `redis-benchmark` (package redis-tools, installed with redis-server) run against a
// server, as the server's own ceiling beside what an adapter or a connector gets from it:
// lmcache-bench's l2/ rows "impl=redis-benchmark" (bench/README.md).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace lmcache::storage_testing {

struct RedisBenchmarkRun {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;         // -a, when not empty
  std::string command = "set";  // "set" or "get" (a get run sets the key first)
  std::size_t value_bytes = 1 << 20;
  int requests = 64;  // in all, >= 1
  int clients = 1;    // parallel connections, 1..1024
  // The whole run, the process's start included; past it the process is killed.
  std::chrono::milliseconds timeout{60000};
  // The executable: a path, or a name searched in $PATH.
  std::string executable = "redis-benchmark";
};

// redis_benchmark_rps()
//
// Runs `redis-benchmark -t <command> -d <value_bytes> -n <requests> -c <clients> -P 1 --csv -q`
// against run.host:run.port (`-t set,get` for "get", so that the GETs find a value of that size)
// and returns the requests per second it reports for the command.
// Throws std::invalid_argument on a field out of range, std::runtime_error naming the reason when
// the executable is missing, cannot start, exits non-zero, runs past the timeout (it is killed)
// or prints no figure for the command (its output's first line is quoted). Reads at most 64 KiB
// of its output.
double redis_benchmark_rps(const RedisBenchmarkRun& run);

}  // namespace lmcache::storage_testing
