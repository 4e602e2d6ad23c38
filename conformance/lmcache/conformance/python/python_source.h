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

#include <sys/types.h>

#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::python {

// The source prefix the runner gives a --python spec (the spec follows it).
inline constexpr const char* kPythonSourcePrefix = "python:";

// Whether the runner's `source` is a --python spec.
inline bool is_python_source(const std::string& source) {
  return source.rfind(kPythonSourcePrefix, 0) == 0;
}

// register_python_source()
//
// Starts the embedded interpreter (once per process), imports the factory of `spec`
// ("module.path:factory" or "path/to/file.py:factory"), calls it once to learn its kind and adds
// the implementations above to `registry`. Returns "" on success, else why not (the Python
// exception and the last frames of its traceback, an unknown kind, a bad claim).
std::string register_python_source(const std::string& spec, Registry& registry);

// start_interpreter()
//
// Starts the embedded interpreter and imports the kit's package (torch with it), as
// register_python_source() does first, without loading any implementation: what the runner's
// fork server (conformance/tools/fork_server.h) does once, so that each property's process
// forked from it starts with Python already up. "" on success, else why not.
std::string start_interpreter();

// fork_with_interpreter()
//
// fork(), with the embedded interpreter's fork hooks around it when it runs (PyOS_BeforeFork,
// then PyOS_AfterFork_Child or _Parent, the GIL held, as os.fork() does), so that the new
// process can go on using an interpreter started before the fork. Returns what fork() returns.
pid_t fork_with_interpreter();

// python_support_built()
//
// Whether this build embeds Python (CMake found python3-dev and pybind11-dev).
bool python_support_built();

}  // namespace lmcache::conformance::python
