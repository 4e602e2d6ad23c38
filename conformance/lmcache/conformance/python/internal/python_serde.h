// File: lmcache/conformance/python/internal/python_serde.h
//
// The lmcache serde interfaces (serde/serializer.h, serde/serde_processor.h) over Python objects
// written to LMCache's Python interfaces. Each call takes the GIL for the Python part only; a
// Python exception becomes the C++ exception of the contract (python_runtime.h: rethrow()).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "lmcache/conformance/python/internal/python_runtime.h"
#include "lmcache/conformance/python/internal/python_task_object.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::conformance::python {

// A Python Serializer: serialize(src, dst, key) -> int, estimate_serialized_size(layout) -> int.
class PythonSerializer final : public Serializer {
 public:
  explicit PythonSerializer(PyRef serializer) : serializer_(std::move(serializer)) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

 private:
  PyRef serializer_;
};

// A Python Deserializer: deserialize(src, dst, key) -> None.
class PythonDeserializer final : public Deserializer {
 public:
  explicit PythonDeserializer(PyRef deserializer) : deserializer_(std::move(deserializer)) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

 private:
  PyRef deserializer_;
};

// A Python SerdeProcessor (LMCache's: submit_* -> id, query_*_result(id) -> True/False/None, its
// own event fds, close()). The C++ objects of a task are kept alive until its result is taken
// (or close()), since the Python side holds views of them.
class PythonSerdeProcessor final : public SerdeProcessor {
 public:
  explicit PythonSerdeProcessor(PyRef processor) : processor_(std::move(processor)) {}
  ~PythonSerdeProcessor() override;

  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override;
  std::optional<bool> query_serialize_result(TaskId id) override;
  int get_serialize_event_fd() const override;
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override;
  std::optional<bool> query_deserialize_result(TaskId id) override;
  int get_deserialize_event_fd() const override;
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;
  void close() override;

 private:
  TaskId submit(const char* method, std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                const std::vector<ObjectKey>& keys, PythonTaskObject::Held kind);
  std::optional<bool> query(const char* method, TaskId id, PythonTaskObject::Held kind);

  PythonTaskObject processor_;
};

}  // namespace lmcache::conformance::python
