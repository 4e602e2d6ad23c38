// Wrapper mutants: SerdeL2AdapterWrapper composed or decorated so that one rule breaks.
#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>

#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/serde_utils.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

struct WrapperKnobs {
  bool accepts_heterogeneous = false;  // a rejected batch becomes an empty one
  bool failed_store_succeeds = false;  // "drops the failed keys and succeeds"
  bool ignores_deserialize_failure = false;
  bool partial_becomes_full = false;  // any loaded bit -> every bit
  bool own_lookup_fd = false;
  bool leaks_temps = false;            // one L1 temp per store, never released
  bool close_drops_in_flight = false;  // no completion for tasks failed by close()
  bool empty_batch_never_completes = false;
};

// A serde processor whose failed deserializations report success.
class LyingDeserializeProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  std::optional<bool> query_deserialize_result(TaskId id) override {
    std::optional<bool> r = ForwardingSerdeProcessor::query_deserialize_result(id);
    return r ? std::optional<bool>(true) : r;
  }
};

class KnobWrapper final : public ForwardingL2Adapter {
 public:
  KnobWrapper(L2AdapterPtr wrapper, std::shared_ptr<L1Manager> l1, WrapperKnobs k)
      : ForwardingL2Adapter(std::move(wrapper)), l1_(std::move(l1)), k_(k) {}

  int get_lookup_and_lock_event_fd() const override {
    return k_.own_lookup_fd ? own_lookup_.fd()
                            : ForwardingL2Adapter::get_lookup_and_lock_event_fd();
  }

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    if (k_.empty_batch_never_completes && keys.empty()) return fake_ids_++;
    if (k_.leaks_temps && !keys.empty()) {
      l1_->reserve_write({make_temp_key(keys[0])}, {true},
                         MemoryLayoutDesc::single({8}, DType::kUInt8), ReserveMode::kNew);
    }
    try {
      return ForwardingL2Adapter::submit_store_task(keys, objects);
    } catch (const std::invalid_argument&) {
      if (!k_.accepts_heterogeneous) throw;
      return ForwardingL2Adapter::submit_store_task({}, {});
    }
  }

  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    if (k_.close_drops_in_flight && closed_) return {};
    if (k_.failed_store_succeeds) {
      for (auto& [id, r] : done) {
        if (!r.is_successful()) r = L2StoreResult::success(1);
      }
    }
    return done;
  }

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    if (k_.empty_batch_never_completes && keys.empty()) return fake_ids_++;
    try {
      return ForwardingL2Adapter::submit_load_task(keys, objects);
    } catch (const std::invalid_argument&) {
      if (!k_.accepts_heterogeneous) throw;
      return ForwardingL2Adapter::submit_load_task({}, {});
    }
  }

  std::optional<Bitmap> query_load_result(TaskId id) override {
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (k_.close_drops_in_flight && closed_) return std::nullopt;
    if (bits && k_.partial_becomes_full && bits->popcount() > 0) {
      bits = Bitmap(bits->size(), bits->size());
    }
    return bits;
  }

  void close() override {
    ForwardingL2Adapter::close();
    closed_ = true;
  }

 private:
  std::shared_ptr<L1Manager> l1_;
  const WrapperKnobs k_;
  EventNotifier own_lookup_;
  std::atomic<TaskId> fake_ids_{TaskId{1} << 40};
  std::atomic<bool> closed_{false};
};

WrapperUnderTest MakeKnobWrapper(std::string name, WrapperKnobs k) {
  WrapperUnderTest w;
  w.name = std::move(name);
  w.make = [k](L2AdapterPtr inner, SerdeProcessorPtr serde,
               std::shared_ptr<L1Manager> l1) -> L2AdapterPtr {
    if (k.ignores_deserialize_failure) {
      serde = std::make_unique<LyingDeserializeProcessor>(std::move(serde));
    }
    auto wrapper = std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde), l1);
    return std::make_unique<KnobWrapper>(std::move(wrapper), l1, k);
  };
  return w;
}

Mutant WrapperMutant(std::string name, std::string property, WrapperUnderTest w) {
  Mutant m;
  m.name = name;
  m.kind = ImplementationKind::kWrapper;
  m.property = std::move(property);
  w.name = std::move(name);
  m.wrapper = std::move(w);
  return m;
}

}  // namespace

void AddWrapperMutants(std::vector<Mutant>& out) {
  out.push_back(WrapperMutant("empty_batch_never_completes", "EmptyBatchCompletes",
                              MakeKnobWrapper("", {.empty_batch_never_completes = true})));
  {
    // Not a wrapper at all: the inner adapter stores the raw objects.
    WrapperUnderTest w;
    w.make = [](L2AdapterPtr inner, SerdeProcessorPtr serde,
                std::shared_ptr<L1Manager>) -> L2AdapterPtr {
      serde->close();
      return inner;
    };
    out.push_back(WrapperMutant("skips_the_serde", "StoreLoadRoundTrip", w));
  }
  out.push_back(WrapperMutant("own_lookup_fd", "LookupFdIsInners",
                              MakeKnobWrapper("", {.own_lookup_fd = true})));
  out.push_back(WrapperMutant("accepts_heterogeneous_batch", "HomogeneityEnforced",
                              MakeKnobWrapper("", {.accepts_heterogeneous = true})));
  out.push_back(WrapperMutant("failed_store_succeeds", "AllOrNothingStore",
                              MakeKnobWrapper("", {.failed_store_succeeds = true})));
  out.push_back(WrapperMutant("ignores_deserialize_failure", "AllOrNothingLoad",
                              MakeKnobWrapper("", {.ignores_deserialize_failure = true})));
  out.push_back(WrapperMutant("partial_load_reported_full", "PartialLoadKeepsBitmap",
                              MakeKnobWrapper("", {.partial_becomes_full = true})));
  out.push_back(
      WrapperMutant("leaks_temps", "TempsReleased", MakeKnobWrapper("", {.leaks_temps = true})));
  out.push_back(WrapperMutant("close_drops_in_flight_tasks", "CloseFailsInFlightTasks",
                              MakeKnobWrapper("", {.close_drops_in_flight = true})));
}

std::vector<Mutant> AllMutants() {
  std::vector<Mutant> all;
  AddSerdeMutants(all);
  AddProcessorMutants(all);
  AddAdapterMutants(all);
  AddWrapperMutants(all);
  return all;
}

}  // namespace lmcache::conformance::selftest
