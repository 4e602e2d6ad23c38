// File: lmcache/conformance/python/internal/python_adapter.h
//
// L2AdapterInterface (l2/l2_adapter.h) over a Python adapter written to LMCache's interface
// (lmcache_conformance.L2AdapterInterface: submit_store_task(keys, objects) -> id,
// pop_completed_store_tasks(), lookup / unlock / load, its three event fds, delete(keys),
// get_usage(), register_listener(), report_status(), close()). Each call takes the GIL for its
// Python part only; listeners are called back without it. The C++ objects of a store or load are
// kept alive until its result has been handed out (or close()), since the Python side holds views.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "lmcache/conformance/python/internal/python_task_object.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::conformance::python {

class PythonL2Adapter final : public L2AdapterInterface {
 public:
  explicit PythonL2Adapter(PyRef adapter) : adapter_(std::move(adapter)) {}
  ~PythonL2Adapter() override;

  int get_store_event_fd() const override;
  int get_lookup_and_lock_event_fd() const override;
  int get_load_event_fd() const override;
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override;
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override;
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override;
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override;
  void submit_unlock(const std::vector<ObjectKey>& keys) override;
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override;
  std::optional<Bitmap> query_load_result(TaskId id) override;
  void delete_keys(const std::vector<ObjectKey>& keys) override;
  AdapterUsage get_usage() const override;
  bool supports_global_eviction() const override;
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override;
  Json report_status() const override;
  void close() override;

 private:
  TaskId submit(const char* method, const std::vector<ObjectKey>& keys,
                const std::vector<MemoryObjPtr>& objects, PythonTaskObject::Held kind);

  PythonTaskObject adapter_;
};

}  // namespace lmcache::conformance::python
