#include "lmcache/conformance/python/internal/python_values.h"

#include <string>

#include "lmcache/core/dtype.h"

namespace lmcache::conformance::python {

py::object to_python(const MemoryLayoutDesc& layout) {
  py::list shapes;
  py::list dtypes;
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    py::list shape;
    for (auto d : layout.shapes()[g]) shape.append(d);
    shapes.append(shape);
    dtypes.append(std::string(dtype_name(layout.dtypes()[g])));
  }
  return bridge().attr("layout")(shapes, dtypes);
}

namespace {

// The kit's key strings are bytes (the C++ contract's); LMCache's are str. Bytes that are not
// UTF-8 arrive as lone surrogates (errors="surrogateescape"), so that nothing is lost and
// s.encode("utf-8", "surrogateescape") gives them back (docs/python.md).
py::str to_str(const std::string& bytes) {
  PyObject* s =
      PyUnicode_DecodeUTF8(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), "surrogateescape");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace

py::object to_python(const ObjectKey& key) {
  return bridge().attr("object_key")(py::bytes(key.chunk_hash()), to_str(key.model_name()),
                                     key.kv_rank(), key.object_group_id(),
                                     to_str(key.cache_salt()));
}

py::object to_python(MemoryObj& obj) {
  // A zero-length memoryview cannot be made from a null pointer: point it at a static byte.
  static char empty = 0;
  char* data = obj.physical_size() ? reinterpret_cast<char*>(obj.data()) : &empty;
  py::memoryview view =
      py::memoryview::from_memory(data, static_cast<py::ssize_t>(obj.physical_size()),
                                  /*readonly=*/false);
  MemoryObj* target = &obj;
  py::cpp_function narrow([target](std::size_t n) { target->set_used_size(n); });
  return bridge().attr("memory_obj")(view, to_python(obj.layout()), obj.size(), narrow);
}

}  // namespace lmcache::conformance::python
