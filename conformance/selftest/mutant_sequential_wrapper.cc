// A second serde wrapper, written independently of SerdeL2AdapterWrapper the way a vendor might
// write one: submits reserve the temps and queue the task; one worker thread runs the tasks one
// at a time, polling the serde and the inner adapter for each step. Its conformant form passes
// every wrapper property (so the kit does not depend on one wrapper design); its mutants carry
// one bug each.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "lmcache/core/close_quietly.h"
#include "lmcache/core/completion_queue.h"
#include "lmcache/serde/serde_utils.h"
#include "mutant_wrapper_support.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

struct SequentialKnobs {
  bool temps_leak_when_first_pair_fails = false;  // a failed serialize releases only the temps
                                                  // it narrowed
  bool deterministic_temp_keys = false;           // temp key = original key + a fixed suffix
  bool deserializes_unset_bits = false;           // every pair is deserialized, loaded or not
  bool racy_ids = false;                          // ids from a read-then-write counter
};

bool all_ok(const std::vector<L1Result>& results) {
  for (const auto& r : results) {
    if (r.error != L1Error::kSuccess) return false;
  }
  return true;
}

class SequentialWrapperImpl final : public L2AdapterInterface {
 public:
  SequentialWrapperImpl(L2AdapterPtr inner, SerdeProcessorPtr serde, std::shared_ptr<L1Manager> l1,
                        SequentialKnobs k)
      : inner_(std::move(inner)), serde_(std::move(serde)), l1_(std::move(l1)), k_(k) {
    if (!inner_ || !serde_ || !l1_) throw std::invalid_argument("sequential wrapper: null part");
    worker_ = std::thread([this] { loop(); });
  }
  ~SequentialWrapperImpl() override { close_quietly(*this); }

