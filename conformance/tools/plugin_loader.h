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
// Registers the implementations of `source` ("reference", a plugin path, or kConnectorPluginPrefix
// and a plugin path) into `registry`. Returns an empty string on success, else why it failed
// (dlopen error, missing entry point, version mismatch, registration error; for a connector
// plugin also: it exports no LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2, or registered no adapter of
// the name that returns). A connector plugin also gets the wrapper suite over its connector:
// "<name>_fp8_wrapper", the reference fp8 wrapper with the bridge below the kit's scripted inner
// double, shadowed by the kit's mock (storage_testing::ShadowedAdapter). The plugin stays loaded
// for the life of the process.
std::string load_source(const std::string& source, Registry& registry);

}  // namespace lmcache::conformance::tools
