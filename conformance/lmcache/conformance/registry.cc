#include "lmcache/conformance/registry.h"

#include "lmcache/conformance/wrapper_as_adapter.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lmcache::conformance {

namespace {

template <class Descriptor>
void CheckAndAppend(std::vector<Descriptor>& list, Descriptor d, std::string_view kind,
                    bool factories_ok) {
  if (!IsValidImplementationName(d.name)) {
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
bool KeepOnly(std::vector<Descriptor>& list, std::string_view name) {
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
bool Has(const std::vector<Descriptor>& list, std::string_view name) {
  return std::any_of(list.begin(), list.end(), [&](const auto& d) { return d.name == name; });
}

}  // namespace

std::string_view KindName(ImplementationKind kind) {
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

ImplementationKind ParseKind(std::string_view name) {
  for (auto k : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                 ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
    if (KindName(k) == name) return k;
  }
  throw std::invalid_argument("unknown implementation kind '" + std::string(name) +
                              "' (serde, processor, adapter, wrapper)");
}

void Registry::add_serde(SerdeUnderTest serde) {
  bool ok = static_cast<bool>(serde.make_serializer) && static_cast<bool>(serde.make_deserializer);
  CheckAndAppend(serdes_, std::move(serde), "serde", ok);
}

void Registry::add_processor(ProcessorUnderTest processor) {
  bool ok = static_cast<bool>(processor.make);
  CheckAndAppend(processors_, std::move(processor), "processor", ok);
}

void Registry::add_adapter(AdapterUnderTest adapter) {
  bool ok = static_cast<bool>(adapter.make);
  CheckAndAppend(adapters_, std::move(adapter), "adapter", ok);
}

void Registry::add_wrapper(WrapperUnderTest wrapper) {
  bool ok = static_cast<bool>(wrapper.make);
  if (ok && Has(adapters_, wrapper.name)) {
    throw std::invalid_argument("conformance registry: wrapper '" + wrapper.name +
                                "' is also run as an adapter under its own name, and an adapter '" +
                                wrapper.name + "' is already registered: rename one of them");
  }
  AdapterUnderTest as_adapter = ok ? adapter_of_wrapper(wrapper) : AdapterUnderTest{};
  CheckAndAppend(wrappers_, std::move(wrapper), "wrapper", ok);
  adapters_.push_back(std::move(as_adapter));
}

std::size_t Registry::size() const {
  return serdes_.size() + processors_.size() + adapters_.size() + wrappers_.size();
}

bool Registry::contains(ImplementationKind kind, std::string_view name) const {
  switch (kind) {
    case ImplementationKind::kSerde:
      return Has(serdes_, name);
    case ImplementationKind::kProcessor:
      return Has(processors_, name);
    case ImplementationKind::kAdapter:
      return Has(adapters_, name);
    case ImplementationKind::kWrapper:
      return Has(wrappers_, name);
  }
  return false;
}

bool Registry::retain_only(ImplementationKind kind, std::string_view name) {
  bool found = false;
  if (kind == ImplementationKind::kSerde) {
    found = KeepOnly(serdes_, name);
  } else {
    serdes_.clear();
  }
  if (kind == ImplementationKind::kProcessor) {
    found = KeepOnly(processors_, name);
  } else {
    processors_.clear();
  }
  if (kind == ImplementationKind::kAdapter) {
    found = KeepOnly(adapters_, name);
  } else {
    adapters_.clear();
  }
  if (kind == ImplementationKind::kWrapper) {
    found = KeepOnly(wrappers_, name);
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

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: plugins may outlive exit order
  return *registry;
}

}  // namespace lmcache::conformance
