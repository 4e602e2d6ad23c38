// File: lmcache/serde/serde_registry.h
//
// The process-global registry of serde factories, so that adapter configs can name a serde:
//   {"type": "mock", ..., "serde": {"type": "fp8", "fp8_dtype": "float8_e4m3fn"}}
// create_serde_processor() looks the type up and calls its factory with the rest of the
// config (everything except "type"); each call builds a new, independent processor.
//
// The built-in serdes ("fp8", "checksum", "aesgcm", "encrypt", "lmcr", "chain") are registered by
// the registry itself the first time it is used (a function-local static), so they are present
// whatever the order of static initialisation and whether or not a translation unit happened to be
// linked in.
//
// Thread safety: every function may be called from any thread. Factories run outside the
// registry lock, so a factory may itself use the registry.
//
// Example:
//   register_serde_factory("mine", [](const Json& kwargs) -> SerdeProcessorPtr {
//     return std::make_unique<AsyncSerdeProcessor>(std::make_shared<MySer>(kwargs),
//                                                  std::make_shared<MyDeser>(kwargs));
//   });
//   SerdeProcessorPtr p = create_serde_processor(Json::parse(R"({"type": "mine"})"));
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/serde/serde_config.h"
#include "lmcache/serde/serde_processor.h"

namespace lmcache {

// A factory receives the serde config without its "type" key (always a JSON object) and
// returns a new processor, or throws std::invalid_argument naming a bad key.
using SerdeFactory = std::function<SerdeProcessorPtr(const Json& kwargs)>;

// register_serde_factory()
//
// Adds `factory` under `name`. Throws std::invalid_argument "Serde type already registered:
// 'name'" when the name is taken (built-ins included), and for an empty name or factory.
void register_serde_factory(std::string name, SerdeFactory factory);

// unregister_serde_factory()
//
// Removes `name`; returns false when it was not registered. Meant for tests and plugins that
// unload; processors already created are unaffected.
bool unregister_serde_factory(std::string_view name);

// registered_serde_types()
//
// Every registered name, sorted.
std::vector<std::string> registered_serde_types();

// create_serde_processor()
//
// Builds a processor from a full serde config ({"type": ..., kwargs...}). Throws
// std::invalid_argument "Serde config missing 'type' field" when "type" is absent (or
// "... must be a string"), "Unknown serde type 'x'. Registered: a, b" for an unknown type,
// and whatever the factory throws for bad kwargs.
SerdeProcessorPtr create_serde_processor(const Json& config);

// The same from an already parsed config; the factory gets config.kwargs.
SerdeProcessorPtr create_serde_processor(const SerdeConfig& config);

}  // namespace lmcache
