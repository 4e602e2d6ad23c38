// File: lmcache/conformance/connector_plugin.h
//
// A vendor's own native connector (LMCache's IStorageConnector shape, the NativeConnector concept
// of lmcache/bridge/native_connector.h) under the conformance kit, from a plugin built against
// the installed kit, in one line:
//
//     #include "lmcache/conformance/connector_plugin.h"
//     #include "my_connector.h"
//     LMCACHE_CONFORMANCE_CONNECTOR(MyConnector, &make_my_connector)
//
// linked as a MODULE library against lmcache::conformance_api and lmcache::bridge, then
//
//     lmcache-conform --connector-plugin libmy_connector_plugin.so
//
// The kit runs the adapter suite over NativeConnectorL2Adapter (the bridge,
// lmcache/bridge/native_connector_adapter.h) over fresh connectors from the factory, twice:
// bare, and below the reference serde wrapper with the fp8 e4m3fn serde (the stack a deployment
// with `"serde": {"type": "fp8"}` runs, as `lmcache-conform --adapter` does for its configs).
// The plugin is an ordinary plugin of the ABI in plugin_abi.h: the macro writes the
// LMCACHE_CONFORMANCE_PLUGIN entry point, plus the marker LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2
// by which --connector-plugin knows that it registers a connector.
#pragma once

#include <cctype>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "lmcache/bridge/native_connector.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/error_notes.h"
#include "lmcache/conformance/key_namespace.h"
#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/conformance/store_preflight.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::conformance {