  int get_store_event_fd() const override { return store_done_.event_fd(); }
  int get_lookup_and_lock_event_fd() const override {
    check_open("get_lookup_and_lock_event_fd");
    return inner_->get_lookup_and_lock_event_fd();
  }
  int get_load_event_fd() const override { return load_done_.event_fd(); }

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    return submit(true, keys, objects);
  }
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    return store_done_.take_all();
  }
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override {
    check_open("submit_lookup_and_lock_task");
    return inner_->submit_lookup_and_lock_task(keys);
  }
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override {
    check_open("query_lookup_and_lock_result");
    return inner_->query_lookup_and_lock_result(id);
  }
  void submit_unlock(const std::vector<ObjectKey>& keys) override {
    check_open("submit_unlock");
    inner_->submit_unlock(keys);
  }
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    return submit(false, keys, objects);
  }
  std::optional<Bitmap> query_load_result(TaskId id) override { return load_done_.take(id); }
  void delete_keys(const std::vector<ObjectKey>& keys) override {
    check_open("delete_keys");
    inner_->delete_keys(keys);
  }
  AdapterUsage get_usage() const override {
    check_open("get_usage");
    return inner_->get_usage();
  }
  bool supports_global_eviction() const override {
    check_open("supports_global_eviction");
    return inner_->supports_global_eviction();
  }
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    check_open("register_listener");
    inner_->register_listener(std::move(listener));
  }
  Json report_status() const override {
    check_open("report_status");
    Json status = inner_->report_status();
    status["serde_wrapped"] = true;
    return status;
  }

  void close() override {
    std::lock_guard close_lock(close_mu_);
    if (closed_) return;
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
    close_quietly(*inner_);
    close_quietly(*serde_);
    // The task the worker was running when it stopped, then the queued ones: failed, temps
    // released by the state they were in.
    std::deque<Task> left;
    {
      std::lock_guard lock(mu_);
      if (current_) left.push_back(std::move(*current_));
      current_.reset();
      for (auto& t : queue_) left.push_back(std::move(t));
      queue_.clear();
    }
    for (auto& t : left) {
      release(t);
      fail(t);
    }
    store_done_.close();
    load_done_.close();
    closed_ = true;
  }

 private:
  struct Task {
    bool store = true;
    TaskId id = 0;
    std::vector<ObjectKey> keys;
    std::vector<MemoryObjPtr> objects;  // stores: sources; loads: destinations
    std::vector<ObjectKey> temp_keys;
    std::vector<MemoryObjPtr> temps;
    bool read_locked = false;  // temps moved to read-locked for the inner store
  };

  void check_open(const char* op) const {
    if (closed_)
      throw std::logic_error(std::string("sequential wrapper: ") + op + " after close()");
  }

  TaskId next_id() {
    if (!k_.racy_ids) return next_id_.fetch_add(1);
    TaskId id = next_id_.load();  // read, then write later: concurrent submitters collide
    std::this_thread::sleep_for(1ms);
    next_id_.store(id + 1);
    return id;
  }

  TaskId submit(bool store, const std::vector<ObjectKey>& keys,
                const std::vector<MemoryObjPtr>& objects) {
    check_open(store ? "submit_store_task" : "submit_load_task");
    if (keys.size() != objects.size()) {
      throw std::invalid_argument("sequential wrapper: " + std::to_string(keys.size()) +
                                  " keys but " + std::to_string(objects.size()) + " objects");
    }
    for (std::size_t i = 0; i < objects.size(); ++i) {
      if (!objects[i])
        throw std::invalid_argument("sequential wrapper: object " + std::to_string(i) + " is null");
      if (i > 0 && objects[i]->layout() != objects[0]->layout()) {
        throw std::invalid_argument("sequential wrapper: object " + std::to_string(i) +
                                    " has another layout than objects[0]");
      }
    }
    Task t;
    t.store = store;
    t.id = next_id();
    t.keys = keys;
    t.objects = objects;
    if (keys.empty()) {
      succeed(t, Bitmap(0), 0);
      return t.id;
    }
    try {
      const MemoryLayoutDesc temp_layout = serialized_layout_desc(objects[0]->layout(), *serde_);
      for (const auto& key : keys) {
        t.temp_keys.push_back(k_.deterministic_temp_keys
                                  ? ObjectKey(key.chunk_hash() + "~tmp", key.model_name(),
                                              key.kv_rank(), key.object_group_id(),
                                              key.cache_salt())
                                  : make_temp_key(key));
      }
      auto reserved = l1_->reserve_write(t.temp_keys, std::vector<bool>(keys.size(), true),
                                         temp_layout, ReserveMode::kNew);
      if (!all_ok(reserved)) {
        std::vector<ObjectKey> got;
        for (std::size_t i = 0; i < reserved.size(); ++i) {
          if (reserved[i].error == L1Error::kSuccess) got.push_back(t.temp_keys[i]);
        }
        l1_->finish_write(got);
        l1_->delete_keys(got);
        t.temp_keys.clear();
        fail(t);
        return t.id;
      }
      for (auto& r : reserved) t.temps.push_back(r.obj);
    } catch (...) {
      t.temp_keys.clear();
      fail(t);
      return t.id;
    }
    const TaskId id = t.id;
    {
      std::lock_guard lock(mu_);
      if (stop_) {
        release(t);
        fail(t);
        return id;
      }
      queue_.push_back(std::move(t));
    }
    cv_.notify_one();
    return id;
  }

  // (CompletionQueue::complete throws on an id completed twice, which the racy-id mutant
  // provokes; that result is then lost, the mutant's observable bug.)
  void succeed(const Task& t, Bitmap bits, std::uint64_t bytes) {
    try {
      if (t.store) {
        store_done_.complete(t.id, L2StoreResult::success(bytes));
      } else {
        load_done_.complete(t.id, std::move(bits));
      }
    } catch (const std::logic_error&) {
    }
  }
  void fail(const Task& t) {
    try {
      if (t.store) {
        store_done_.complete(t.id, L2StoreResult::failure());
      } else {
        load_done_.complete(t.id, Bitmap(t.keys.size()));
      }
    } catch (const std::logic_error&) {
    }
  }

  // Gives the temps back, from whichever state they are in.
  void release(Task& t) {
    if (t.temp_keys.empty()) return;
    try {
      if (t.read_locked) {
        l1_->finish_read(t.temp_keys);
      } else {
        l1_->finish_write(t.temp_keys);
        l1_->delete_keys(t.temp_keys);
      }
    } catch (...) {
    }
    t.temp_keys.clear();
    t.temps.clear();
  }

  // Polls `query` until it answers or the wrapper stops; an exception counts as `failed`.
  template <class R, class Query>
  std::optional<R> wait_for(Query query, R failed) {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (stop_) return std::nullopt;
      }
      try {
        if (std::optional<R> r = query()) return r;
      } catch (...) {
        return failed;
      }
      std::this_thread::sleep_for(100us);
    }
  }

  // Runs one task; false when the wrapper stopped in the middle (close() finishes it).
  bool run(Task& t) {
    if (t.store) return run_store(t);
    return run_load(t);
  }

  bool run_store(Task& t) {
    TaskId sid;
    try {
      sid = serde_->submit_serialize(t.objects, t.temps, t.keys);
    } catch (...) {
      release(t);
      fail(t);
      return true;
    }
    std::optional<bool> ok =
        wait_for<bool>([&] { return serde_->query_serialize_result(sid); }, false);
    if (!ok) return false;
    if (!*ok) {
      if (k_.temps_leak_when_first_pair_fails) {
        // "Release what was serialized": only the temps the serde narrowed.
        const std::size_t capacity = t.temps.empty() ? 0 : t.temps[0]->physical_size();
        std::vector<ObjectKey> done;
        for (std::size_t i = 0; i < t.temps.size(); ++i) {
          if (t.temps[i]->size() < capacity) done.push_back(t.temp_keys[i]);
        }
        l1_->finish_write(done);
        l1_->delete_keys(done);
        t.temp_keys.clear();
        t.temps.clear();
      } else {
        release(t);
      }
      fail(t);
      return true;
    }
    if (!all_ok(l1_->finish_write_and_reserve_read(t.temp_keys))) {
      release(t);
      fail(t);
      return true;
    }
    t.read_locked = true;
    TaskId iid;
    try {
      iid = inner_->submit_store_task(t.keys, t.temps);
    } catch (...) {
      release(t);
      fail(t);
      return true;
    }
    std::optional<L2StoreResult> r = wait_for<L2StoreResult>(
        [&]() -> std::optional<L2StoreResult> {
          for (auto& [id, result] : inner_->pop_completed_store_tasks()) {
            if (id == iid) return result;
          }
          return std::nullopt;
        },
        L2StoreResult::failure());
    if (!r) return false;
    release(t);
    if (r->is_successful()) {
      succeed(t, Bitmap(), r->bytes_transferred());
    } else {
      fail(t);
    }
    return true;
  }

  bool run_load(Task& t) {
    const std::size_t n = t.keys.size();
    TaskId lid;
    try {
      lid = inner_->submit_load_task(t.keys, t.temps);
    } catch (...) {
      release(t);
      fail(t);
      return true;
    }
    std::optional<Bitmap> bits =
        wait_for<Bitmap>([&] { return inner_->query_load_result(lid); }, Bitmap());
    if (!bits) return false;
    if (bits->size() != n || bits->none()) {
      release(t);
      if (bits->size() == n) {
        succeed(t, *bits, 0);
      } else {
        fail(t);
      }
      return true;
    }
    std::vector<MemoryObjPtr> srcs, dsts;
    std::vector<ObjectKey> keys;
    for (std::size_t i = 0; i < n; ++i) {
      if (!bits->test(i) && !k_.deserializes_unset_bits) continue;
      srcs.push_back(t.temps[i]);
      dsts.push_back(t.objects[i]);
      keys.push_back(t.keys[i]);
    }
    TaskId did;
    try {
      did = serde_->submit_deserialize(srcs, dsts, keys);
    } catch (...) {
      release(t);
      fail(t);
      return true;
    }
    std::optional<bool> ok =
        wait_for<bool>([&] { return serde_->query_deserialize_result(did); }, false);
    if (!ok) return false;
    release(t);
    if (*ok || k_.deserializes_unset_bits) {
      // (Unloaded temps hold no valid bytes: the mutant's deserialize of them may fail.)
      succeed(t, *bits, 0);
    } else {
      fail(t);
    }
    return true;
  }

  void loop() {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        current_ = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!run(*current_)) return;  // stopped: close() finishes the current task
      std::lock_guard lock(mu_);
      current_.reset();
    }
  }

  L2AdapterPtr inner_;
  SerdeProcessorPtr serde_;
  std::shared_ptr<L1Manager> l1_;
  const SequentialKnobs k_;
  std::atomic<TaskId> next_id_{0};
  CompletionQueue<L2StoreResult> store_done_;
  CompletionQueue<Bitmap> load_done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::optional<Task> current_;  // the worker's task; read by close() after the join
  bool stop_ = false;
  std::mutex close_mu_;
  std::atomic<bool> closed_{false};
  std::thread worker_;
};

