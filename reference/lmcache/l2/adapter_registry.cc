#include "lmcache/l2/adapter_registry.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "lmcache/l2/mock_adapter.h"

namespace lmcache {

namespace {

class Registry {
 public:
  Registry() {
    // Built-ins: registered here, on first use, never from a static initialiser.
    add(std::string(MockL2Adapter::kTypeName),
        [](const Json& config, const AdapterContext&) -> L2AdapterPtr {
          return MockL2Adapter::from_json(config);
        });
  }

  void add(std::string name, L2AdapterFactory factory) {
    if (name.empty()) {
      throw std::invalid_argument("register_l2_adapter_type: the type name is empty");
    }
    if (!factory) {
      throw std::invalid_argument("register_l2_adapter_type: empty factory for type '" + name +
                                  "'");
    }
    std::lock_guard lock(mu_);
    auto [it, inserted] = factories_.try_emplace(name, std::move(factory));
    if (!inserted) {
      throw std::invalid_argument("L2 adapter type already registered: '" + name + "'");
    }
  }

  std::vector<std::string> names() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    out.reserve(factories_.size());
    for (const auto& [name, factory] : factories_) out.push_back(name);
    return out;  // std::map keeps them sorted
  }

  // A copy, so the caller runs the factory without our lock.
  std::optional<L2AdapterFactory> find(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, L2AdapterFactory> factories_;
};

Registry& registry() {
  static Registry instance;  // thread-safe initialisation (C++11 magic statics)
  return instance;
}

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
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
                                joined(registered_l2_adapter_types()) + ")");
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
  std::optional<L2AdapterFactory> factory = registry().find(type);
  if (!factory) {
    throw std::invalid_argument("Unknown L2 adapter type '" + type +
                                "'. Registered: " + joined(registered_l2_adapter_types()));
  }
  Json rest = config;
  rest.erase("type");
  L2AdapterPtr adapter = (*factory)(rest, ctx);
  if (!adapter) {
    throw std::logic_error("the factory for L2 adapter type '" + type + "' returned null");
  }
  return adapter;
}

}  // namespace lmcache
