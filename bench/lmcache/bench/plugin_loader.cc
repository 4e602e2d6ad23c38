#include "lmcache/bench/plugin_loader.h"

#include <stdexcept>

#include "lmcache/conformance/python/python_source.h"
#include "tools/plugin_loader.h"  // conformance/tools: the conformance runner's loader

namespace lmcache::bench {

std::size_t load_conformance_plugin(const std::string& path, conformance::Registry& registry) {
  const std::size_t before = registry.size();
  const std::string error = conformance::tools::load_source(path, registry);
  if (!error.empty()) {
    // A --python source's error already names its option.
    const bool python = path.rfind(conformance::python::kPythonSourcePrefix, 0) == 0;
    throw std::runtime_error(python ? error : "--plugin: " + error);
  }
  return registry.size() - before;
}

}  // namespace lmcache::bench
