#include "lmcache/conformance/python/internal/python_values.h"

#include <stdexcept>
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

std::size_t size_from_python(const py::object& value, const char* what) {
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
    throw std::runtime_error(std::string(what) + " returned " +
                             py::repr(value).cast<std::string>() + ", not an int");
  }
  const long long n = value.cast<long long>();
  if (n < 0) {
    throw std::runtime_error(std::string(what) + " returned " + std::to_string(n) +
                             ", a negative size");
  }
  return static_cast<std::size_t>(n);
}

py::list to_python(const std::vector<ObjectKey>& keys) {
  py::list out;
  for (const auto& k : keys) out.append(to_python(k));
  return out;
}

py::list to_python(const std::vector<MemoryObjPtr>& objects) {
  py::list out;
  for (const auto& o : objects) {
    if (!o) throw std::invalid_argument("null MemoryObj in a batch");
    out.append(to_python(*o));
  }
  return out;
}

namespace {

std::string bytes_of(const py::handle& s, const char* field) {
  if (py::isinstance<py::bytes>(s)) return s.cast<std::string>();
  if (!py::isinstance<py::str>(s)) {
    throw std::runtime_error(std::string("ObjectKey.") + field + " is " +
                             py::repr(s).cast<std::string>() + ", not str or bytes");
  }
  PyObject* b = PyUnicode_AsEncodedString(s.ptr(), "utf-8", "surrogateescape");
  if (b == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::bytes>(b).cast<std::string>();
}

}  // namespace

ObjectKey key_from_python(const py::handle& key) {
  try {
    return ObjectKey(bytes_of(key.attr("chunk_hash"), "chunk_hash"),
                     bytes_of(key.attr("model_name"), "model_name"),
                     key.attr("kv_rank").cast<std::int64_t>(),
                     key.attr("object_group_id").cast<std::int64_t>(),
                     bytes_of(key.attr("cache_salt"), "cache_salt"));
  } catch (const py::cast_error& e) {
    throw std::runtime_error(std::string("not an ObjectKey: ") + e.what());
  }
}

Bitmap bitmap_from_python(const py::handle& bitmap) {
  std::size_t size = 0;
  if (py::hasattr(bitmap, "__len__")) {
    size = py::len(bitmap);
  } else if (py::hasattr(bitmap, "size")) {
    size = bitmap.attr("size")().cast<std::size_t>();
  } else {
    throw std::runtime_error("a result of " + py::repr(bitmap).cast<std::string>() +
                             ", not a Bitmap");
  }
  Bitmap out(size);
  for (const py::handle& i : bitmap.attr("get_indices_list")()) {
    const auto bit = i.cast<long long>();
    if (bit < 0 || static_cast<std::size_t>(bit) >= size) {
      throw std::runtime_error("Bitmap index " + std::to_string(bit) + " outside its size " +
                               std::to_string(size));
    }
    out.set(static_cast<std::size_t>(bit));
  }
  return out;
}

}  // namespace lmcache::conformance::python
