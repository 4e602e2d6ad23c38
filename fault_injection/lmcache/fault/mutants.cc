#include "lmcache/fault/mutants.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "lmcache/l2/testing/load_rewriting_adapter.h"
#include "lmcache/serde/serde_utils.h"

namespace lmcache::fault {
namespace {

constexpr std::array<StackMutantInfo, 10> kMutants{{
    {StackMutant::kNone, "none", "none", "", "the reference stack, unchanged"},
    {StackMutant::kSuccessOnFailure, "success_on_failure", "store_fail",
     "injected_fault_never_success",
     "an adapter that reports success for a store that failed (an injected store_fail)"},
    {StackMutant::kNeverComplete, "never_complete", "none", "no_deadlock",
     "an adapter whose 3rd load task never completes"},
    {StackMutant::kWrongBytes, "wrong_bytes", "none", "loaded_data_matches",
     "a deserializer that succeeds with one byte wrong on every 5th call"},
    {StackMutant::kL1Leak, "l1_leak", "none", "no_temp_leak_idle",
     "an adapter that keeps an extra L1 reservation on every 4th load"},
    {StackMutant::kSerdeNeverSignals, "serde_never_signals", "none", "no_deadlock",
     "a serde processor that never delivers its 3rd deserialize result"},
    {StackMutant::kFailedStoreVisible, "failed_store_visible", "none", "failed_store_invisible",
     "an adapter that reports every 4th successful store as failed but keeps its keys "
     "(LMCache issue #4991)"},
    {StackMutant::kDoubleComplete, "double_complete", "none", "completes_exactly_once",
     "a stack that delivers its 2nd store result twice"},
    {StackMutant::kFdLeak, "fd_leak", "none", "no_fd_leak", "an adapter that leaks an eventfd"},
    {StackMutant::kThreadLeak, "thread_leak", "none", "no_thread_leak",
     "an adapter that leaves a thread running after close()"},
}};

class SuccessOnFailureAdapter final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    for (auto& [id, r] : done) {
      if (!r.is_successful()) r = L2StoreResult::success(0);
    }
    return done;
  }
};

// The third load never completes: its result is taken from the inner and dropped.
class NeverCompleteAdapter final : public l2_testing::LoadRewritingAdapter {
 public:
  using LoadRewritingAdapter::LoadRewritingAdapter;

 protected:
  std::optional<Bitmap> rewrite_load_result(std::size_t index, std::size_t,
                                            std::optional<Bitmap> inner) override {
    return index == 2 ? std::nullopt : inner;
  }
};

class L1LeakAdapter final : public ForwardingL2Adapter {
 public:
  L1LeakAdapter(L2AdapterPtr inner, std::shared_ptr<L1Manager> l1)
      : ForwardingL2Adapter(std::move(inner)), l1_(std::move(l1)) {}
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    if (++loads_ % 4 == 0 && !keys.empty()) {
      // A reservation nobody will ever release, as a wrapper that forgot one temp would.
      ObjectKey leaked = make_temp_key(keys[0]);
      auto r = l1_->reserve_write({leaked}, {true}, MemoryLayoutDesc::single({64}, DType::kUInt8),
                                  ReserveMode::kNew);
      (void)r;
    }
    return ForwardingL2Adapter::submit_load_task(keys, objects);
  }

 private:
  std::shared_ptr<L1Manager> l1_;
  std::atomic<int> loads_{0};
};

class FailedStoreVisibleAdapter final : public ForwardingL2Adapter {
 public:
  FailedStoreVisibleAdapter(L2AdapterPtr inner, std::shared_ptr<FaultLog> log)
      : ForwardingL2Adapter(std::move(inner)), log_(std::move(log)) {}
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    TaskId id = ForwardingL2Adapter::submit_store_task(keys, objects);
    std::lock_guard lock(mu_);
    keys_[id] = keys;
    return id;
  }
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    std::lock_guard lock(mu_);
    for (auto& [id, r] : done) {
      auto keys = std::move(keys_[id]);
      keys_.erase(id);
      if (!r.is_successful() || ++successes_ % 4 != 0) continue;
      // Reports failure but leaves the keys stored: the LMCache #4991 bug. The failure itself
      // is recorded, so only the visibility of the keys is wrong.
      FaultEvent e;
      e.kind = FaultKind::kStoreFail;
      e.effect = FaultEffect::kFailsTask;
      e.keys = std::move(keys);
      e.detail = "mutant failed_store_visible (keys kept)";
      log_->record(std::move(e));
      r = L2StoreResult::failure();
    }
    return done;
  }

 private:
  std::shared_ptr<FaultLog> log_;
  std::mutex mu_;
  std::map<TaskId, std::vector<ObjectKey>> keys_;
  int successes_ = 0;
};

