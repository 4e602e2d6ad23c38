#include "lmcache/bench/plugin_loader.h"

#include <stdexcept>

#include "tools/plugin_loader.h"  // conformance/tools: the conformance runner's loader

namespace lmcache::bench {

std::size_t load_conformance_plugin(const std::string& path, conformance::Registry& registry) {
  const std::size_t before = registry.size();
  const std::string error = conformance::tools::load_source(path, registry);
  if (!error.empty()) throw std::runtime_error("--plugin: " + error);
  return registry.size() - before;
}

}  // namespace lmcache::bench
