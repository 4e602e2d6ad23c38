#include "knob_queue_processor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>

#include "lmcache/conformance/probe_keys.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::conformance::selftest {
namespace {

using namespace std::chrono_literals;

// Clears the mantissa bits e4m3fn drops (20 of a float32's, 4 of a bfloat16's), so that the
// serde's round-to-nearest-even sees exact values: codes rounded toward zero.
void clear_dropped_mantissa_bits(MemoryObj& obj) {
  const MemoryLayoutDesc& layout = obj.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    std::span<std::byte> bytes = obj.group_bytes(g);
    if (layout.dtypes()[g] == DType::kFloat32) {
      for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        std::uint32_t v;
        std::memcpy(&v, bytes.data() + i, 4);
        v &= ~std::uint32_t{0xFFFFF};
        std::memcpy(bytes.data() + i, &v, 4);
      }
    } else if (layout.dtypes()[g] == DType::kBFloat16) {
      for (std::size_t i = 0; i + 2 <= bytes.size(); i += 2) {
        std::uint16_t v;
        std::memcpy(&v, bytes.data() + i, 2);
        v &= static_cast<std::uint16_t>(~0xFu);
        std::memcpy(bytes.data() + i, &v, 2);
      }
    }
  }
}

std::atomic<std::uint64_t> g_tasks{0};