WrapperUnderTest make_sequential(SequentialKnobs k) {
  WrapperUnderTest w;
  w.name = "sequential_wrapper";
  w.make = [k](L2AdapterPtr inner, SerdeProcessorPtr serde,
               std::shared_ptr<L1Manager> l1) -> L2AdapterPtr {
    return std::make_unique<SequentialWrapperImpl>(std::move(inner), std::move(serde),
                                                   std::move(l1), k);
  };
  return w;
}

Impl sequential_impl(SequentialKnobs k) {
  Impl i;
  i.wrapper = make_sequential(k);
  return i;
}

}  // namespace

WrapperUnderTest sequential_wrapper() { return make_sequential({}); }

void add_sequential_wrapper_mutants(std::vector<Mutant>& out) {
  out.push_back(mutant(
      "temps_leak_when_first_pair_fails", ImplementationKind::kWrapper, BugClass::kFailureOrder,
      "AllOrNothingStore",
      "after a failed serialize it releases only the temps the serde filled: when the first "
      "pair fails, every temp leaks",
      sequential_impl({.temps_leak_when_first_pair_fails = true}), sequential_impl({}),
      with_wrapper([](WitnessStack& s) -> std::string {
        // Objects of another element count than the temps: the first pair fails to serialize.
        auto keys = witness_keys(2);
        std::vector<MemoryObjPtr> objs = witness_objects(2, 1);
        objs[0] = MemoryObj::allocate(MemoryLayoutDesc::single({4, 64}, DType::kUInt8));
        objs[1] = MemoryObj::allocate(MemoryLayoutDesc::single({4, 64}, DType::kUInt8));
        auto r = wait_store(*s.w, s.w->submit_store_task(keys, objs));
        if (!r || r->is_successful()) return "a store of unsupported objects did not fail";
        std::this_thread::sleep_for(20ms);
        return s.l1->get_memory_usage().used_bytes == 0
                   ? ""
                   : "after the failed store L1 holds " +
                         std::to_string(s.l1->get_memory_usage().used_bytes) + " bytes of temps";
      })));
  out.push_back(mutant(
      "deterministic_temp_keys", ImplementationKind::kWrapper, BugClass::kFailureOrder,
      "SameKeyInFlight",
      "derives temp keys from the original key, so two tasks on one key in flight collide in L1",
      sequential_impl({.deterministic_temp_keys = true}), sequential_impl({}),
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(1);
        TaskId a = s.w->submit_store_task(keys, witness_objects(1, 1));
        TaskId b = s.w->submit_store_task(keys, witness_objects(1, 1));
        std::map<TaskId, L2StoreResult> done;
        for (int i = 0; i < 5000 && done.size() < 2; ++i) {
          for (auto& kv : s.w->pop_completed_store_tasks()) done.insert(kv);
          std::this_thread::sleep_for(1ms);
        }
        return done.count(a) && done.count(b) && done.at(a).is_successful() &&
                       done.at(b).is_successful()
                   ? ""
                   : "two stores of one key in flight together did not both succeed";
      })));
  out.push_back(mutant(
      "deserializes_unset_bits", ImplementationKind::kWrapper, BugClass::kData,
      "PartialLoadKeepsBitmap",
      "deserializes every pair of a partial load, writing junk into the unloaded destinations",
      sequential_impl({.deserializes_unset_bits = true}), sequential_impl({}),
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(2);
        wait_store(*s.w, s.w->submit_store_task({keys[0]}, witness_objects(1, 1)));
        auto dsts = witness_objects(2, 5);
        std::vector<std::byte> before(dsts[1]->data(), dsts[1]->data() + 4 * kWitnessElements);
        wait_load(*s.w, s.w->submit_load_task(keys, dsts));
        return std::memcmp(before.data(), dsts[1]->data(), before.size()) == 0
                   ? ""
                   : "the destination of an absent key was written";
      })));
  {
    Mutant m =
        mutant("racy_wrapper_ids", ImplementationKind::kWrapper, BugClass::kConcurrency,
               "ConcurrentSubmitters",
               "task ids from a read-then-write counter: concurrent submitters get the same id",
               sequential_impl({.racy_ids = true}), sequential_impl({}),
               with_wrapper([](WitnessStack& s) -> std::string {
                 return submits_share_an_id([&](std::uint32_t t) {
                   return s.w->submit_store_task(witness_keys(1, t + 1), witness_objects(1, 1));
                 })
                            ? "repeated ids"
                            : "";
               }));
    m.suite = ImplementationKind::kAdapter;  // caught by the adapter suite run over the wrapper
    out.push_back(std::move(m));
  }
}

}  // namespace lmcache::conformance::selftest
