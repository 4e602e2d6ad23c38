// File: lmcache/core/factory_registry.h
//
// FactoryRegistry<Factory>: a thread-safe map from a type name to a factory, the one mechanism
// behind every "create by type name from JSON" registry of the stack (L2 adapter types in
// lmcache/l2/adapter_registry.h, serde types in lmcache/serde/serde_registry.h).
//
//   - Duplicate names are rejected (std::invalid_argument naming the name), so a plugin cannot
//     silently replace a built-in.
//   - An unknown name is std::invalid_argument listing the registered names.
//   - Built-ins are registered by the `builtins` callback the constructor runs. Owners keep the
//     registry in a function-local static, so built-ins exist from the first use on, whatever
//     the order of static initialisation across libraries.
//   - Lookups hand out a copy of the factory, so a factory runs outside the registry's lock and
//     may itself use the registry (a decorator building its inner adapter does).
//
// Contract in docs/l2-adapter.md and docs/serde.md ("registry").
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmcache {

// join_names()
//
// "a, b, c" for a list of names, "(none)" for an empty one: the registered-names part of an
// unknown-type message.
inline std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

template <typename Factory>
class FactoryRegistry {
 public:
  // `kind` names what is registered, in lower case ("serde type", "L2 adapter type"); every
  // message uses it. `builtins`, when set, is called once from the constructor to register the
  // built-in factories.
  explicit FactoryRegistry(std::string kind,
                           const std::function<void(FactoryRegistry&)>& builtins = {})
      : kind_(std::move(kind)) {
    if (builtins) builtins(*this);
  }

  FactoryRegistry(const FactoryRegistry&) = delete;
  FactoryRegistry& operator=(const FactoryRegistry&) = delete;

  // add()
  //
  // Registers `factory` under `name`. Throws std::invalid_argument for an empty name, an empty
  // factory, or a name already registered ("<Kind> already registered: '<name>'").
  void add(std::string name, Factory factory) {
    if (name.empty()) throw std::invalid_argument(kind_ + ": the name is empty");
    if (!factory) {
      throw std::invalid_argument(kind_ + " '" + name + "': the factory is empty");
    }
    std::lock_guard lock(mu_);
    auto [it, inserted] = factories_.try_emplace(std::move(name), std::move(factory));
    if (!inserted) {
      throw std::invalid_argument(capitalized(kind_) + " already registered: '" + it->first + "'");
    }
  }

  // remove()
  //
  // Unregisters `name`; returns whether it was registered.
  bool remove(std::string_view name) {
    std::lock_guard lock(mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return false;
    factories_.erase(it);
    return true;
  }

  // names()
  //
  // The registered names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    out.reserve(factories_.size());
    for (const auto& entry : factories_) out.push_back(entry.first);
    return out;
  }

  // find()
  //
  // A copy of the factory registered under `name`, or std::nullopt.
  std::optional<Factory> find(std::string_view name) const {
    std::lock_guard lock(mu_);
    auto it = factories_.find(name);
    if (it == factories_.end()) return std::nullopt;
    return it->second;
  }

  // get()
  //
  // A copy of the factory registered under `name`. Throws std::invalid_argument
  // "Unknown <kind> '<name>'. Registered: <names>" when there is none.
  Factory get(std::string_view name) const {
    if (std::optional<Factory> factory = find(name)) return *std::move(factory);
    throw std::invalid_argument("Unknown " + kind_ + " '" + std::string(name) +
                                "'. Registered: " + join_names(names()));
  }

  // kind()
  //
  // What the registry holds, as given to the constructor.
  const std::string& kind() const { return kind_; }

 private:
  static std::string capitalized(std::string s) {
    if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
    return s;
  }

  const std::string kind_;
  mutable std::mutex mu_;
  std::map<std::string, Factory, std::less<>> factories_;  // sorted, so names() is sorted
};

}  // namespace lmcache
