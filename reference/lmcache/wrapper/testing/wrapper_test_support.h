// File: lmcache/wrapper/testing/wrapper_test_support.h
//
// Test doubles and helpers for the wrapper's tests: controllable serializers, a serde
// processor and an inner adapter whose every failure point can be switched on, and waits on
// the wrapper's fds. Test-only (not installed).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/process_resources.h"
#include "lmcache/core/testing/gate.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/wrapper/testing/alloc_failure.h"

namespace lmcache::wrapper_internal {

using namespace std::chrono_literals;

using core_internal::Gate;

// open_once_the_loop_stopped()
//
// Starts a thread that opens `gate` once close(), called meanwhile on this thread, has stopped
// the wrapper's loop: close() stops and joins the loop thread before anything else
// (wrapper.md), so the process then has one thread fewer than when this was called (the
// opener itself aside). A serde step held by the gate then finishes into a closed wrapper, as a
// test of close() with a task in that step needs -- with no guess at how long close() takes to
// get there. Join the returned thread after close().
inline std::thread open_once_the_loop_stopped(Gate& gate) {
  const std::size_t before = thread_count();
  return std::thread([&gate, before] {
    while (thread_count() > before) std::this_thread::yield();  // > : the opener counts too
    gate.open();
  });
}

// fp8 serializer that can throw on chosen calls or wait on a gate first.
class ControlledSerializer final : public Serializer {
 public:
  explicit ControlledSerializer(Fp8SerdeOptions options = {}) : inner_(options) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    int n = calls_.fetch_add(1);
    if (Gate* g = gate.load()) g->wait();
    if (throw_on_call.load() == n || throw_always.load()) {
      throw std::runtime_error("injected serialize failure");
    }
    return inner_.serialize(src, dst, key);
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return inner_.estimate_serialized_size(layout);
  }
  // Switched by the test while workers run, hence atomic.
  std::atomic<Gate*> gate{nullptr};
  std::atomic<int> throw_on_call{-1};
  std::atomic<bool> throw_always{false};

 private:
  Fp8Serializer inner_;
  std::atomic<int> calls_{0};
};

class ControlledDeserializer final : public Deserializer {
 public:
  explicit ControlledDeserializer(Fp8SerdeOptions options = {}) : inner_(options) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    calls.fetch_add(1);
    if (Gate* g = gate.load()) g->wait();
    if (throw_always.load()) throw std::runtime_error("injected deserialize failure");
    inner_.deserialize(src, dst, key);
  }
  std::atomic<Gate*> gate{nullptr};
  std::atomic<bool> throw_always{false};
  std::atomic<int> calls{0};

 private:
  Fp8Deserializer inner_;
};

// A serde processor whose submits and result queries can throw.
class FlakySerdeProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  TaskId submit_serialize(std::vector<MemoryObjPtr> s, std::vector<MemoryObjPtr> d,
                          std::vector<ObjectKey> keys) override {
    if (throw_on_submit_serialize) throw std::runtime_error("injected submit_serialize failure");
    return ForwardingSerdeProcessor::submit_serialize(std::move(s), std::move(d), std::move(keys));
  }
  TaskId submit_deserialize(std::vector<MemoryObjPtr> s, std::vector<MemoryObjPtr> d,
                            std::vector<ObjectKey> keys) override {
    // The wrapper's inner-load drain ends here when nothing failed: an allocation failure armed
    // by FlakyAdapter::fail_allocation_after_query_load never outlives it.
    fail_allocation_on_this_thread(-1);
    if (throw_on_submit_deserialize) {
      throw std::runtime_error("injected submit_deserialize failure");
    }
    return ForwardingSerdeProcessor::submit_deserialize(std::move(s), std::move(d),
                                                        std::move(keys));
  }
  std::optional<bool> query_serialize_result(TaskId id) override {
    if (throw_on_query) throw std::runtime_error("injected query_serialize_result failure");
    return ForwardingSerdeProcessor::query_serialize_result(id);
  }
  std::optional<bool> query_deserialize_result(TaskId id) override {
    if (throw_on_query) throw std::runtime_error("injected query_deserialize_result failure");
    return ForwardingSerdeProcessor::query_deserialize_result(id);
  }
  std::atomic<bool> throw_on_submit_serialize{false};
  std::atomic<bool> throw_on_submit_deserialize{false};
  std::atomic<bool> throw_on_query{false};
};

