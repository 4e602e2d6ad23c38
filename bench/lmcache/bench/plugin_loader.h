// File: lmcache/bench/plugin_loader.h
//
// Loads a conformance plugin for `lmcache-bench --plugin`: the same shared object, the same
// versioned extern "C" entry point (lmcache_conformance_plugin_v1, plugin_abi.h) and the same
// loader code as `lmcache-conform --plugin`. There is no bench-specific ABI: this forwards to
// the conformance runner's load_source() (conformance/tools/plugin_loader.h, the
// lmcache_conformance_plugin_loader library both programs link), so a plugin that the
// conformance runner accepts is benchmarked unchanged, and a version-mismatched one is refused with
// the runner's message.
#pragma once

#include <cstddef>
#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::bench {

// load_conformance_plugin()
//
// Registers the implementations of the plugin at `path` into `registry` (the plugin stays
// loaded for the life of the process: its factories live in it) and returns how many it
// registered. Throws std::runtime_error with the loader's reason (dlopen error, missing entry
// point, ABI or MAJOR.MINOR version mismatch, a registration error such as a duplicate name).
std::size_t load_conformance_plugin(const std::string& path, conformance::Registry& registry);

}  // namespace lmcache::bench
