#include "lmcache/l2/adapter_registry.h"

#include <stdexcept>
#include <utility>

#include "lmcache/core/factory_registry.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache {

namespace {

using AdapterRegistry = FactoryRegistry<L2AdapterFactory>;

AdapterRegistry& registry() {
  // Built-ins are registered on first use, never from a static initialiser.
  static AdapterRegistry instance("L2 adapter type", [](AdapterRegistry& r) {
    r.add(std::string(MockL2Adapter::kTypeName),
          [](const Json& config, const AdapterContext&) -> L2AdapterPtr {
            return MockL2Adapter::from_json(config);
          });
  });
  return instance;
}

}  // namespace

void register_l2_adapter_type(std::string name, L2AdapterFactory factory) {
  registry().add(std::move(name), std::move(factory));
}

std::vector<std::string> registered_l2_adapter_types() { return registry().names(); }

L2AdapterPtr create_registered_l2_adapter(const Json& config, const AdapterContext& ctx) {
  if (!config.is_object()) {
    throw std::invalid_argument("L2 adapter config must be a JSON object, got " +
                                std::string(config.type_name()));
  }
  auto type_it = config.find("type");
  if (type_it == config.end()) {
    throw std::invalid_argument("L2 adapter config missing 'type' field (registered types: " +
                                join_names(registered_l2_adapter_types()) + ")");
  }
  if (!type_it->is_string()) {
    throw std::invalid_argument("L2 adapter config: 'type' must be a string, got " +
                                type_it->dump());
  }
  const std::string type = type_it->get<std::string>();
  if (config.contains("serde")) {
    throw std::invalid_argument(
        "L2 adapter config for type '" + type +
        "' has a 'serde' key: serde wrapping is done by create_l2_adapter() in the wrapper "
        "library, not by create_registered_l2_adapter()");
  }
  const L2AdapterFactory factory = registry().get(type);
  Json rest = config;
  rest.erase("type");
  L2AdapterPtr adapter = factory(rest, ctx);
  if (!adapter) {
    throw std::logic_error("the factory for L2 adapter type '" + type + "' returned null");
  }
  return adapter;
}

}  // namespace lmcache
