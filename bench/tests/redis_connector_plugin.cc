// A connector plugin whose factory connects to the redis-server lmcache-bench exports
// (LMCACHE_BENCH_REDIS_HOST / LMCACHE_BENCH_REDIS_PORT, bench/README.md), as a vendor's Redis
// connector would: its l2/ rows are then measured on the same server as the resp adapter's and
// redis-benchmark's (test part redis_connector_plugin, tests/metrics_cli_test.py). The connector
// is the project's own RespConnector, so the three rows differ only in who drives the server.
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/conformance/connector_plugin.h"
#include "lmcache/resp/resp_connector.h"

namespace {

std::unique_ptr<lmcache::resp::RespConnector> connect_to_the_bench_server() {
  const char* host = std::getenv("LMCACHE_BENCH_REDIS_HOST");
  const char* port = std::getenv("LMCACHE_BENCH_REDIS_PORT");
  if (host == nullptr || port == nullptr) {
    throw std::runtime_error(
        "LMCACHE_BENCH_REDIS_HOST / LMCACHE_BENCH_REDIS_PORT are not set (lmcache-bench sets "
        "them before it loads a connector plugin)");
  }
  lmcache::resp::RespConnectorOptions options;
  options.endpoint.host = host;
  options.endpoint.port = std::stoi(port);
  options.endpoint.max_reply_bytes = std::size_t{64} << 20;  // chunks up to 64 MiB
  return std::make_unique<lmcache::resp::RespConnector>(options);
}

}  // namespace

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::resp::RespConnector, &connect_to_the_bench_server)
