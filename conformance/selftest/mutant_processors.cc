// Processor mutants: a small SerdeProcessor (one worker thread, a queue, two completion maps and
// two eventfds) over the fp8 pair, with one rule broken per mutant.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "lmcache/core/event_notifier.h"
#include "lmcache/serde/fp8_serde.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

struct ProcessorKnobs {
  bool same_fd = false;  // one eventfd for both directions
  bool skip_every_second_notify = false;
  bool answer_twice = false;      // queries do not remove the result
  bool throw_on_unknown = false;  // a query of an id never issued throws
  bool no_notify_on_failure = false;
  bool racy_ids = false;  // read-sleep-write id counter
  bool leak_fd_on_close = false;
  bool leak_thread_on_close = false;
  bool drop_queued_on_close = false;
  bool submit_after_close_ok = false;
  bool accept_mismatched = false;
  bool zero_estimate = false;
};

class KnobQueueProcessor final : public SerdeProcessor {
 public:
  explicit KnobQueueProcessor(ProcessorKnobs k) : k_(k) {
    if (k_.leak_fd_on_close) leaked_ = std::make_unique<EventNotifier>();
    worker_ = std::thread([this] { Loop(); });
  }
  ~KnobQueueProcessor() override {
    close();
    if (worker_.joinable()) {  // a leaked thread is joined here, not in close()
      Stop();
      worker_.join();
    }
  }

  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts) override {
    return Submit(true, std::move(srcs), std::move(dsts));
  }
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs,
                            std::vector<MemoryObjPtr> dsts) override {
    return Submit(false, std::move(srcs), std::move(dsts));
  }
  std::optional<bool> query_serialize_result(TaskId id) override { return Query(ser_done_, id); }
  std::optional<bool> query_deserialize_result(TaskId id) override {
    return Query(deser_done_, id);
  }
  int get_serialize_event_fd() const override { return ser_fd_.fd(); }
  int get_deserialize_event_fd() const override {
    return k_.same_fd ? ser_fd_.fd() : deser_fd_.fd();
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return k_.zero_estimate ? 0 : ser_.estimate_serialized_size(layout);
  }

  void close() override {
    {
      std::unique_lock lock(mu_);
      if (closed_) return;
      closed_ = true;
      if (k_.drop_queued_on_close) queue_.clear();
      // Wait for the queue to drain (queued work still completes).
      idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    }
    if (!k_.leak_thread_on_close) {
      Stop();
      worker_.join();
    }
    ser_fd_.close();
    deser_fd_.close();
  }

 private:
  TaskId Submit(bool serialize, std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts) {
    std::unique_lock lock(mu_);
    if (closed_ && !k_.submit_after_close_ok) throw std::logic_error("queue processor closed");
    if (srcs.size() != dsts.size() && !k_.accept_mismatched) {
      throw std::invalid_argument("queue processor: lists differ in length");
    }
    lock.unlock();
    TaskId id = NextId();
    lock.lock();
    queue_.push_back([this, serialize, id, srcs = std::move(srcs), dsts = std::move(dsts)] {
      bool ok = true;
      try {
        for (std::size_t i = 0; i < std::min(srcs.size(), dsts.size()); ++i) {
          if (serialize) {
            dsts[i]->set_used_size(ser_.serialize(*srcs[i], *dsts[i]));
          } else {
            deser_.deserialize(*srcs[i], *dsts[i]);
          }
        }
      } catch (...) {
        ok = false;
      }
      {
        std::lock_guard r(results_mu_);
        (serialize ? ser_done_ : deser_done_)[id] = ok;
      }
      bool skip = (k_.skip_every_second_notify && id % 2 == 1) || (k_.no_notify_on_failure && !ok);
      if (!skip) (serialize || k_.same_fd ? ser_fd_ : deser_fd_).notify();
    });
    cv_.notify_one();
    return id;
  }

  TaskId NextId() {
    if (!k_.racy_ids) return next_id_.fetch_add(1);
    TaskId id = next_id_.load();  // read, then write later: concurrent submitters collide
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    next_id_.store(id + 1);
    return id;
  }

  std::optional<bool> Query(std::map<TaskId, bool>& done, TaskId id) {
    std::lock_guard r(results_mu_);
    auto it = done.find(id);
    if (it == done.end()) {
      if (k_.throw_on_unknown && id >= next_id_.load()) {
        throw std::out_of_range("queue processor: unknown task id " + std::to_string(id));
      }
      return std::nullopt;
    }
    bool v = it->second;
    if (!k_.answer_twice) done.erase(it);
    return v;
  }

  void Stop() {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }

  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      auto job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      job();
      lock.lock();
      busy_ = false;
      idle_cv_.notify_all();
    }
  }

  const ProcessorKnobs k_;
  Fp8Serializer ser_;
  Fp8Deserializer deser_;
  std::atomic<TaskId> next_id_{0};
  EventNotifier ser_fd_;
  EventNotifier deser_fd_;
  std::unique_ptr<EventNotifier> leaked_;  // closed only by the destructor

  std::mutex results_mu_;
  std::map<TaskId, bool> ser_done_;
  std::map<TaskId, bool> deser_done_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool closed_ = false;
  bool stop_ = false;
  std::thread worker_;
};

