// File: conformance/tools/plugin_loader.h
//
// Loading the implementations a runner process covers: the reference implementations, or a
// plugin shared object through its versioned C entry point (plugin_abi.h).
#pragma once

#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::tools {

// The source name that stands for the reference implementations.
inline constexpr const char* kReferenceSource = "reference";

// load_source()
//
// Registers the implementations of `source` ("reference" or a plugin path) into `registry`.
// Returns an empty string on success, else why it failed (dlopen error, missing entry point,
// version mismatch, registration error). The plugin stays loaded for the life of the process.
std::string load_source(const std::string& source, Registry& registry);

}  // namespace lmcache::conformance::tools
