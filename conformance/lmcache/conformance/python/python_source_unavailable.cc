// The build without python3-dev / pybind11-dev: --python says what is missing.
#include "lmcache/conformance/python/python_source.h"

#include <unistd.h>

namespace lmcache::conformance::python {

bool python_support_built() { return false; }

std::string start_interpreter() { return "this lmcache-conform was built without Python support"; }

pid_t fork_with_interpreter() { return fork(); }

std::string register_python_source(const std::string& spec, Registry&) {
  return "--python " + spec +
         ": this lmcache-conform was built without Python support (install python3-dev and "
         "pybind11-dev, scripts/deps.txt, and rebuild)";
}

}  // namespace lmcache::conformance::python
