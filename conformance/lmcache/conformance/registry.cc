#include "lmcache/conformance/registry.h"

#include "lmcache/conformance/wrapper_as_adapter.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lmcache::conformance {

namespace {

template <class Descriptor>
void check_and_append(std::vector<Descriptor>& list, Descriptor d, std::string_view kind,
                      bool factories_ok) {
  if (!is_valid_implementation_name(d.name)) {
    throw std::invalid_argument("conformance registry: invalid " + std::string(kind) + " name '" +
                                d.name + "' (letters, digits and '_' only)");
  }
  if (!factories_ok) {
    throw std::invalid_argument("conformance registry: " + std::string(kind) + " '" + d.name +
                                "' has an empty factory");
  }
  for (const auto& existing : list) {
    if (existing.name == d.name) {
      throw std::invalid_argument("conformance registry: " + std::string(kind) + " '" + d.name +
                                  "' is already registered");
    }
  }
  list.push_back(std::move(d));
}

template <class Descriptor>
bool keep_only(std::vector<Descriptor>& list, std::string_view name) {
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& d) { return d.name == name; });
  if (it == list.end()) {
    list.clear();
    return false;
  }
  Descriptor kept = std::move(*it);
  list.clear();
  list.push_back(std::move(kept));
  return true;
}

template <class Descriptor>
bool has(const std::vector<Descriptor>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(), [&](const auto& d) { return d.name == name; });
}

}  // namespace

std::string_view kind_name(ImplementationKind kind) {
  switch (kind) {
    case ImplementationKind::kSerde:
      return "serde";
    case ImplementationKind::kProcessor:
      return "processor";
    case ImplementationKind::kAdapter:
      return "adapter";
    case ImplementationKind::kWrapper:
      return "wrapper";
  }
  return "serde";
}

ImplementationKind parse_kind(std::string_view name) {
  for (auto k : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                 ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
    if (kind_name(k) == name) return k;
  }
  throw std::invalid_argument("unknown implementation kind '" + std::string(name) +
                              "' (serde, processor, adapter, wrapper)");
}

void Registry::add_serde(SerdeUnderTest serde) {
  bool ok = static_cast<bool>(serde.make_serializer) && static_cast<bool>(serde.make_deserializer);
  check_and_append(serdes_, std::move(serde), "serde", ok);
}

void Registry::add_processor(ProcessorUnderTest processor) {
  bool ok = static_cast<bool>(processor.make);
  check_and_append(processors_, std::move(processor), "processor", ok);
}

void Registry::add_adapter(AdapterUnderTest adapter) {
  bool ok = static_cast<bool>(adapter.make);
  check_and_append(adapters_, std::move(adapter), "adapter", ok);
}

void Registry::add_wrapper(WrapperUnderTest wrapper) {
  bool ok = static_cast<bool>(wrapper.make);
  if (ok && has(adapters_, wrapper.name)) {
    throw std::invalid_argument("conformance registry: wrapper '" + wrapper.name +
                                "' is also run as an adapter under its own name, and an adapter '" +
                                wrapper.name + "' is already registered: rename one of them");
  }
  AdapterUnderTest as_adapter = ok ? adapter_of_wrapper(wrapper) : AdapterUnderTest{};
  check_and_append(wrappers_, std::move(wrapper), "wrapper", ok);
  adapters_.push_back(std::move(as_adapter));
}

std::size_t Registry::size() const {
  return serdes_.size() + processors_.size() + adapters_.size() + wrappers_.size();
}

bool Registry::contains(ImplementationKind kind, std::string_view name) const {
  switch (kind) {
    case ImplementationKind::kSerde:
      return has(serdes_, name);
    case ImplementationKind::kProcessor:
      return has(processors_, name);
    case ImplementationKind::kAdapter:
      return has(adapters_, name);
    case ImplementationKind::kWrapper:
      return has(wrappers_, name);
  }
  return false;
}

bool Registry::retain_only(ImplementationKind kind, std::string_view name) {
  bool found = false;
  if (kind == ImplementationKind::kSerde) {
    found = keep_only(serdes_, name);
  } else {
    serdes_.clear();
  }
  if (kind == ImplementationKind::kProcessor) {
    found = keep_only(processors_, name);
  } else {
    processors_.clear();
  }
  if (kind == ImplementationKind::kAdapter) {
    found = keep_only(adapters_, name);
  } else {
    adapters_.clear();
  }
  if (kind == ImplementationKind::kWrapper) {
    found = keep_only(wrappers_, name);
  } else {
    wrappers_.clear();
  }
  return found;
}

void Registry::clear() {
  serdes_.clear();
  processors_.clear();
  adapters_.clear();
  wrappers_.clear();
}

Registry& global_registry() {
  static Registry* registry = new Registry();  // never destroyed: plugins may outlive exit order
  return *registry;
}

}  // namespace lmcache::conformance
