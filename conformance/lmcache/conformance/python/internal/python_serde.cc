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
                                    std::map<TaskId, Held>& held) {
  Held kept{std::move(srcs), std::move(dsts)};
  TaskId id = 0;
  {
    py::gil_scoped_acquire gil;
    try {
      py::object r = processor_.get().attr(method)(to_python(kept.srcs), to_python(kept.dsts),
                                                   to_python(keys));
      id = size_from_python(r, method);
    } catch (py::error_already_set& e) {
      bool closed = false;
      {
        std::lock_guard lock(mu_);
        closed = closed_;
      }
      // LMCache's processors raise whatever their pool raises once closed: that is the
      // contract's refusal of a submit after close (std::logic_error).
      if (closed) {
        try {
          rethrow(e, std::string("Python ") + method + "() after close()");
        } catch (const std::exception& refused) {
          throw std::logic_error(refused.what());
        }
      }
      rethrow(e, std::string("Python ") + method + "()");
    }
  }
  std::lock_guard lock(mu_);
  held[id] = std::move(kept);
  return id;
}

std::optional<bool> PythonSerdeProcessor::query(const char* method, TaskId id,
                                                std::map<TaskId, Held>& held) {
  std::optional<bool> result;
  {
    py::gil_scoped_acquire gil;
    try {
      py::object r = processor_.get().attr(method)(id);
      if (!r.is_none()) {
        if (!py::isinstance<py::bool_>(r)) {
          throw std::runtime_error(std::string(method) + "() returned " +
                                   py::repr(r).cast<std::string>() + ", not True, False or None");
        }
        result = r.cast<bool>();
      }
    } catch (py::error_already_set& e) {
      rethrow(e, std::string("Python ") + method + "()");
    }
  }
  if (result) {
    std::lock_guard lock(mu_);
    held.erase(id);
  }
  return result;
}

int PythonSerdeProcessor::event_fd(const char* method) const {
  py::gil_scoped_acquire gil;
  try {
    py::object fd = processor_.get().attr(method)();
    return static_cast<int>(size_from_python(fd, method));
  } catch (py::error_already_set& e) {
    rethrow(e, std::string("Python ") + method + "()");
  }
}

TaskId PythonSerdeProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                              std::vector<MemoryObjPtr> dsts,
                                              std::vector<ObjectKey> keys) {
  return submit("submit_serialize", std::move(srcs), std::move(dsts), keys, serialize_held_);
}

std::optional<bool> PythonSerdeProcessor::query_serialize_result(TaskId id) {
  return query("query_serialize_result", id, serialize_held_);
}

int PythonSerdeProcessor::get_serialize_event_fd() const {
  return event_fd("get_serialize_event_fd");
}

TaskId PythonSerdeProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                                std::vector<MemoryObjPtr> dsts,
                                                std::vector<ObjectKey> keys) {
  return submit("submit_deserialize", std::move(srcs), std::move(dsts), keys, deserialize_held_);
}

std::optional<bool> PythonSerdeProcessor::query_deserialize_result(TaskId id) {
  return query("query_deserialize_result", id, deserialize_held_);
}

int PythonSerdeProcessor::get_deserialize_event_fd() const {
  return event_fd("get_deserialize_event_fd");
}

std::size_t PythonSerdeProcessor::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  py::gil_scoped_acquire gil;
  try {
    return size_from_python(processor_.get().attr("estimate_serialized_size")(to_python(layout)),
                            "estimate_serialized_size()");
  } catch (py::error_already_set& e) {
    rethrow(e, "Python estimate_serialized_size()");
  }
}

void PythonSerdeProcessor::close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  {
    py::gil_scoped_acquire gil;
    try {
      processor_.get().attr("close")();
    } catch (py::error_already_set& e) {
      rethrow(e, "Python close()");
    }
  }
  std::lock_guard lock(mu_);
  serialize_held_.clear();
  deserialize_held_.clear();
}

}  // namespace lmcache::conformance::python