ProcessorUnderTest MakeQueue(std::string name, ProcessorKnobs k) {
  ProcessorUnderTest p;
  p.name = std::move(name);
  p.make = [k]() -> SerdeProcessorPtr { return std::make_unique<KnobQueueProcessor>(k); };
  p.input_dtypes = {DType::kFloat32, DType::kBFloat16};
  return p;
}

Mutant ProcessorMutant(std::string name, std::string property, ProcessorKnobs k) {
  Mutant m;
  m.name = name;
  m.kind = ImplementationKind::kProcessor;
  m.property = std::move(property);
  m.processor = MakeQueue(std::move(name), k);
  return m;
}

}  // namespace

ProcessorUnderTest QueueProcessor() { return MakeQueue("queue_processor", {}); }

void AddProcessorMutants(std::vector<Mutant>& out) {
  out.push_back(
      ProcessorMutant("one_fd_for_both_directions", "DistinctEventFds", {.same_fd = true}));
  out.push_back(
      ProcessorMutant("missing_notify", "OneNotifyPerTask", {.skip_every_second_notify = true}));
  out.push_back(ProcessorMutant("query_answers_twice", "OneShotQueries", {.answer_twice = true}));
  out.push_back(
      ProcessorMutant("unknown_id_throws", "UnknownIdsGiveNone", {.throw_on_unknown = true}));
  out.push_back(ProcessorMutant("failure_not_signalled", "FailureReportedAsFalse",
                                {.no_notify_on_failure = true}));
  out.push_back(ProcessorMutant("racy_task_ids", "ConcurrentSubmitters", {.racy_ids = true}));
  out.push_back(ProcessorMutant("processor_close_leaks_fd", "CloseReleasesResources",
                                {.leak_fd_on_close = true}));
  out.push_back(ProcessorMutant("processor_close_leaks_thread", "CloseReleasesResources",
                                {.leak_thread_on_close = true}));
  out.push_back(ProcessorMutant("close_drops_queued_work", "CloseCompletesQueuedWork",
                                {.drop_queued_on_close = true}));
  out.push_back(ProcessorMutant("submit_after_close_accepted", "UseAfterClose",
                                {.submit_after_close_ok = true}));
  out.push_back(ProcessorMutant("mismatched_batch_accepted", "MismatchedBatchRejected",
                                {.accept_mismatched = true}));
  out.push_back(
      ProcessorMutant("estimate_too_small", "SerializeThenDeserialize", {.zero_estimate = true}));
}

}  // namespace lmcache::conformance::selftest