class KnobQueueProcessor final : public SerdeProcessor {
 public:
  explicit KnobQueueProcessor(ProcessorKnobs k)
      : k_(k),
        ser_(k.over_checksum ? SerializerPtr(std::make_shared<ChecksumSerializer>())
                             : SerializerPtr(std::make_shared<Fp8Serializer>())),
        deser_(k.over_checksum ? DeserializerPtr(std::make_shared<ChecksumDeserializer>())
                               : DeserializerPtr(std::make_shared<Fp8Deserializer>())) {
    if (k_.leak_fd_on_close) leaked_ = std::make_unique<EventNotifier>();
    for (int w = 0; w < std::max(1, k_.workers); ++w) workers_.emplace_back([this] { loop(); });
  }
  ~KnobQueueProcessor() override {
    close();
    stop();
    for (auto& w : workers_) {
      if (w.joinable()) w.join();  // a leaked thread is joined here, not in close()
    }
  }

  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override {
    return submit(true, std::move(srcs), std::move(dsts), std::move(keys));
  }
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override {
    return submit(false, std::move(srcs), std::move(dsts), std::move(keys));
  }
  std::optional<bool> query_serialize_result(TaskId id) override { return query(ser_done_, id); }
  std::optional<bool> query_deserialize_result(TaskId id) override {
    return query(deser_done_, id);
  }
  int get_serialize_event_fd() const override { return ser_fd_.fd(); }
  int get_deserialize_event_fd() const override {
    return k_.same_fd ? ser_fd_.fd() : deser_fd_.fd();
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return k_.zero_estimate ? 0 : ser_->estimate_serialized_size(layout);
  }
  std::optional<bool> serialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                       const std::vector<MemoryObjPtr>& dsts,
                                       const std::vector<ObjectKey>& keys) override {
    return run_inline(true, srcs, dsts, keys);
  }
  std::optional<bool> deserialize_inline(const std::vector<MemoryObjPtr>& srcs,
                                         const std::vector<MemoryObjPtr>& dsts,
                                         const std::vector<ObjectKey>& keys) override {
    return run_inline(false, srcs, dsts, keys);
  }

  void close() override {
    {
      std::unique_lock lock(mu_);
      if (closed_) return;
      closed_ = true;
      if (k_.drop_queued_on_close) queue_.clear();
      // Wait for the queue to drain (queued work still completes).
      idle_cv_.wait(lock, [&] { return queue_.empty() && busy_ == 0; });
    }
    if (!k_.leak_thread_on_close) {
      stop();
      for (auto& w : workers_) w.join();
    }
    if (k_.close_clears_results) {
      std::lock_guard r(results_mu_);
      ser_done_.clear();
      deser_done_.clear();
    }
    {
      std::lock_guard r(results_mu_);
      periodic_fds_.clear();
      history_.clear();
    }
    ser_fd_.close();
    deser_fd_.close();
  }

 private:
  TaskId submit(bool serialize, std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                std::vector<ObjectKey> keys) {
    std::unique_lock lock(mu_);
    if (closed_ && !k_.submit_after_close_ok) throw std::logic_error("queue processor closed");
    const bool keys_differ = keys.size() != srcs.size() && !k_.key_count_unchecked;
    if ((srcs.size() != dsts.size() || keys_differ) && !k_.accept_mismatched) {
      throw std::invalid_argument("queue processor: lists differ in length");
    }
    // A mismatch let through (accept_mismatched) runs with the kit's probe keys.
    if (keys.size() < srcs.size()) keys = probe_keys(srcs.size());
    lock.unlock();
    TaskId id = k_.ids_per_direction && !serialize ? next_deserialize_id_.fetch_add(1) : next_id();
    if (k_.empty_batch_dropped && srcs.empty()) return id;  // nothing to run, nothing signalled
    lock.lock();
    queue_.push_back([this, serialize, id, srcs = std::move(srcs), dsts = std::move(dsts),
                      keys = std::move(keys)] { run(serialize, id, srcs, dsts, keys); });
    cv_.notify_one();
    return id;
  }

  std::optional<bool> run_inline(bool serialize, const std::vector<MemoryObjPtr>& srcs,
                                 const std::vector<MemoryObjPtr>& dsts,
                                 const std::vector<ObjectKey>& keys) {
    if (!k_.runs_inline) return std::nullopt;
    if (k_.inline_submits_and_waits) {
      const TaskId id = submit(serialize, srcs, dsts, keys);
      for (;;) {
        if (auto r = query(serialize ? ser_done_ : deser_done_, id)) return r;
        std::this_thread::sleep_for(100us);
      }
    }
    {
      std::lock_guard lock(mu_);
      if (closed_) throw std::logic_error("queue processor closed");
      if (srcs.size() != dsts.size() || keys.size() != srcs.size()) {
        throw std::invalid_argument("queue processor: lists differ in length");
      }
    }
    if (!k_.inline_key_of_first_pair || keys.empty()) return execute(serialize, srcs, dsts, keys);
    return execute(serialize, srcs, dsts, std::vector<ObjectKey>(keys.size(), keys[0]));
  }

  void run(bool serialize, TaskId id, const std::vector<MemoryObjPtr>& srcs,
           const std::vector<MemoryObjPtr>& dsts, const std::vector<ObjectKey>& keys) {
    bool ok = execute(serialize, srcs, dsts, keys);
    const std::uint64_t nth = ++g_tasks;
    if (k_.flaky_every_97th_task && nth % 97 == 0) ok = false;
    publish(serialize, id, ok, srcs, dsts);
  }

  // Runs the pairs of one task; whether they all succeeded.
  bool execute(bool serialize, const std::vector<MemoryObjPtr>& srcs,
               const std::vector<MemoryObjPtr>& dsts, const std::vector<ObjectKey>& keys) {
    if (k_.shared_outcome) shared_ok_ = true;  // the task starts well...
    bool ok = true;
    const std::size_t n = std::min(srcs.size(), dsts.size());
    static const ObjectKey kDefaultKey("", "default", 0);
    auto pair = [&](std::size_t i) {
      MemoryObj& to = k_.decode_all_into_first && !serialize ? *dsts[0] : *dsts[i];
      const ObjectKey& key = k_.ignores_keys ? kDefaultKey : keys[k_.key_of_first_pair ? 0 : i];
      if (serialize) {
        MemoryObjPtr src = srcs[i];
        if (k_.frames_first_pair_size && src->layout() != srcs[0]->layout()) {
          // The batch's size taken from its first pair: a larger pair is cut, a smaller padded.
          src = MemoryObj::allocate(srcs[0]->layout());
          std::memcpy(src->data(), srcs[i]->data(), std::min(src->size(), srcs[i]->size()));
        }
        if (k_.rounds_toward_zero) {
          src = MemoryObj::allocate(srcs[i]->layout());
          std::memcpy(src->data(), srcs[i]->data(), srcs[i]->size());
          clear_dropped_mantissa_bits(*src);
        }
        std::size_t written = ser_->serialize(*src, to, key);
        if (k_.temps_rounded_up) written = std::min(to.physical_size(), (written + 7) / 8 * 8);
        if (k_.pads_past_count) {
          const std::size_t padded = std::min(to.physical_size(), (written + 7) / 8 * 8);
          std::memset(to.physical_bytes().data() + written, 0, padded - written);
        }
        if (!k_.no_narrowing) to.set_used_size(written);
      } else {
        deser_->deserialize(*srcs[i], to, key);
      }
    };
    if (k_.shared_pair_cursor) {
      cursor_ = 0;  // the running task's position, kept in the processor
      for (std::size_t i = cursor_.fetch_add(1); i < n; i = cursor_.fetch_add(1)) {
        std::this_thread::yield();
        try {
          pair(i);
        } catch (...) {
          ok = false;
        }
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (k_.at_most_16_pairs && i >= 16) break;
        try {
          pair(i);
          if (k_.result_of_last_pair) ok = true;
        } catch (...) {
          ok = false;
          if (k_.shared_outcome) shared_ok_ = false;  // ...and its failure is every running task's
          if (!k_.result_of_last_pair) break;
        }
      }
    }
    if (k_.shared_outcome) {
      // A flush that takes a while (10 ms: failures on the other worker land within it even on
      // a loaded machine), then the outcome is read back from the shared member.
      std::this_thread::sleep_for(10ms);
      return shared_ok_;
    }
    return ok;
  }

  // Stores a task's result and signals it.
  void publish(bool serialize, TaskId id, bool ok, const std::vector<MemoryObjPtr>& srcs,
               const std::vector<MemoryObjPtr>& dsts) {
    {
      std::lock_guard r(results_mu_);
      if (k_.sticky_failure) {
        if (!ok) {
          sticky_ = true;
        } else if (sticky_) {
          ok = false;
          sticky_ = false;
        }
      }
      if (!ok && k_.failures_answered_twice) failed_.insert(id);
      (serialize ? ser_done_ : deser_done_)[id] = ok;
      if (k_.fd_leak_every_64_tasks && ++tasks_ % 64 == 0) {
        periodic_fds_.push_back(std::make_unique<EventNotifier>());
      }
      if (k_.keeps_task_buffers) {
        history_.insert(history_.end(), srcs.begin(), srcs.end());
        history_.insert(history_.end(), dsts.begin(), dsts.end());
      }
    }
    bool skip = (k_.skip_every_second_notify && id % 2 == 1) || (k_.no_notify_on_failure && !ok);
    if (!skip) (serialize || k_.same_fd ? ser_fd_ : deser_fd_).notify();
  }

  TaskId next_id() {
    if (k_.ids_16_bit) return next_id_.fetch_add(1) & 0xFFFF;
    if (!k_.racy_ids) return next_id_.fetch_add(1);
    TaskId id = next_id_.load();  // read, then write later: concurrent submitters collide
    std::this_thread::sleep_for(1ms);
    next_id_.store(id + 1);
    return id;
  }

  std::optional<bool> query(std::map<TaskId, bool>& done, TaskId id) {
    std::lock_guard r(results_mu_);
    auto it = done.find(id);
    if (it == done.end()) {
      if (k_.throw_on_unknown && id >= next_id_.load()) {
        throw std::out_of_range("queue processor: unknown task id " + std::to_string(id));
      }
      return std::nullopt;
    }
    bool v = it->second;
    if (!k_.answer_twice && !failed_.count(id)) done.erase(it);
    return v;
  }

  void stop() {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }

  void loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      auto job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
      --busy_;
      idle_cv_.notify_all();
    }
  }

  const ProcessorKnobs k_;
  const SerializerPtr ser_;
  const DeserializerPtr deser_;
  std::atomic<TaskId> next_id_{0};
  std::atomic<TaskId> next_deserialize_id_{0};  // ids_per_direction only
  std::atomic<std::size_t> cursor_{0};
  std::atomic<bool> shared_ok_{true};  // shared_outcome only
  EventNotifier ser_fd_;
  EventNotifier deser_fd_;
  std::unique_ptr<EventNotifier> leaked_;  // closed only by the destructor

  std::mutex results_mu_;
  std::map<TaskId, bool> ser_done_;
  std::map<TaskId, bool> deser_done_;
  std::set<TaskId> failed_;
  bool sticky_ = false;
  std::uint64_t tasks_ = 0;
  std::vector<std::unique_ptr<EventNotifier>> periodic_fds_;
  std::vector<MemoryObjPtr> history_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  int busy_ = 0;
  bool closed_ = false;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

SerdeProcessorPtr make_knob_queue_processor(ProcessorKnobs k) {
  return std::make_unique<KnobQueueProcessor>(k);
}

}  // namespace lmcache::conformance::selftest
