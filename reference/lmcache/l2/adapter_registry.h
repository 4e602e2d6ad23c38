// File: lmcache/l2/adapter_registry.h
//
// The process-global registry of L2 adapter types (docs/l2-adapter.md). A type is a name plus a
// factory that builds an adapter from its JSON config; `{"type": "mock", "max_size_gb": 1, ...}`
// creates a MockL2Adapter. Built-in types ("mock") are registered on the registry's first use
// through a function-local static, so nothing depends on static-initialisation order and a
// plugin library can register its own types from anywhere (including its own static
// initialisers).
//
// Serde wrapping is not done here: a config with a "serde" key is rejected, because
// `create_l2_adapter()` in the wrapper library strips "serde", calls
// create_registered_l2_adapter() for the inner adapter and wraps the result.
//
// Thread safety: every function is safe to call concurrently. Factories are called without the
// registry's lock held, so a factory may itself create adapters (a fault injector building its
// inner adapter) or register types.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache {

class L1Manager;  // lmcache/l1/l1_manager.h; only shared here, never dereferenced

// AdapterContext
//
// What a factory may need beyond its JSON: process-level objects an adapter is built around.
// An open struct that grows as layers appear; factories that need nothing ignore it.
struct AdapterContext {
  // Where a serde wrapper keeps its temporary buffers (create_l2_adapter() with a "serde"
  // object needs it); decorators pass the context on to the adapters they build.
  std::shared_ptr<L1Manager> l1_manager;
};

// L2AdapterFactory
//
// Builds an adapter from its config, given *without* the "type" key. Throws
// std::invalid_argument for a bad config, naming the offending key. Must not return null.
using L2AdapterFactory =
    std::function<L2AdapterPtr(const Json& config_without_type, const AdapterContext& ctx)>;

// register_l2_adapter_type()
//
// Adds `name`. Throws std::invalid_argument when `name` is empty, when `factory` is empty, or
// when `name` is already registered ("L2 adapter type already registered: 'mock'").
void register_l2_adapter_type(std::string name, L2AdapterFactory factory);

// registered_l2_adapter_types()
//
// Every registered name, sorted; includes the built-ins.
std::vector<std::string> registered_l2_adapter_types();

// create_registered_l2_adapter()
//
// Builds the adapter named by config["type"], passing the rest of `config` to its factory.
// Throws std::invalid_argument when `config` is not an object, when "type" is missing or not
// a string, when "serde" is present (serde wrapping belongs to create_l2_adapter() in the
// wrapper library), or when the type is unknown (the message lists the registered names).
// Exceptions from the factory propagate unchanged; a null result is std::logic_error.
L2AdapterPtr create_registered_l2_adapter(const Json& config, const AdapterContext& ctx = {});

}  // namespace lmcache
