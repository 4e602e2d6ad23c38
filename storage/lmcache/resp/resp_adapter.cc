#include "lmcache/resp/resp_adapter.h"

#include <climits>
#include <mutex>
#include <stdexcept>

#include "lmcache/l2/adapter_registry.h"

namespace lmcache::resp {

RespAdapterConfig RespAdapterConfig::parse(const Json& config) {
  ConfigReader reader(config, "resp adapter config");
  // Unknown keys first, so that a misspelt "host" is reported as the typo it is.
  for (const char* key : {"type", "host", "port", "num_workers", "username", "password",
                          "connect_timeout_ms", "io_timeout_ms"}) {
    reader.allow(key);
  }
  bridge::NativeConnectorAdapterOptions::allow_config_keys(reader);
  bridge::ReadPoolOptions::allow_config_keys(reader);
  reader.finish();
  if (const Json* type = reader.raw("type"); type != nullptr) {
    if (!type->is_string() || type->get<std::string>() != kRespAdapterType) {
      reader.error("'type' must be \"resp\", got " + type->dump());
    }
  }
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
  RespAdapterConfig c = RespAdapterConfig::parse(config);
  return bridge::make_native_connector_adapter(
      std::make_unique<RespConnector>(std::move(c.connector)), std::move(c.bridge));
}

void register_resp_adapter_type() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_l2_adapter_type(std::string(kRespAdapterType),
                             [](const Json& config, const AdapterContext&) -> L2AdapterPtr {
                               return create_resp_adapter(config);
                             });
  });
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
