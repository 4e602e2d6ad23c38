#include "lmcache/bridge/bridged_adapter_type.h"

#include <mutex>
#include <set>
#include <string>

#include "lmcache/bridge/batch_connector_base.h"

namespace lmcache::bridge {

ConfigReader open_bridged_adapter_config(const Json& config, std::string_view type,
                                         std::initializer_list<const char*> own_keys) {
  ConfigReader reader(config, std::string(type) + " adapter config");
  reader.allow("type");
  for (const char* key : own_keys) reader.allow(key);
  NativeConnectorAdapterOptions::allow_config_keys(reader);
  ReadPoolOptions::allow_config_keys(reader);
  reader.finish();
  if (const Json* given = reader.raw("type"); given != nullptr) {
    if (!given->is_string() || given->get<std::string>() != type) {
      reader.error("'type' must be \"" + std::string(type) + "\", got " + given->dump());
    }
  }
  return reader;
}

void register_bridged_adapter_type(std::string_view type, BridgedAdapterFactory create) {
  static std::mutex mu;
  static std::set<std::string, std::less<>> registered;
  std::lock_guard lock(mu);
  if (!registered.insert(std::string(type)).second) return;
  register_l2_adapter_type(std::string(type),
                           [create](const Json& config, const AdapterContext&) -> L2AdapterPtr {
                             return create(config);
                           });
}

}  // namespace lmcache::bridge
