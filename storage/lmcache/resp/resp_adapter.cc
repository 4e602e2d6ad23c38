#include "lmcache/resp/resp_adapter.h"

#include <climits>
#include <stdexcept>

namespace lmcache::resp {

RespAdapterConfig RespAdapterConfig::parse(const Json& config) {
  // Unknown keys first, so that a misspelt key is reported as the typo it is.
  ConfigReader reader =
      bridge::open_bridged_adapter_config(config, kRespAdapterType,
                                          {"host", "port", "num_workers", "username", "password",
                                           "connect_timeout_ms", "io_timeout_ms"});
  RespAdapterConfig c;
  c.connector.endpoint.host = reader.get_string("host");
  if (c.connector.endpoint.host.empty()) reader.error("'host' must be a non-empty string");
  c.connector.endpoint.port = static_cast<int>(reader.get_int("port", std::nullopt, 1, 65535));
  c.connector.num_workers = static_cast<std::size_t>(reader.get_int("num_workers", 8, 1, 1024));
  c.connector.endpoint.username = reader.get_string("username", std::string());
  c.connector.endpoint.password = reader.get_string("password", std::string());
  c.connector.endpoint.connect_timeout =
      std::chrono::milliseconds(reader.get_int("connect_timeout_ms", 2000, 1, INT32_MAX));
  c.connector.endpoint.io_timeout =
      std::chrono::milliseconds(reader.get_int("io_timeout_ms", 5000, 1, INT32_MAX));
  c.connector.reads = bridge::ReadPoolOptions::from_config(reader);
  c.bridge = bridge::NativeConnectorAdapterOptions::from_config(
      reader, "resp", bridge::CircuitBreakerOptions::kDefaultRemoteThreshold);
  return c;
}

std::unique_ptr<bridge::NativeConnectorL2Adapter> create_resp_adapter(const Json& config) {
  return bridge::make_bridged_adapter<RespConnector>(RespAdapterConfig::parse(config));
}

void register_resp_adapter_type() {
  bridge::register_bridged_adapter_type(kRespAdapterType, &create_resp_adapter);
}

}  // namespace lmcache::resp

namespace lmcache::resp_internal {

int RespAdapterLinkAnchor() {
  resp::register_resp_adapter_type();
  return 0;
}

namespace {
// Registration when the library is loaded, for programs that never include the header.
[[maybe_unused]] const int kRegisteredAtLoad = RespAdapterLinkAnchor();
}  // namespace

}  // namespace lmcache::resp_internal
