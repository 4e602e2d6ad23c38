#include "plugin_loader.h"

#include <dlfcn.h>

#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/python/python_source.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/shadowed_adapter.h"

namespace lmcache::conformance::tools {

namespace {

// dlopen()s the plugin at `source` into `*handle`; returns why not, or "".
std::string open_plugin(const std::string& source, void** handle) {
  // RTLD_NOW: an unresolved symbol is a load error here, not a crash in the middle of a suite.
  *handle = dlopen(source.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (*handle == nullptr) {
    const char* err = dlerror();
    return "cannot load plugin '" + source + "': " + (err ? err : "unknown dlopen error");
  }
  return {};
}

// Runs the entry point of the plugin at `source`, loaded at `handle`, over `registry`.
std::string register_plugin(const std::string& source, void* handle, Registry& registry) {
  auto entry = reinterpret_cast<LmcacheConformancePluginV1Fn>(
      dlsym(handle, LMCACHE_CONFORMANCE_ENTRY_POINT_V2));
  if (entry == nullptr && dlsym(handle, LMCACHE_CONFORMANCE_ENTRY_POINT_V1) != nullptr) {
    return "plugin '" + source +
           "' exports " LMCACHE_CONFORMANCE_ENTRY_POINT_V1
           ": it was built against plugin ABI v1, whose serdes take no ObjectKey; rebuild it "
           "against ABI v" +
           std::to_string(LMCACHE_CONFORMANCE_ABI_VERSION);
  }
  if (entry == nullptr) {
    return "plugin '" + source +
           "' does not export " LMCACHE_CONFORMANCE_ENTRY_POINT_V2
           " (is it built with LMCACHE_CONFORMANCE_PLUGIN, against ABI v" +
           std::to_string(LMCACHE_CONFORMANCE_ABI_VERSION) + "?)";
  }
  char error[1024] = {0};
  LmcacheConformanceHostV1 host{};
  host.abi_version = LMCACHE_CONFORMANCE_ABI_VERSION;
  host.struct_size = sizeof(LmcacheConformanceHostV1);
  host.project_version = LMCACHE_CONFORMANCE_PROJECT_VERSION;
  host.registry = &registry;
  host.error = error;
  host.error_size = sizeof(error);
  int rc = entry(&host);
  if (rc == LMCACHE_CONFORMANCE_OK) return {};
  std::string why = error[0] ? error : "no reason given";
  if (rc == LMCACHE_CONFORMANCE_E_VERSION) {
    return "plugin '" + source + "' is incompatible with this runner: " + why;
  }
  return "plugin '" + source + "' failed to register its implementations (code " +
         std::to_string(rc) + "): " + why;
}

std::string load_connector_plugin(const std::string& source, Registry& registry) {
  void* handle = nullptr;
  if (std::string e = open_plugin(source, &handle); !e.empty()) return e;
  auto marker = reinterpret_cast<LmcacheConformanceConnectorNameFn>(
      dlsym(handle, LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2));
  const char* name = marker != nullptr ? marker() : nullptr;
  if (name == nullptr || *name == '\0') {
    // Not a plugin of this ABI at all: say that first.
    if (dlsym(handle, LMCACHE_CONFORMANCE_ENTRY_POINT_V2) == nullptr) {
      return register_plugin(source, handle, registry);
    }
    return "plugin '" + source +
           "' registers no native connector: it does not "
           "export " LMCACHE_CONFORMANCE_CONNECTOR_SYMBOL_V2
           " (build it with LMCACHE_CONFORMANCE_CONNECTOR, lmcache/conformance/connector_plugin.h; "
           "load plugins of other implementations with --plugin)";
  }
  if (std::string e = register_plugin(source, handle, registry); !e.empty()) return e;
  if (!registry.contains(ImplementationKind::kAdapter, name)) {
    return "plugin '" + source + "' names its native connector '" + name +
           "' but registered no adapter of that name";
  }
  // The wrapper suite over the connector: the reference fp8 wrapper with the bridge live below
  // the kit's scripted inner double, the kit's mock as its shadow (as --adapter does for a
  // config with a serde), so every store, lookup and load of the wrapper properties reaches the
  // connector.
  std::function<L2AdapterPtr()> make_bridge;
  for (const AdapterUnderTest& a : registry.adapters()) {
    if (a.name == name) make_bridge = a.make;
  }
  WrapperUnderTest wrapper = reference_serde_wrapper();
  wrapper.name = std::string(name) + "_fp8_wrapper";
  wrapper.decorate_inner = [make_bridge](L2AdapterPtr mock) -> L2AdapterPtr {
    return std::make_unique<storage_testing::ShadowedAdapter>(make_bridge(), std::move(mock));
  };
  try {
    registry.add_wrapper(std::move(wrapper));
  } catch (const std::exception& e) {
    return "plugin '" + source +
           "': registering the wrapper suite over its connector failed: " + e.what();
  }
  return {};
}

}  // namespace

std::string load_source(const std::string& source, Registry& registry) {
  if (source == kReferenceSource) {
    try {
      register_reference_implementations(registry);
    } catch (const std::exception& e) {
      return std::string("registering the reference implementations failed: ") + e.what();
    }
    return {};
  }
  if (python::is_python_source(source)) {
    return python::register_python_source(
        source.substr(std::string_view(python::kPythonSourcePrefix).size()), registry);
  }
  if (source.rfind(kConnectorPluginPrefix, 0) == 0) {
    return load_connector_plugin(source.substr(std::string_view(kConnectorPluginPrefix).size()),
                                 registry);
  }
  void* handle = nullptr;
  if (std::string e = open_plugin(source, &handle); !e.empty()) return e;
  return register_plugin(source, handle, registry);
}

std::string register_connector_plugin_adapter_type(const std::string& path,
                                                   const std::string& type_name,
                                                   std::string* name) {
  // The registered factory copies the plugin's; the plugin is never unloaded.
  Registry loaded;
  if (std::string e = load_source(std::string(kConnectorPluginPrefix) + path, loaded); !e.empty()) {
    return e;
  }
  // The plugin registers the bare bridge first, then the bridge below the fp8 wrapper.
  const AdapterUnderTest& bare = loaded.adapters().front();
  if (name != nullptr) *name = bare.name;
  try {
    register_l2_adapter_type(
        type_name,
        [make = bare.make, type_name](const Json& config, const AdapterContext&) -> L2AdapterPtr {
          if (!config.empty()) {
            throw std::invalid_argument("L2 adapter type '" + type_name +
                                        "' (a connector plugin) takes no "
                                        "config, got " +
                                        config.dump());
          }
          return make();
        });
  } catch (const std::exception& e) {
    return std::string("--connector-plugin: ") + e.what();
  }
  return {};
}

}  // namespace lmcache::conformance::tools
