#include "plugin_loader.h"

#include <dlfcn.h>

#include <exception>

#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/reference_impls.h"

namespace lmcache::conformance::tools {

std::string load_source(const std::string& source, Registry& registry) {
  if (source == kReferenceSource) {
    try {
      register_reference_implementations(registry);
    } catch (const std::exception& e) {
      return std::string("registering the reference implementations failed: ") + e.what();
    }
    return {};
  }
  // RTLD_NOW: an unresolved symbol is a load error here, not a crash in the middle of a suite.
  void* handle = dlopen(source.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return "cannot load plugin '" + source + "': " + (err ? err : "unknown dlopen error");
  }
  auto entry = reinterpret_cast<LmcacheConformancePluginV1Fn>(
      dlsym(handle, LMCACHE_CONFORMANCE_ENTRY_POINT_V1));
  if (entry == nullptr) {
    return "plugin '" + source +
           "' does not export " LMCACHE_CONFORMANCE_ENTRY_POINT_V1
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

}  // namespace lmcache::conformance::tools