// connector_implementation_name()
//
// The implementation name of a connector type spelled `type` ("vendor::MapConnector" gives
// "MapConnector"): the last component of its qualified name, with every character other than a
// letter, a digit or '_' replaced by '_' ("connector" when nothing is left).
inline std::string connector_implementation_name(std::string_view type) {
  const std::string_view head = type.substr(0, type.find('<'));
  if (const std::size_t colons = head.rfind("::"); colons != std::string_view::npos) {
    type.remove_prefix(colons + 2);
  }
  std::string out;
  for (char c : type) {
    if (c == ' ') continue;
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  }
  return out.empty() ? std::string("connector") : out;
}

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {

// check_native_connector<C>()
//
// Fails compilation with a message naming each member of the NativeConnector concept that C
// lacks; returns true otherwise.
template <class C>
consteval bool check_native_connector() {
  using Keys = const std::vector<std::string>&;
  using Bufs = const std::vector<void*>&;
  using Lens = const std::vector<std::size_t>&;
  constexpr bool has_fd = requires(const C& c) {
    { c.event_fd() } -> std::convertible_to<int>;
  };
  constexpr bool has_get_set = requires(C & c, Keys k, Bufs b, Lens l, std::size_t n) {
    { c.submit_batch_get(k, b, l, n) } -> std::convertible_to<std::uint64_t>;
    { c.submit_batch_set(k, b, l, n) } -> std::convertible_to<std::uint64_t>;
  };
  constexpr bool has_exists = requires(C & c, Keys k) {
    { c.submit_batch_exists(k) } -> std::convertible_to<std::uint64_t>;
  };
  constexpr bool has_close = requires(C & c) { c.close(); };
  static_assert(has_fd,
                "LMCACHE_CONFORMANCE_CONNECTOR: the connector type needs `int event_fd() const` "
                "(lmcache/bridge/native_connector.h)");
  static_assert(has_get_set,
                "LMCACHE_CONFORMANCE_CONNECTOR: the connector type needs `uint64_t "
                "submit_batch_get(keys, bufs, lens, batch_chunk_num_bytes)` and "
                "`submit_batch_set(...)` taking const std::vector<std::string>&, const "
                "std::vector<void*>&, const std::vector<size_t>&, size_t "
                "(lmcache/bridge/native_connector.h)");
  static_assert(has_exists,
                "LMCACHE_CONFORMANCE_CONNECTOR: the connector type needs `uint64_t "
                "submit_batch_exists(const std::vector<std::string>&)` "
                "(lmcache/bridge/native_connector.h)");
  static_assert(has_close,
                "LMCACHE_CONFORMANCE_CONNECTOR: the connector type needs `void close()` "
                "(lmcache/bridge/native_connector.h)");
  // Only drain_completions() is left when the members above are all there.
  static_assert(!(has_fd && has_get_set && has_exists && has_close) || bridge::NativeConnector<C>,
                "LMCACHE_CONFORMANCE_CONNECTOR: the connector type does not model "
                "lmcache::bridge::NativeConnector: drain_completions() must return a range of "
                "completions with future_id, ok, result_bytes and error "
                "(lmcache/bridge/native_connector.h)");
  // The assertions above stop the build; the callers' static_assert only triggers them.
  return true;
}

}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {

// ConnectorFactory
//
// A connector factory: callable (as const) with no arguments, returns a fresh connector (never
// null) as a std::unique_ptr<C>. The kit calls it once per adapter it builds (every property
// builds several, possibly from several threads at once) and closes each connector it gets.
template <class F, class C>
concept ConnectorFactory = std::invocable<const F&> &&
    std::convertible_to<std::invoke_result_t<const F&>, std::unique_ptr<C>>;

// native_connector_descriptor<C>()
//
// The adapter descriptor "<name>": NativeConnectorL2Adapter over a connector from `factory`, with
// the bridge's default options except type_name = `name` and a key_namespace from
// fresh_key_namespace() for every adapter built (key_namespace.h): a connector whose store is
// shared (one server, one directory) gives every property a clean store without clearing it, and
// the run never touches keys it did not write. Declares what the bridge offers: delete,
// listeners, client-side usage and the lookup lock count (report_status()["locked_key_count"]),
// over uint8, float32 and bfloat16 objects. Its reference pair is two bridges over two
// connectors from the factory under one namespace, probed for a shared store
// (ReferenceAdapter::probe_shared_store). Every ConnectorError the bridge sees is noted
// (error_notes.h), so a Fail names the connector's first error. make() throws std::runtime_error
// when the factory returns null.
template <class C, class F>
AdapterUnderTest native_connector_descriptor(std::string name, F factory) {
  static_assert(conformance_internal::check_native_connector<C>());
  static_assert(ConnectorFactory<F, C>,
                "LMCACHE_CONFORMANCE_CONNECTOR(C, factory): the factory must be callable with no "
                "arguments and return std::unique_ptr<C> (ConnectorFactory, connector_plugin.h)");
  AdapterUnderTest a;
  if constexpr (bridge::NativeConnector<C> && ConnectorFactory<F, C>) {
    a.name = name;
    // One bridge over a fresh connector, under `key_namespace`.
    auto make_bridge = [name, factory](const std::string& key_namespace) -> L2AdapterPtr {
      std::unique_ptr<C> c = factory();
      if (!c) throw std::runtime_error(name + ": the connector factory returned null");
      bridge::NativeConnectorAdapterOptions options;
      options.type_name = name;
      options.key_namespace = key_namespace;
      // A Fail then names the connector's first error (error_notes.h): its own text, the
      // operation, the keys and the sizes.
      options.on_connector_error = [](const bridge::ConnectorError& e) {
        note_implementation_error(e.error, "connector " + e.where());
      };
      return bridge::make_native_connector_adapter(std::move(c), std::move(options));
    };
    a.make = [make_bridge] { return make_bridge(fresh_key_namespace()); };
    // Two connectors from the factory, one namespace: when they share a store (a server), the
    // second must read what the first stored, at the stored length and at others.
    a.reference.type = "a second " + name + " from the factory";
    a.reference.probe_shared_store = true;
    a.reference.make_pair = [make_bridge] {
      const std::string key_namespace = fresh_key_namespace();
      return std::pair<L2AdapterPtr, L2AdapterPtr>(make_bridge(key_namespace),
                                                   make_bridge(key_namespace));
    };
    a.capabilities.reports_lock_count = true;
    a.object_dtypes = {DType::kUInt8, DType::kFloat32, DType::kBFloat16};
  }
  return a;
}

// native_connector_fp8_descriptor<C>()
//
// The adapter descriptor "<name>_fp8": the reference SerdeL2AdapterWrapper with an
// AsyncSerdeProcessor over fp8 e4m3fn and a 256 MiB L1Manager, over the adapter of
// native_connector_descriptor<C>(name, factory). It declares what reference_wrapped_mock_adapter()
// declares: one stored byte per element, loads that give the fp8 round trip.
template <class C, class F>
AdapterUnderTest native_connector_fp8_descriptor(std::string name, F factory) {
  AdapterUnderTest bridge = native_connector_descriptor<C>(name, std::move(factory));
  AdapterUnderTest a = reference_wrapped_mock_adapter();
  a.name = name + "_fp8";
  a.make = [make_bridge = bridge.make]() -> L2AdapterPtr {
    auto serde = std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                       std::make_shared<Fp8Deserializer>());
    return reference_serde_wrapper().make(make_bridge(), std::move(serde),
                                          std::make_shared<L1Manager>(std::size_t{256} << 20));
  };
  return a;
}

