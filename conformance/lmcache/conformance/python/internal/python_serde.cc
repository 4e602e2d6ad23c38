#include "lmcache/conformance/python/internal/python_serde.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/conformance/python/internal/python_values.h"

namespace lmcache::conformance::python {
std::size_t PythonSerializer::serialize(const MemoryObj& src, MemoryObj& dst,
                                        const ObjectKey& key) {
  py::gil_scoped_acquire gil;
  try {
    // The view of src is writable (Python has no read-only tensors to hand over); the kit's
    // properties check that the source is left as it was.
    py::object n = serializer_.get().attr("serialize")(to_python(const_cast<MemoryObj&>(src)),
                                                       to_python(dst), to_python(key));
    return size_from_python(n, "serialize()");
  } catch (py::error_already_set& e) {
    rethrow(e, "Python serialize()");
  }
}

std::size_t PythonSerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  py::gil_scoped_acquire gil;
  try {
    return size_from_python(serializer_.get().attr("estimate_serialized_size")(to_python(layout)),
                            "estimate_serialized_size()");
  } catch (py::error_already_set& e) {
    rethrow(e, "Python estimate_serialized_size()");
  }
}

void PythonDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  py::gil_scoped_acquire gil;
  try {
    deserializer_.get().attr("deserialize")(to_python(const_cast<MemoryObj&>(src)), to_python(dst),
                                            to_python(key));
  } catch (py::error_already_set& e) {
    rethrow(e, "Python deserialize()");
  }
}

PythonSerdeProcessor::~PythonSerdeProcessor() {
  // LMCache's owner closes the processor; a destructor that runs first closes it here, so that
  // no Python worker outlives the objects it holds views of.
  try {
    close();
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

TaskId PythonSerdeProcessor::submit(const char* method, std::vector<MemoryObjPtr> srcs,
                                    std::vector<MemoryObjPtr> dsts,
                                    const std::vector<ObjectKey>& keys,
                                    PythonTaskObject::Held kind) {
  TaskId id = 0;
  {
    py::gil_scoped_acquire gil;
    id = size_from_python(
        processor_.call(method, to_python(srcs), to_python(dsts), to_python(keys)), method);
  }
  srcs.insert(srcs.end(), dsts.begin(), dsts.end());
  processor_.hold(kind, id, std::move(srcs));
  return id;
}

std::optional<bool> PythonSerdeProcessor::query(const char* method, TaskId id,
                                                PythonTaskObject::Held kind) {
  std::optional<bool> result;
  {
    py::gil_scoped_acquire gil;
    py::object r = processor_.call(method, id);
    if (r.is_none()) return std::nullopt;
    if (!py::isinstance<py::bool_>(r)) {
      throw std::runtime_error(std::string(method) + "() returned " +
                               py::repr(r).cast<std::string>() + ", not True, False or None");
    }
    result = r.cast<bool>();
  }
  processor_.release(kind, id);
  return result;
}

TaskId PythonSerdeProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                              std::vector<MemoryObjPtr> dsts,
                                              std::vector<ObjectKey> keys) {
  return submit("submit_serialize", std::move(srcs), std::move(dsts), keys,
                PythonTaskObject::Held::kOut);
}

std::optional<bool> PythonSerdeProcessor::query_serialize_result(TaskId id) {
  return query("query_serialize_result", id, PythonTaskObject::Held::kOut);
}

int PythonSerdeProcessor::get_serialize_event_fd() const {
  return processor_.event_fd("get_serialize_event_fd");
}

TaskId PythonSerdeProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                                std::vector<MemoryObjPtr> dsts,
                                                std::vector<ObjectKey> keys) {
  return submit("submit_deserialize", std::move(srcs), std::move(dsts), keys,
                PythonTaskObject::Held::kIn);
}

std::optional<bool> PythonSerdeProcessor::query_deserialize_result(TaskId id) {
  return query("query_deserialize_result", id, PythonTaskObject::Held::kIn);
}

int PythonSerdeProcessor::get_deserialize_event_fd() const {
  return processor_.event_fd("get_deserialize_event_fd");
}

std::size_t PythonSerdeProcessor::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  py::gil_scoped_acquire gil;
  return size_from_python(processor_.call("estimate_serialized_size", to_python(layout)),
                          "estimate_serialized_size()");
}

void PythonSerdeProcessor::close() { processor_.close(); }

}  // namespace lmcache::conformance::python
