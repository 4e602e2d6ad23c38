// File: lmcache/conformance/python/python_source.h
//
// `lmcache-conform --python MODULE:FACTORY`: implementations written in Python to LMCache's
// Python interfaces, registered with the kit like a plugin's (docs/python.md). The factory is
// called for every fresh instance the suites build; what it returns says what it is:
//   - a (Serializer, Deserializer) pair, or one object with serialize / deserialize /
//     estimate_serialized_size: a serde "<name>", and the processor "<name>_async" (the kit's
//     Python AsyncSerdeProcessor over the pair, the way LMCache runs a serde);
//   - a SerdeProcessor (submit_serialize ...): a processor "<name>";
//   - an L2 adapter (submit_store_task ...): an adapter "<name>" (AdapterConformance).
// What the implementation claims (the reference config it mirrors, dtypes, bounds, integrity)
// comes from lmcache_conformance.declare() on the factory.
#pragma once

#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::python {

// The source prefix the runner gives a --python spec (the spec follows it).
inline constexpr const char* kPythonSourcePrefix = "python:";

// register_python_source()
//
// Starts the embedded interpreter (once per process), imports the factory of `spec`
// ("module.path:factory" or "path/to/file.py:factory"), calls it once to learn its kind and adds
// the implementations above to `registry`. Returns "" on success, else why not (the Python
// exception and the last frames of its traceback, an unknown kind, a bad claim).
std::string register_python_source(const std::string& spec, Registry& registry);

// python_support_built()
//
// Whether this build embeds Python (CMake found python3-dev and pybind11-dev).
bool python_support_built();

}  // namespace lmcache::conformance::python
