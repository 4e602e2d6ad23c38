#include "lmcache/conformance/python/internal/python_adapter.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/conformance/python/internal/python_values.h"

namespace lmcache::conformance::python {
namespace {

std::vector<ObjectKey> keys_from_python(const py::handle& keys) {
  std::vector<ObjectKey> out;
  for (const py::handle& k : keys) out.push_back(key_from_python(k));
  return out;
}

std::vector<std::uint64_t> sizes_from_python(const py::handle& sizes) {
  std::vector<std::uint64_t> out;
  if (sizes.is_none()) return out;
  for (const py::handle& s : sizes) {
    out.push_back(size_from_python(py::reinterpret_borrow<py::object>(s), "a listener's size"));
  }
  return out;
}

}  // namespace

PythonL2Adapter::~PythonL2Adapter() {
  // No Python worker may outlive the objects it holds views of.
  try {
    close();
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

int PythonL2Adapter::get_store_event_fd() const { return adapter_.event_fd("get_store_event_fd"); }
int PythonL2Adapter::get_lookup_and_lock_event_fd() const {
  return adapter_.event_fd("get_lookup_and_lock_event_fd");
}
int PythonL2Adapter::get_load_event_fd() const { return adapter_.event_fd("get_load_event_fd"); }

TaskId PythonL2Adapter::submit(const char* method, const std::vector<ObjectKey>& keys,
                               const std::vector<MemoryObjPtr>& objects,
                               PythonTaskObject::Held kind) {
  TaskId id = 0;
  {
    py::gil_scoped_acquire gil;
    id = size_from_python(adapter_.call(method, to_python(keys), to_python(objects)), method);
  }
  adapter_.hold(kind, id, objects);
  return id;
}

TaskId PythonL2Adapter::submit_store_task(const std::vector<ObjectKey>& keys,
                                          const std::vector<MemoryObjPtr>& objects) {
  return submit("submit_store_task", keys, objects, PythonTaskObject::Held::kOut);
}

std::map<TaskId, L2StoreResult> PythonL2Adapter::pop_completed_store_tasks() {
  std::map<TaskId, L2StoreResult> out;
  {
    py::gil_scoped_acquire gil;
    py::object done = adapter_.call("pop_completed_store_tasks");
    if (!py::isinstance<py::dict>(done)) {
      throw std::runtime_error("pop_completed_store_tasks() returned " +
                               py::repr(done).cast<std::string>() + ", not a dict");
    }
    for (const auto& [id, result] : py::reinterpret_borrow<py::dict>(done)) {
      const TaskId task =
          size_from_python(py::reinterpret_borrow<py::object>(id), "pop_completed_store_tasks()");
      // LMCache's L2StoreResult is an int: the bytes transferred, or -1 for a failure.
      const long long value = result.cast<long long>();
      out.emplace(task, value >= 0 ? L2StoreResult::success(static_cast<std::uint64_t>(value))
                                   : L2StoreResult::failure());
    }
  }
  for (const auto& [id, result] : out) adapter_.release(PythonTaskObject::Held::kOut, id);
  return out;
}

TaskId PythonL2Adapter::submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) {
  py::gil_scoped_acquire gil;
  return size_from_python(adapter_.call("submit_lookup_and_lock_task", to_python(keys)),
                          "submit_lookup_and_lock_task");
}

std::optional<Bitmap> PythonL2Adapter::query_lookup_and_lock_result(TaskId id) {
  py::gil_scoped_acquire gil;
  py::object r = adapter_.call("query_lookup_and_lock_result", id);
  if (r.is_none()) return std::nullopt;
  return bitmap_from_python(r);
}

void PythonL2Adapter::submit_unlock(const std::vector<ObjectKey>& keys) {
  py::gil_scoped_acquire gil;
  adapter_.call("submit_unlock", to_python(keys));
}

TaskId PythonL2Adapter::submit_load_task(const std::vector<ObjectKey>& keys,
                                         const std::vector<MemoryObjPtr>& objects) {
  return submit("submit_load_task", keys, objects, PythonTaskObject::Held::kIn);
}

std::optional<Bitmap> PythonL2Adapter::query_load_result(TaskId id) {
  std::optional<Bitmap> out;
  {
    py::gil_scoped_acquire gil;
    py::object r = adapter_.call("query_load_result", id);
    if (r.is_none()) return std::nullopt;
    out = bitmap_from_python(r);
  }
  adapter_.release(PythonTaskObject::Held::kIn, id);
  return out;
}

void PythonL2Adapter::delete_keys(const std::vector<ObjectKey>& keys) {
  py::gil_scoped_acquire gil;
  adapter_.call("delete", to_python(keys));
}

AdapterUsage PythonL2Adapter::get_usage() const {
  py::gil_scoped_acquire gil;
  py::object u = adapter_.call("get_usage");
  AdapterUsage out;
  try {
    out.total_bytes_used = u.attr("total_bytes_used").cast<std::uint64_t>();
    out.total_capacity_bytes = u.attr("total_capacity_bytes").cast<std::uint64_t>();
    for (const auto& [salt, bytes] : py::dict(u.attr("bytes_by_cache_salt"))) {
      PyObject* b = PyUnicode_AsEncodedString(salt.ptr(), "utf-8", "surrogateescape");
      if (b == nullptr) throw py::error_already_set();
      out.bytes_by_cache_salt[py::reinterpret_steal<py::bytes>(b).cast<std::string>()] =
          bytes.cast<std::uint64_t>();
    }
  } catch (const py::cast_error& e) {
    throw std::runtime_error("get_usage() returned " + py::repr(u).cast<std::string>() +
                             ", not an AdapterUsage: " + e.what());
  } catch (py::error_already_set& e) {
    rethrow(e, "Python get_usage()");
  }
  return out;
}

bool PythonL2Adapter::supports_global_eviction() const {
  py::gil_scoped_acquire gil;
  return adapter_.call("supports_global_eviction").cast<bool>();
}

void PythonL2Adapter::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  if (!listener) throw std::invalid_argument("register_listener: null listener");
  py::gil_scoped_acquire gil;
  // Each callback converts its arguments, then calls the C++ listener without the GIL: a
  // listener may take locks a thread waiting for the GIL holds.
  py::cpp_function stored([listener](py::object keys, py::object sizes) {
    auto k = keys_from_python(keys);
    auto s = sizes_from_python(sizes);
    py::gil_scoped_release unlocked;
    listener->on_l2_keys_stored(k, s);
  });
  py::cpp_function accessed([listener](py::object keys) {
    auto k = keys_from_python(keys);
    py::gil_scoped_release unlocked;
    listener->on_l2_keys_accessed(k);
  });
  py::cpp_function deleted(
      [listener](py::object keys, py::object sizes) {
        auto k = keys_from_python(keys);
        auto s = sizes_from_python(sizes);
        py::gil_scoped_release unlocked;
        listener->on_l2_keys_deleted(k, s);
      },
      py::arg("keys"), py::arg("sizes") = py::none());
  adapter_.call("register_listener", bridge().attr("listener")(stored, accessed, deleted));
}

Json PythonL2Adapter::report_status() const {
  py::gil_scoped_acquire gil;
  py::object status = adapter_.call("report_status");
  try {
    return Json::parse(bridge().attr("to_json")(status).cast<std::string>());
  } catch (py::error_already_set& e) {
    rethrow(e, "report_status()");
  }
}

void PythonL2Adapter::close() { adapter_.close(); }

}  // namespace lmcache::conformance::python
