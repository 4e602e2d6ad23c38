// File: lmcache/conformance/registry.h
//
// Registry: the implementations a run of the kit covers, by kind and name. The runner
// (lmcache-conform) fills the process-wide global_registry() from plugins (plugin_abi.h) and from
// register_reference_implementations(), then instantiates every conformance suite over it. A
// link-time user normally needs no registry: INSTANTIATE_TEST_SUITE_P takes descriptors directly.
//
// Thread safety: none. Implementations are registered during start-up, before any suite runs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance {

// The four kinds of implementation, each with its own suite.
enum class ImplementationKind { kSerde, kProcessor, kAdapter, kWrapper };

// "serde", "processor", "adapter", "wrapper".
std::string_view kind_name(ImplementationKind kind);
// Inverse of kind_name(); throws std::invalid_argument naming the text.
ImplementationKind parse_kind(std::string_view name);

class Registry {
 public:
  // add_serde() / add_processor() / add_adapter() / add_wrapper()
  //
  // Appends a descriptor. Throws std::invalid_argument when the name is not valid
  // (is_valid_implementation_name), when a factory is empty, or when the name is already taken by
  // an implementation of the same kind (the message names it). add_wrapper() also appends
  // adapter_of_wrapper(wrapper) to the adapters (wrapper_as_adapter.h), so the adapter suite
  // runs over every wrapper; it throws when an adapter of the wrapper's name exists.
  void add_serde(SerdeUnderTest serde);
  void add_processor(ProcessorUnderTest processor);
  void add_adapter(AdapterUnderTest adapter);
  void add_wrapper(WrapperUnderTest wrapper);

  // In registration order.
  const std::vector<SerdeUnderTest>& serdes() const { return serdes_; }
  const std::vector<ProcessorUnderTest>& processors() const { return processors_; }
  const std::vector<AdapterUnderTest>& adapters() const { return adapters_; }
  const std::vector<WrapperUnderTest>& wrappers() const { return wrappers_; }

  // Total number of implementations of every kind.
  std::size_t size() const;

  // Whether an implementation of this kind and name is registered.
  bool contains(ImplementationKind kind, std::string_view name) const;

  // Keeps only the implementation of this kind and name (the runner's child processes test
  // one implementation at a time). Returns false, removing everything, when there is none.
  bool retain_only(ImplementationKind kind, std::string_view name);

  // Drops every implementation.
  void clear();

 private:
  std::vector<SerdeUnderTest> serdes_;
  std::vector<ProcessorUnderTest> processors_;
  std::vector<AdapterUnderTest> adapters_;
  std::vector<WrapperUnderTest> wrappers_;
};

// global_registry()
//
// The process-wide registry the runner instantiates its suites over.
Registry& global_registry();

}  // namespace lmcache::conformance
