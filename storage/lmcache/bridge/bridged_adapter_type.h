// File: lmcache/bridge/bridged_adapter_type.h
//
// What every adapter type made of a native connector behind the bridge shares ("resp", "fs"):
// its parsed config (the connector's options and the bridge's), the config's common checks,
// construction, and registration. A new type writes only its own keys and its connector.
#pragma once

#include <initializer_list>
#include <memory>
#include <string_view>
#include <utility>

#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/core/config.h"
#include "lmcache/l2/adapter_registry.h"

namespace lmcache::bridge {

// BridgedAdapterConfig
//
// A bridged type's config, parsed: what its connector is built with and what the bridge is.
template <class ConnectorOptions>
struct BridgedAdapterConfig {
  ConnectorOptions connector;
  NativeConnectorAdapterOptions bridge;
};

// open_bridged_adapter_config()
//
// A ConfigReader over `config` (context "<type> adapter config") that knows `own_keys`, "type",
// the bridge's keys (NativeConnectorAdapterOptions) and the read pool's (ReadPoolOptions), and
// has already refused an unknown key (first, so that a misspelt key is reported as the typo it
// is) and a "type" other than `type`. Throws std::invalid_argument naming the key.
ConfigReader open_bridged_adapter_config(const Json& config, std::string_view type,
                                         std::initializer_list<const char*> own_keys);

// make_bridged_adapter()
//
// The bridge over a `Connector` built from `config.connector`, with `config.bridge`.
template <class Connector, class ConnectorOptions>
std::unique_ptr<NativeConnectorL2Adapter> make_bridged_adapter(
    BridgedAdapterConfig<ConnectorOptions> config) {
  return make_native_connector_adapter(std::make_unique<Connector>(std::move(config.connector)),
                                       std::move(config.bridge));
}

// register_bridged_adapter_type()
//
// Registers `type` with the L2 adapter registry, made by `create(config)`. Once per type name,
// however often and from however many threads it is called.
using BridgedAdapterFactory = std::unique_ptr<NativeConnectorL2Adapter> (*)(const Json& config);
void register_bridged_adapter_type(std::string_view type, BridgedAdapterFactory create);

}  // namespace lmcache::bridge
