#include "lmcache/serde/async_serde_processor.h"

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace lmcache {

namespace {

const char* direction_name(bool serialize) { return serialize ? "serialize" : "deserialize"; }

template <class T>
std::shared_ptr<T> require(std::shared_ptr<T> p, const char* what) {
  if (!p) throw std::invalid_argument(std::string("AsyncSerdeProcessor: null ") + what);
  return p;
}

// The call is prefix + direction + suffix: "submit_serialize", "deserialize_inline", ...
// The call's name is built only on the error path: this check runs on every submit.
void check_lists(const char* prefix, const char* direction, const char* suffix, std::size_t srcs,
                 std::size_t dsts, std::size_t keys) {
  if (srcs != dsts) {
    throw std::invalid_argument(std::string(prefix) + direction + suffix + ": srcs has " +
                                std::to_string(srcs) + " objects but dsts has " +
                                std::to_string(dsts));
  }
  if (keys != srcs) {
    throw std::invalid_argument(std::string(prefix) + direction + suffix + ": srcs has " +
                                std::to_string(srcs) + " objects but keys has " +
                                std::to_string(keys));
  }
}

std::size_t checked_workers(std::size_t max_workers) {
  if (max_workers == 0) {
    throw std::invalid_argument("AsyncSerdeProcessor: max_workers must be >= 1, got 0");
  }
  return max_workers;
}

}  // namespace

AsyncSerdeProcessor::AsyncSerdeProcessor(SerializerPtr serializer, DeserializerPtr deserializer,
                                         std::size_t max_workers)
    : serializer_(require(std::move(serializer), "serializer")),
      deserializer_(require(std::move(deserializer), "deserializer")),
      pool_(checked_workers(max_workers)) {}

AsyncSerdeProcessor::~AsyncSerdeProcessor() {
  try {
    close();
  } catch (...) {
    // Only reachable when a task destroys its own processor; the pool's destructor then
    // cannot join either, so there is nothing better to do than to let it terminate.
  }
}

TaskId AsyncSerdeProcessor::submit_serialize(std::vector<MemoryObjPtr> srcs,
                                             std::vector<MemoryObjPtr> dsts,
                                             std::vector<ObjectKey> keys) {
  return submit(Direction::kSerialize, std::move(srcs), std::move(dsts), std::move(keys));
}

TaskId AsyncSerdeProcessor::submit_deserialize(std::vector<MemoryObjPtr> srcs,
                                               std::vector<MemoryObjPtr> dsts,
                                               std::vector<ObjectKey> keys) {
  return submit(Direction::kDeserialize, std::move(srcs), std::move(dsts), std::move(keys));
}

TaskId AsyncSerdeProcessor::submit(Direction direction, std::vector<MemoryObjPtr> srcs,
                                   std::vector<MemoryObjPtr> dsts, std::vector<ObjectKey> keys) {
  const bool ser = direction == Direction::kSerialize;
  check_lists("submit_", direction_name(ser), "", srcs.size(), dsts.size(), keys.size());
  std::lock_guard lock(submit_mu_);
  if (closed_) {
    throw std::logic_error(std::string("submit_") + direction_name(ser) +
                           ": the serde processor is closed");
  }
  TaskId id = ids_.next();
  // The lists are moved into the job: the processor keeps the objects alive until it ends.
  pool_.submit([this, direction, id, srcs = std::move(srcs), dsts = std::move(dsts),
                keys = std::move(keys)] { run_task(direction, id, srcs, dsts, keys); });
  return id;
}

bool AsyncSerdeProcessor::run_pairs(Direction direction, const std::vector<MemoryObjPtr>& srcs,
                                    const std::vector<MemoryObjPtr>& dsts,
                                    const std::vector<ObjectKey>& keys, std::string* why) {
  const bool ser = direction == Direction::kSerialize;
  std::size_t i = 0;
  try {
    for (; i < srcs.size(); ++i) {
      if (!srcs[i] || !dsts[i]) {
        throw std::invalid_argument(std::string("null ") + (!srcs[i] ? "src" : "dst") + " object");
      }
      if (ser) {
        std::size_t n = serializer_->serialize(*srcs[i], *dsts[i], keys[i]);
        // Downstream stores exactly what was written (docs/serde.md).
        dsts[i]->set_used_size(n);
      } else {
        deserializer_->deserialize(*srcs[i], *dsts[i], keys[i]);
      }
    }
    return true;
  } catch (const std::exception& e) {
    *why = std::string(direction_name(ser)) + " pair " + std::to_string(i) + ": " + e.what();
  } catch (...) {
    *why = std::string(direction_name(ser)) + " pair " + std::to_string(i) + ": unknown exception";
  }
  return false;
}

void AsyncSerdeProcessor::run_task(Direction direction, TaskId id,
                                   const std::vector<MemoryObjPtr>& srcs,
                                   const std::vector<MemoryObjPtr>& dsts,
                                   const std::vector<ObjectKey>& keys) {
  const bool ser = direction == Direction::kSerialize;
  std::string why;
  const bool ok = run_pairs(direction, srcs, dsts, keys, &why);
  if (!ok) record_failure(id, std::move(why));
  // Stores the result, then notifies the direction's eventfd once.
  (ser ? serialize_done_ : deserialize_done_).complete(id, ok);
}

std::optional<bool> AsyncSerdeProcessor::serialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                                          const std::vector<MemoryObjPtr>& dsts,
                                                          const std::vector<ObjectKey>& keys) {
  return run_inline(Direction::kSerialize, srcs, dsts, keys);
}

