// File: lmcache/conformance/python/internal/python_values.h
//
// The kit's values as the Python objects a Python implementation receives (the mirrored types of
// lmcache_conformance, docs/python.md). A MemoryObj is a view of the kit's buffer, never a copy:
// valid while the C++ object lives, which the caller guarantees for the length of the call (or of
// the processor task). All functions need the GIL.
#pragma once

#include <vector>
#include "lmcache/conformance/python/internal/python_runtime.h"

#include "lmcache/core/bitmap.h"
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

// A Python int >= 0 as a size; std::runtime_error "<what> returned X, not an int" otherwise.
std::size_t size_from_python(const py::object& value, const char* what);

// A list of ObjectKeys / MemoryObjs as a Python list (the objects must outlive its use).
py::list to_python(const std::vector<ObjectKey>& keys);
py::list to_python(const std::vector<MemoryObjPtr>& objects);

// The C++ ObjectKey of a Python one (any object with LMCache's five fields; strings back to the
// bytes they were decoded from, surrogateescape). Throws std::runtime_error naming what is wrong.
ObjectKey key_from_python(const py::handle& key);

// The C++ Bitmap of a Python one (LMCache's: len() or size(), get_indices_list()).
Bitmap bitmap_from_python(const py::handle& bitmap);

}  // namespace lmcache::conformance::python