// register_native_connector<C>()
//
// Adds native_connector_descriptor<C>() and native_connector_fp8_descriptor<C>() to `registry`,
// named connector_implementation_name(type_name) and that name + "_fp8", after building one
// adapter, storing one object through it (first_store_problem(), store_preflight.h) and closing
// it, so that a factory that throws, or a connector that cannot store (an unreachable server:
// submits that fail, or never complete and end in the bridge's task deadline), is reported once
// when the plugin is loaded (the runner exits 2) rather than by every property, each after the
// deadline (the store is skipped when store_preflight_wanted() is false: the runner's property
// children). Without `factory`, connectors are built with std::make_unique<C>(). Throws
// std::runtime_error naming the connector and the problem when that first adapter cannot be built
// or cannot store, and what Registry::add_adapter() throws.
template <class C, class F>
void register_native_connector(Registry& registry, std::string_view type_name, F factory) {
  static_assert(conformance_internal::check_native_connector<C>());
  static_assert(ConnectorFactory<F, C>,
                "LMCACHE_CONFORMANCE_CONNECTOR(C, factory): the factory must be callable with no "
                "arguments and return std::unique_ptr<C> (ConnectorFactory, connector_plugin.h)");
  const std::string name = connector_implementation_name(type_name);
  AdapterUnderTest bare = native_connector_descriptor<C>(name, factory);
  std::string problem;
  try {
    L2AdapterPtr first = bare.make();
    // The bridge fails a task at its deadline; the margin only bounds a bridge that does not.
    if (store_preflight_wanted()) {
      problem = first_store_problem(
          *first, bridge::NativeConnectorAdapterOptions{}.task_deadline + std::chrono::seconds(5));
    }
    first->close();
  } catch (const std::exception& e) {
    throw std::runtime_error("LMCACHE_CONFORMANCE_CONNECTOR(" + std::string(type_name) +
                             "): cannot build the connector and its bridge: " + e.what());
  }
  if (!problem.empty()) {
    throw std::runtime_error("LMCACHE_CONFORMANCE_CONNECTOR(" + std::string(type_name) +
                             "): the connector cannot store, so no property can run: " + problem +
                             " (is its server reachable?)");
  }
  registry.add_adapter(std::move(bare));
  registry.add_adapter(native_connector_fp8_descriptor<C>(name, std::move(factory)));
}

template <class C>
void register_native_connector(Registry& registry, std::string_view type_name) {
  static_assert(std::is_default_constructible_v<C>,
                "LMCACHE_CONFORMANCE_CONNECTOR(C): C is not default-constructible; pass a factory "
                "returning std::unique_ptr<C> as the macro's second argument");
  if constexpr (std::is_default_constructible_v<C>) {
    register_native_connector<C>(registry, type_name, [] { return std::make_unique<C>(); });
  }
}

}  // namespace lmcache::conformance

// LMCACHE_CONFORMANCE_CONNECTOR(ConnectorType[, factory])
//
// The whole plugin for a native connector type: defines the plugin entry point
// (LMCACHE_CONFORMANCE_PLUGIN, plugin_abi.h), which calls
// register_native_connector<ConnectorType>() with the type's spelling and `factory`, and the
// marker LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2 returning the implementation name.
//   ConnectorType  a type modelling lmcache::bridge::NativeConnector (checked at compile time,
//                  each missing member named); spell a template specialisation with commas
//                  through an alias.
//   factory        optional: an expression callable with no arguments that returns a fresh
//                  std::unique_ptr<ConnectorType> (a function, or a lambda such as
//                  `[] { return std::make_unique<MyConnector>("10.0.0.5", 6379); }`); default
//                  std::make_unique<ConnectorType>(). See ConnectorFactory above.
// Use once per plugin, at namespace scope, instead of LMCACHE_CONFORMANCE_PLUGIN.
#define LMCACHE_CONFORMANCE_CONNECTOR(ConnectorType, ...)                                         \
  extern "C" __attribute__((visibility("default"))) const char* lmcache_conformance_connector_v2( \
      void) {                                                                                     \
    static const std::string name =                                                               \
        ::lmcache::conformance::connector_implementation_name(#ConnectorType);                    \
    return name.c_str();                                                                          \
  }                                                                                               \
  LMCACHE_CONFORMANCE_PLUGIN(lmcache_conformance_connector_registry) {                            \
    ::lmcache::conformance::register_native_connector<ConnectorType>(                             \
        lmcache_conformance_connector_registry, #ConnectorType __VA_OPT__(, ) __VA_ARGS__);       \
  }
