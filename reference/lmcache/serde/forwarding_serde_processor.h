// File: lmcache/serde/forwarding_serde_processor.h
//
// ForwardingSerdeProcessor: a decorator base that owns a SerdeProcessor and forwards every call;
// decorators (fault injection, instrumentation, test doubles) override what they change.
// The optional inline runs (serialize_inline / deserialize_inline) are NOT forwarded: a
// decorator that changes submitted tasks would be bypassed by them, so it runs tasks inline
// only when it overrides these two itself.
#pragma once

#include <memory>
#include <stdexcept>
#include <utility>

#include "lmcache/serde/serde_processor.h"

namespace lmcache {

class ForwardingSerdeProcessor : public SerdeProcessor {
 public:
  // Throws std::invalid_argument when `inner` is null.
  explicit ForwardingSerdeProcessor(SerdeProcessorPtr inner) : inner_(std::move(inner)) {
    if (!inner_) throw std::invalid_argument("ForwardingSerdeProcessor: inner processor is null");
  }

  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override {
    return inner_->submit_serialize(std::move(srcs), std::move(dsts), std::move(keys));
  }
  std::optional<bool> query_serialize_result(TaskId id) override {
    return inner_->query_serialize_result(id);
  }
  int get_serialize_event_fd() const override { return inner_->get_serialize_event_fd(); }
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override {
    return inner_->submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
  }
  std::optional<bool> query_deserialize_result(TaskId id) override {
    return inner_->query_deserialize_result(id);
  }
  int get_deserialize_event_fd() const override { return inner_->get_deserialize_event_fd(); }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return inner_->estimate_serialized_size(layout);
  }
  void close() override { inner_->close(); }

  SerdeProcessor& inner() { return *inner_; }

 private:
  SerdeProcessorPtr inner_;
};

}  // namespace lmcache