// An inner adapter whose submits and load queries can throw, whose stores can fail, whose
// loads can drop chosen indices, and whose load results can be held back.
class FlakyAdapter final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  TaskId submit_store_task(const std::vector<ObjectKey>& k,
                           const std::vector<MemoryObjPtr>& o) override {
    if (throw_on_submit_store) throw std::runtime_error("injected inner submit_store failure");
    return ForwardingL2Adapter::submit_store_task(k, o);
  }
  // Lends the inner's buffers only when `lend` is set, so that tests of the temp path keep it.
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& k,
                                               const MemoryLayoutDesc& layout) override {
    if (!lend) return {};
    return ForwardingL2Adapter::lend_store_buffers(k, layout);
  }
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    if (fail_stores) {
      for (auto& [id, r] : done) r = L2StoreResult::failure();
    }
    return done;
  }
  TaskId submit_load_task(const std::vector<ObjectKey>& k,
                          const std::vector<MemoryObjPtr>& o) override {
    if (throw_on_submit_load) throw std::runtime_error("injected inner submit_load failure");
    if (claim_loads) {
      // The inner writes scratch buffers; the caller's stay as they were.
      std::vector<MemoryObjPtr> scratch;
      for (const auto& obj : o) scratch.push_back(MemoryObj::allocate(obj->layout()));
      return ForwardingL2Adapter::submit_load_task(k, scratch);
    }
    return ForwardingL2Adapter::submit_load_task(k, o);
  }
  std::optional<Bitmap> query_load_result(TaskId id) override {
    if (hold_loads) return std::nullopt;
    if (throw_on_query_load) throw std::runtime_error("injected inner query_load failure");
    auto bits = ForwardingL2Adapter::query_load_result(id);
    if (bits && claim_loads) bits = Bitmap(bits->size(), bits->size());
    if (bits) fail_allocation_on_this_thread(fail_allocation_after_query_load.load());
    if (bits) {
      for (std::size_t i : drop_load_indices) bits->clear(i);
    }
    return bits;
  }
  // Stops holding load results back; the wrapper picks them up at its next wake-up.
  void release_loads() { hold_loads = false; }

  std::atomic<bool> throw_on_submit_store{false};
  std::atomic<bool> fail_stores{false};
  std::atomic<bool> throw_on_submit_load{false};
  std::atomic<bool> throw_on_query_load{false};
  std::atomic<bool> hold_loads{false};
  // A broken inner: reports every key loaded but writes none of the caller's buffers.
  std::atomic<bool> claim_loads{false};
  std::atomic<bool> lend{false};
  // >= 0: the n-th allocation on the calling thread after a load result is handed out throws
  // std::bad_alloc (the wrapper's inner-load drain runs there); see alloc_failure.h.
  std::atomic<int> fail_allocation_after_query_load{-1};
  std::set<std::size_t> drop_load_indices;
};

// StoreResults: a thread-safe collector of an adapter's store completions, for tests where
// several threads wait on one adapter (pop_completed_store_tasks() hands out everyone's
// results). Throws std::logic_error if a result is handed out twice.
class StoreResults {
 public:
  explicit StoreResults(L2AdapterInterface& adapter) : adapter_(adapter) {}
  std::optional<L2StoreResult> wait(TaskId id, std::chrono::milliseconds timeout = 30s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      {
        std::lock_guard lock(mu_);
        for (auto& [tid, r] : adapter_.pop_completed_store_tasks()) {
          if (!results_.emplace(tid, r).second) {
            throw std::logic_error("store result handed out twice");
          }
        }
        if (auto it = results_.find(id); it != results_.end()) return it->second;
      }
      wait_readable(adapter_.get_store_event_fd(), 20ms);
    }
    return std::nullopt;
  }

 private:
  L2AdapterInterface& adapter_;
  std::mutex mu_;
  std::map<TaskId, L2StoreResult> results_;
};

// Waits for the store result of `id`, collecting every result popped meanwhile into `seen`.
inline std::optional<L2StoreResult> wait_store(L2AdapterInterface& a, TaskId id,
                                               std::map<TaskId, L2StoreResult>* seen = nullptr,
                                               std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::map<TaskId, L2StoreResult> local;
  auto& all = seen ? *seen : local;
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& [tid, r] : a.pop_completed_store_tasks()) {
      if (!all.emplace(tid, r).second) throw std::logic_error("store result handed out twice");
    }
    if (auto it = all.find(id); it != all.end()) return it->second;
    wait_readable(a.get_store_event_fd(), 50ms);
    consume_fd(a.get_store_event_fd());
  }
  return std::nullopt;
}

inline std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id,
                                       std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto r = a.query_load_result(id)) return r;
    wait_readable(a.get_load_event_fd(), 50ms);
    consume_fd(a.get_load_event_fd());
  }
  return std::nullopt;
}

}  // namespace lmcache::wrapper_internal
