#include "lmcache/conformance/python/internal/python_task_object.h"

#include "lmcache/conformance/python/internal/python_values.h"

namespace lmcache::conformance::python {

int PythonTaskObject::event_fd(const char* method) const {
  py::gil_scoped_acquire gil;
  return static_cast<int>(size_from_python(call(method), method));
}

void PythonTaskObject::hold(Held kind, TaskId id, std::vector<MemoryObjPtr> objects) {
  std::lock_guard lock(mu_);
  held_[static_cast<int>(kind)][id] = std::move(objects);
}

void PythonTaskObject::release(Held kind, TaskId id) {
  std::lock_guard lock(mu_);
  held_[static_cast<int>(kind)].erase(id);
}

bool PythonTaskObject::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void PythonTaskObject::close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  {
    py::gil_scoped_acquire gil;
    try {
      object_.get().attr("close")();
    } catch (py::error_already_set& e) {
      rethrow(e, "Python close()");
    }
  }
  // Results not handed out yet stay retrievable; what they wrote is no longer touched.
  std::lock_guard lock(mu_);
  for (auto& held : held_) held.clear();
}

}  // namespace lmcache::conformance::python