std::optional<bool> AsyncSerdeProcessor::deserialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                                            const std::vector<MemoryObjPtr>& dsts,
                                                            const std::vector<ObjectKey>& keys) {
  return run_inline(Direction::kDeserialize, srcs, dsts, keys);
}

std::optional<bool> AsyncSerdeProcessor::run_inline(Direction direction,
                                                    const std::vector<MemoryObjPtr>& srcs,
                                                    const std::vector<MemoryObjPtr>& dsts,
                                                    const std::vector<ObjectKey>& keys) {
  const bool ser = direction == Direction::kSerialize;
  check_lists("", direction_name(ser), "_inline", srcs.size(), dsts.size(), keys.size());
  {
    std::lock_guard lock(submit_mu_);
    if (closed_) {
      throw std::logic_error(std::string(direction_name(ser)) +
                             "_inline: the serde processor is closed");
    }
  }
  std::string why;
  if (run_pairs(direction, srcs, dsts, keys, &why)) return true;
  std::lock_guard lock(failures_mu_);
  ++failed_tasks_;
  return false;
}

void AsyncSerdeProcessor::record_failure(TaskId id, std::string message) {
  std::lock_guard lock(failures_mu_);
  ++failed_tasks_;
  failure_text_[id] = std::move(message);
  failure_order_.push_back(id);
  while (failure_order_.size() > kMaxFailureMessages) {
    failure_text_.erase(failure_order_.front());
    failure_order_.pop_front();
  }
}

std::optional<bool> AsyncSerdeProcessor::query_serialize_result(TaskId id) {
  return serialize_done_.take(id);
}

std::optional<bool> AsyncSerdeProcessor::query_deserialize_result(TaskId id) {
  return deserialize_done_.take(id);
}

int AsyncSerdeProcessor::get_serialize_event_fd() const { return serialize_done_.event_fd(); }

int AsyncSerdeProcessor::get_deserialize_event_fd() const { return deserialize_done_.event_fd(); }

std::size_t AsyncSerdeProcessor::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  return serializer_->estimate_serialized_size(layout);
}

void AsyncSerdeProcessor::close() {
  if (pool_.is_worker_thread()) {
    throw std::logic_error("AsyncSerdeProcessor::close: called from inside a serde task");
  }
  std::call_once(close_once_, [this] {
    {
      std::lock_guard lock(submit_mu_);
      closed_ = true;
    }
    // Queued and running tasks finish and signal before the fds go away.
    pool_.shutdown();
    serialize_done_.close();
    deserialize_done_.close();
  });
}

std::size_t AsyncSerdeProcessor::failed_task_count() const {
  std::lock_guard lock(failures_mu_);
  return failed_tasks_;
}

std::optional<std::string> AsyncSerdeProcessor::failure_message(TaskId id) const {
  std::lock_guard lock(failures_mu_);
  auto it = failure_text_.find(id);
  if (it == failure_text_.end()) return std::nullopt;
  return it->second;
}

}  // namespace lmcache