class DoubleCompleteAdapter final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    std::lock_guard lock(mu_);
    if (replay_) {
      done.insert(*replay_);
      replay_.reset();
      replayed_ = true;
    }
    for (auto& entry : done) {
      if (!replayed_ && !replay_ && ++seen_ == 2) replay_ = entry;
    }
    return done;
  }

 private:
  std::mutex mu_;
  int seen_ = 0;
  bool replayed_ = false;
  std::optional<std::pair<TaskId, L2StoreResult>> replay_;
};

class FdLeakAdapter final : public ForwardingL2Adapter {
 public:
  explicit FdLeakAdapter(L2AdapterPtr inner)
      : ForwardingL2Adapter(std::move(inner)), fd_(::eventfd(0, EFD_CLOEXEC)) {}
  // Deliberately no ::close(fd_), not even in the destructor.

 private:
  int fd_;
};

class ThreadLeakAdapter final : public ForwardingL2Adapter {
 public:
  explicit ThreadLeakAdapter(L2AdapterPtr inner) : ForwardingL2Adapter(std::move(inner)) {
    std::thread([] { std::this_thread::sleep_for(std::chrono::hours(1)); }).detach();
  }
};

class WrongBytesDeserializer final : public Deserializer {
 public:
  explicit WrongBytesDeserializer(DeserializerPtr inner) : inner_(std::move(inner)) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    inner_->deserialize(src, dst, key);
    if (++calls_ % 5 == 0 && dst.size() > 0) dst.bytes()[0] ^= std::byte{0x40};
  }

 private:
  DeserializerPtr inner_;
  std::atomic<int> calls_{0};
};

class NeverSignalsProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override {
    TaskId id = ForwardingSerdeProcessor::submit_deserialize(std::move(srcs), std::move(dsts),
                                                             std::move(keys));
    std::lock_guard lock(mu_);
    if (++calls_ == 3) swallowed_.insert(id);
    return id;
  }
  std::optional<bool> query_deserialize_result(TaskId id) override {
    {
      std::lock_guard lock(mu_);
      if (swallowed_.count(id)) return std::nullopt;
    }
    return ForwardingSerdeProcessor::query_deserialize_result(id);
  }

 private:
  std::mutex mu_;
  int calls_ = 0;
  std::set<TaskId> swallowed_;
};

}  // namespace

std::span<const StackMutantInfo> all_mutants() { return kMutants; }

const StackMutantInfo& mutant_info(StackMutant mutant) {
  return kMutants[static_cast<std::size_t>(mutant)];
}

std::optional<StackMutant> parse_mutant(std::string_view name) {
  for (const auto& m : kMutants) {
    if (m.name == name) return m.mutant;
  }
  return std::nullopt;
}

L2AdapterPtr wrap_adapter_mutant(StackMutant mutant, L2AdapterPtr inner,
                                 std::shared_ptr<L1Manager> l1, std::shared_ptr<FaultLog> log) {
  switch (mutant) {
    case StackMutant::kSuccessOnFailure:
      return std::make_unique<SuccessOnFailureAdapter>(std::move(inner));
    case StackMutant::kNeverComplete:
      return std::make_unique<NeverCompleteAdapter>(std::move(inner));
    case StackMutant::kL1Leak:
      return std::make_unique<L1LeakAdapter>(std::move(inner), std::move(l1));
    case StackMutant::kFailedStoreVisible:
      return std::make_unique<FailedStoreVisibleAdapter>(std::move(inner), std::move(log));
    case StackMutant::kFdLeak:
      return std::make_unique<FdLeakAdapter>(std::move(inner));
    case StackMutant::kThreadLeak:
      return std::make_unique<ThreadLeakAdapter>(std::move(inner));
    default:
      return inner;
  }
}

L2AdapterPtr wrap_top_mutant(StackMutant mutant, L2AdapterPtr inner) {
  if (mutant == StackMutant::kDoubleComplete) {
    return std::make_unique<DoubleCompleteAdapter>(std::move(inner));
  }
  return inner;
}

DeserializerPtr wrap_deserializer_mutant(StackMutant mutant, DeserializerPtr inner) {
  if (mutant == StackMutant::kWrongBytes)
    return std::make_shared<WrongBytesDeserializer>(std::move(inner));
  return inner;
}

SerdeProcessorPtr wrap_processor_mutant(StackMutant mutant, SerdeProcessorPtr inner) {
  if (mutant == StackMutant::kSerdeNeverSignals) {
    return std::make_unique<NeverSignalsProcessor>(std::move(inner));
  }
  return inner;
}

}  // namespace lmcache::fault
