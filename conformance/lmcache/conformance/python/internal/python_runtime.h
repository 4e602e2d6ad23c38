// File: lmcache/conformance/python/internal/python_runtime.h
//
// The embedded CPython interpreter behind `lmcache-conform --python`: started once per process,
// with the kit's package (conformance/python/lmcache_conformance) importable, and the GIL released
// between calls so that any kit thread can take it. Never finalized: the runner's child processes
// end with the interpreter still up (torch's teardown at finalization is not safe to rely on).
#pragma once

#include <pybind11/embed.h>

#include <string>
#include <string_view>

namespace lmcache::conformance::python {

namespace py = pybind11;

// ensure_interpreter()
//
// Starts the interpreter when it is not running (thread-safe), puts the kit's package on
// sys.path and returns with the GIL released. Throws std::runtime_error when Python cannot start
// or the package cannot be imported (the message says where it was looked for).
void ensure_interpreter();

// bridge()
//
// The kit's helper module lmcache_conformance._bridge. The caller holds the GIL.
py::module_ bridge();

// rethrow()
//
// Turns a Python exception into the C++ exception the lmcache interfaces use: ValueError (what
// LMCache raises for a short buffer or a bad layout) becomes std::invalid_argument, anything else
// std::runtime_error, and anything at all std::logic_error when `closed` (the implementation was
// closed before the call: the contract's refusal). The message is "<what>: <ExceptionType>:
// <text>" followed by the last frames of the Python traceback. The caller holds the GIL.
[[noreturn]] void rethrow(py::error_already_set& error, std::string_view what, bool closed = false);

// PyRef
//
// An owned reference to a Python object that may be copied and destroyed on any thread, with or
// without the GIL (it takes the GIL to drop the reference). The kit's descriptors and adapters
// hold Python objects through it.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(py::object object);  // GIL held
  PyRef(const PyRef& other);
  PyRef& operator=(const PyRef& other);
  ~PyRef();

  // The object; the caller holds the GIL.
  const py::object& get() const { return object_; }

 private:
  void reset();
  py::object object_;
};

}  // namespace lmcache::conformance::python
