// File: lmcache/conformance/python/internal/python_task_object.h
//
// What the asynchronous Python implementations (a SerdeProcessor, an L2 adapter) share behind
// their C++ interfaces: the Python object; calls to its methods that turn a Python exception
// into the contract's C++ one (std::logic_error once closed: whatever a closed LMCache processor
// or adapter raises is the contract's refusal); the C++ objects each task's Python views point
// into, kept until its result is handed out; and a close() that runs once.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/conformance/python/internal/python_runtime.h"
#include "lmcache/core/completion_queue.h"
#include "lmcache/core/memory_obj.h"

namespace lmcache::conformance::python {

class PythonTaskObject {
 public:
  // The two kinds of task that hold objects: a store / serialize and a load / deserialize.
  enum class Held { kOut, kIn };

  explicit PythonTaskObject(PyRef object) : object_(std::move(object)) {}

  // call()
  //
  // object.method(args...); the caller holds the GIL. A Python exception becomes rethrow()'s,
  // or std::logic_error when close() ran before.
  template <class... Args>
  py::object call(const char* method, Args&&... args) const {
    try {
      return object_.get().attr(method)(std::forward<Args>(args)...);
    } catch (py::error_already_set& e) {
      rethrow(e, std::string("Python ") + method + "()", closed());
    }
  }

  // event_fd()
  //
  // method() as an fd (>= 0), taking the GIL.
  int event_fd(const char* method) const;

  // hold() / release()
  //
  // Keeps `objects` alive for task `id` of `kind` until release() (or close()).
  void hold(Held kind, TaskId id, std::vector<MemoryObjPtr> objects);
  void release(Held kind, TaskId id);

  // close()
  //
  // Calls the Python close() once, taking the GIL, then drops every held object. Later calls
  // do nothing; a Python exception is rethrown as rethrow()'s.
  void close();
  bool closed() const;

 private:
  PyRef object_;
  mutable std::mutex mu_;  // guards held_ and closed_
  std::map<TaskId, std::vector<MemoryObjPtr>> held_[2];
  bool closed_ = false;
};

}  // namespace lmcache::conformance::python
