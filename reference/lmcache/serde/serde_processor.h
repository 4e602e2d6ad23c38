// File: lmcache/serde/serde_processor.h
//
// SerdeProcessor: the asynchronous serde interface, with the same submit -> eventfd -> query
// shape as an L2 adapter (docs/serde.md). The SerdeL2AdapterWrapper is its only consumer in the
// stack.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "lmcache/core/completion_queue.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache {

class SerdeProcessor {
 public:
  virtual ~SerdeProcessor() = default;

  // submit_serialize()
  //
  // Queues serialize(srcs[i], dsts[i], keys[i]) for every i and returns at once. `keys` are the
  // objects' ORIGINAL keys (a wrapper never passes its temporary L1 keys). Throws
  // std::invalid_argument naming the sizes when the three lists differ in length,
  // std::logic_error after close().
  virtual TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                                  std::vector<ObjectKey> keys) = 0;

  // query_serialize_result()
  //
  // true / false exactly once per completed serialize task; nullopt while pending, for
  // unknown ids, ids of the other direction, or once taken.
  virtual std::optional<bool> query_serialize_result(TaskId id) = 0;

  // Signalled once per completed serialize task; distinct from the deserialize fd.
  virtual int get_serialize_event_fd() const = 0;

  // The deserialize direction, same shape: deserialize(srcs[i], dsts[i], keys[i]).
  virtual TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                                    std::vector<ObjectKey> keys) = 0;
  virtual std::optional<bool> query_deserialize_result(TaskId id) = 0;
  virtual int get_deserialize_event_fd() const = 0;

  // The serializer's upper bound for this layout.
  virtual std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const = 0;

  // serialize_inline() / deserialize_inline()
  //
  // Optional (the defaults run nothing). Runs one task on the calling thread and returns the
  // result a submitted task of the same pairs would have completed with (true / false;
  // serialized destinations narrowed as a submitted task narrows them), or std::nullopt, having
  // done nothing, when the processor does not run tasks inline -- the caller then submits the
  // task. An inline task draws no id and signals no fd. A caller saves the two hand-offs of a
  // submitted task (to a worker and back), at the price of its own thread's time. Throws what
  // submit_*() throws (lists of different lengths, keys included; after close()).
  virtual std::optional<bool> serialize_inline(const std::vector<MemoryObjPtr>& /*srcs*/,
                                               const std::vector<MemoryObjPtr>& /*dsts*/,
                                               const std::vector<ObjectKey>& /*keys*/) {
    return std::nullopt;
  }
  virtual std::optional<bool> deserialize_inline(const std::vector<MemoryObjPtr>& /*srcs*/,
                                                 const std::vector<MemoryObjPtr>& /*dsts*/,
                                                 const std::vector<ObjectKey>& /*keys*/) {
    return std::nullopt;
  }

  // close()
  //
  // Idempotent. Waits for queued work (which still completes and signals), joins the worker
  // threads and closes both fds. Results already stored stay queryable.
  virtual void close() = 0;
};

using SerdeProcessorPtr = std::unique_ptr<SerdeProcessor>;

}  // namespace lmcache
