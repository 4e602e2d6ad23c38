// File: lmcache/serde/async_serde_processor.h
//
// AsyncSerdeProcessor turns any synchronous (Serializer, Deserializer) pair into the async
// SerdeProcessor interface (docs/serde.md): submit_* queues one job per batch on a thread pool and
// returns an id at once; the job runs the pairs in order, stores true / false in the
// direction's CompletionQueue, which then notifies that direction's eventfd exactly once.
//
// Layout of the bookkeeping, as the seed describes it:
//   - ONE ThreadPool of max_workers threads shared by both directions (they are independent);
//   - ONE TaskIdCounter, so an id of one direction is never valid in the other;
//   - TWO CompletionQueue<bool>, hence two distinct eventfds.
//
// Failures never escape a job: the first exception of a batch ends it with false (pairs done
// before it stay done and narrowed). Nothing is logged; the message is kept for
// failure_message() so that callers who care can report it.
//
// Example:
//   AsyncSerdeProcessor p(std::make_shared<Fp8Serializer>(), std::make_shared<Fp8Deserializer>());
//   TaskId id = p.submit_serialize({kv}, {temp}, {key});
//   wait_readable(p.get_serialize_event_fd(), 5s);
//   consume_fd(p.get_serialize_event_fd());
//   std::optional<bool> ok = p.query_serialize_result(id);  // true; then nullopt forever
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/core/completion_queue.h"
#include "lmcache/core/thread_pool.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

class AsyncSerdeProcessor final : public SerdeProcessor {
 public:
  // AsyncSerdeProcessor()
  //
  // Starts max_workers threads at once. Throws std::invalid_argument when max_workers is 0 or
  // either half of the pair is null. The pair must be thread-safe when max_workers > 1.
  AsyncSerdeProcessor(SerializerPtr serializer, DeserializerPtr deserializer,
                      std::size_t max_workers = 1);

  // Calls close(): queued work still completes.
  ~AsyncSerdeProcessor() override;

  AsyncSerdeProcessor(const AsyncSerdeProcessor&) = delete;
  AsyncSerdeProcessor& operator=(const AsyncSerdeProcessor&) = delete;

  // submit_serialize() / submit_deserialize()
  //
  // See SerdeProcessor. Never blocks on running work. A null object in either list is not
  // rejected here: the task fails (false) when it reaches that pair. Throws
  // std::invalid_argument naming the sizes when the three lists differ in length, and
  // std::logic_error after close() has begun.
  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override;
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override;

  std::optional<bool> query_serialize_result(TaskId id) override;
  std::optional<bool> query_deserialize_result(TaskId id) override;

  // serialize_inline() / deserialize_inline()
  //
  // Run the pairs on the calling thread exactly as a worker runs a submitted task (the first
  // failing pair ends it with false and counts in failed_task_count(); no failure_message(),
  // since there is no id) and return the result; never std::nullopt. Concurrent with the
  // workers' tasks, which the Serializer / Deserializer contract allows (they are
  // thread-safe). Throws std::invalid_argument naming both sizes when the lists differ in
  // length and std::logic_error after close() has begun.
  std::optional<bool> serialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                       const std::vector<MemoryObjPtr>& dsts,
                                       const std::vector<ObjectKey>& keys) override;
  std::optional<bool> deserialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                         const std::vector<MemoryObjPtr>& dsts,
                                         const std::vector<ObjectKey>& keys) override;

  // -1 after close().
  int get_serialize_event_fd() const override;
  int get_deserialize_event_fd() const override;

  // Delegates to the serializer.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

  // close()
  //
  // Idempotent; concurrent callers all return after the work is drained. Throws
  // std::logic_error when called from inside a running task (it would join its own thread).
  void close() override;

  // max_workers()
  //
  // The size of the shared pool.
  std::size_t max_workers() const { return pool_.num_threads(); }

  // failed_task_count()
  //
  // Tasks (both directions) that completed with false since construction.
  std::size_t failed_task_count() const;

  // failure_message()
  //
  // Why task `id` failed: "<direction> pair <i>: <exception message>". Kept for the
  // kMaxFailureMessages most recent failures only (so a long-running process does not grow);
  // nullopt for a task that succeeded, is pending, or is older than that. Not one-shot.
  std::optional<std::string> failure_message(TaskId id) const;

  static constexpr std::size_t kMaxFailureMessages = 256;

 private:
  enum class Direction { kSerialize, kDeserialize };

  TaskId submit(Direction direction, std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                std::vector<ObjectKey> keys);
  void run_task(Direction direction, TaskId id, const std::vector<MemoryObjPtr>& srcs,
                const std::vector<MemoryObjPtr>& dsts, const std::vector<ObjectKey>& keys);
  std::optional<bool> run_inline(Direction direction, const std::vector<MemoryObjPtr>& srcs,
                                 const std::vector<MemoryObjPtr>& dsts,
                                 const std::vector<ObjectKey>& keys);
  // Runs the pairs in order; false, with the reason in *why, at the first failing pair.
  bool run_pairs(Direction direction, const std::vector<MemoryObjPtr>& srcs,
                 const std::vector<MemoryObjPtr>& dsts, const std::vector<ObjectKey>& keys,
                 std::string* why);
  void record_failure(TaskId id, std::string message);

  const SerializerPtr serializer_;
  const DeserializerPtr deserializer_;
  TaskIdCounter ids_;
  CompletionQueue<bool> serialize_done_;
  CompletionQueue<bool> deserialize_done_;

  // submit_mu_ makes "not closed -> queue the job" atomic against close(); close_once_ keeps a
  // second close() waiting until the first has finished (no lock nested in another).
  std::mutex submit_mu_;
  bool closed_ = false;  // guarded by submit_mu_
  std::once_flag close_once_;

  mutable std::mutex failures_mu_;
  std::size_t failed_tasks_ = 0;                // guarded by failures_mu_
  std::map<TaskId, std::string> failure_text_;  // guarded by failures_mu_
  std::deque<TaskId> failure_order_;            // guarded by failures_mu_; oldest first

  // Declared last: destroyed (and joined) first, while everything its jobs use is alive.
  ThreadPool pool_;
};

}  // namespace lmcache
