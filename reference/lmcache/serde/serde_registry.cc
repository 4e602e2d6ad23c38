#include "lmcache/serde/serde_registry.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "lmcache/serde/fp8_serde.h"

namespace lmcache {

namespace {

class Registry {
 public:
  // The built-ins are registered here, on first use, so that no static-initialisation order
  // is involved.
  Registry() { factories_.emplace(std::string(kFp8SerdeType), &make_fp8_serde_processor); }

  void add(std::string name, SerdeFactory factory) {
    if (name.empty()) throw std::invalid_argument("register_serde_factory: empty serde name");
    if (!factory) {
      throw std::invalid_argument("register_serde_factory: empty factory for '" + name + "'");
    }
    std::lock_guard lock(mu_);
    if (factories_.count(name) != 0) {
      throw std::invalid_argument("Serde type already registered: '" + name + "'");
    }
    factories_.emplace(std::move(name), std::move(factory));
  }

  bool remove(std::string_view name) {
    std::lock_guard lock(mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return false;
    factories_.erase(it);
    return true;
  }

  std::vector<std::string> names() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    out.reserve(factories_.size());
    for (const auto& [name, factory] : factories_) out.push_back(name);
    return out;
  }

  // A copy, so that the factory runs outside the lock.
  SerdeFactory find(const std::string& type) const {
    std::lock_guard lock(mu_);
    auto it = factories_.find(type);
    if (it != factories_.end()) return it->second;
    std::string names;
    for (const auto& [name, factory] : factories_) names += (names.empty() ? "" : ", ") + name;
    throw std::invalid_argument("Unknown serde type '" + type +
                                "'. Registered: " + (names.empty() ? "(none)" : names));
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, SerdeFactory, std::less<>> factories_;  // sorted: names() is sorted
};

Registry& registry() {
  static Registry instance;
  return instance;
}

}  // namespace

void register_serde_factory(std::string name, SerdeFactory factory) {
  registry().add(std::move(name), std::move(factory));
}

bool unregister_serde_factory(std::string_view name) { return registry().remove(name); }

std::vector<std::string> registered_serde_types() { return registry().names(); }

SerdeProcessorPtr create_serde_processor(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string("Serde config must be a JSON object, got ") +
                                config.type_name());
  }
  auto it = config.find("type");
  if (it == config.end()) throw std::invalid_argument("Serde config missing 'type' field");
  if (!it->is_string()) {
    throw std::invalid_argument("Serde config 'type' must be a string, got " + it->dump());
  }
  return create_serde_processor(SerdeConfig::from_json(config));
}

SerdeProcessorPtr create_serde_processor(const SerdeConfig& config) {
  SerdeFactory factory = registry().find(config.type);
  const Json kwargs = config.kwargs.is_null() ? Json::object() : config.kwargs;
  SerdeProcessorPtr out = factory(kwargs);
  if (!out) {
    throw std::logic_error("serde factory for '" + config.type + "' returned no processor");
  }
  return out;
}

}  // namespace lmcache
