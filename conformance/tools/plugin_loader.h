// File: conformance/tools/plugin_loader.h
//
// Loading the implementations a runner process covers: the reference implementations, or a
// plugin shared object through its versioned C entry point (plugin_abi.h), or a native connector
// plugin (connector_plugin.h) for `lmcache-conform --connector-plugin`.
#pragma once

#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::tools {

// The source name that stands for the reference implementations.
inline constexpr const char* kReferenceSource = "reference";

// Sources of `--connector-plugin FILE` are this prefix followed by the plugin's path.
inline constexpr const char* kConnectorPluginPrefix = "connector-plugin:";

// load_source()
//
// Registers the implementations of `source` ("reference", a plugin path, kConnectorPluginPrefix
// and a plugin path, or python::kPythonSourcePrefix and a --python spec) into `registry`. Returns
// an empty string on success, else why it failed (dlopen error, missing entry point, version
// mismatch, registration error; for a connector plugin also: it exports no
// LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2, or registered no adapter of the name that returns). A
// connector plugin also gets the wrapper suite over its connector:
// "<name>_fp8_wrapper", the reference fp8 wrapper with the bridge below the kit's scripted inner
// double, shadowed by the kit's mock (storage_testing::ShadowedAdapter). The plugin stays loaded
// for the life of the process.
std::string load_source(const std::string& source, Registry& registry);

// register_connector_plugin_adapter_type()
//
// Loads the native connector plugin at `path` (as `--connector-plugin` does) and registers the
// L2 adapter type `type_name` (lmcache/l2/adapter_registry.h): the bridge over a fresh connector
// from the plugin's factory, each adapter under a key namespace of its own; its config takes no
// key but "type" (create_l2_adapter() adds a "serde" wrapper as for any type). Sets `*name` to
// the connector's implementation name. Returns an empty string, or why the plugin could not be
// loaded or the type registered. The plugin stays loaded for the life of the process.
std::string register_connector_plugin_adapter_type(const std::string& path,
                                                   const std::string& type_name, std::string* name);

}  // namespace lmcache::conformance::tools
