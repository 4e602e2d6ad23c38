// File: lmcache/conformance/python/internal/python_values.h
//
// The kit's values as the Python objects a Python implementation receives (the mirrored types of
// lmcache_conformance, docs/python.md). A MemoryObj is a view of the kit's buffer, never a copy:
// valid while the C++ object lives, which the caller guarantees for the length of the call (or of
// the processor task). All functions need the GIL.
#pragma once

#include "lmcache/conformance/python/internal/python_runtime.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::conformance::python {

// lmcache_conformance.MemoryLayoutDesc of `layout` (float8 groups named by string, see dtypes.py).
py::object to_python(const MemoryLayoutDesc& layout);

// lmcache_conformance.ObjectKey with every field of `key`.
py::object to_python(const ObjectKey& key);

// lmcache_conformance.MemoryObj over `obj`'s physical bytes, its used size, and a
// set_used_size() that narrows `obj` itself. `obj` must outlive every use of the result.
py::object to_python(MemoryObj& obj);

}  // namespace lmcache::conformance::python
