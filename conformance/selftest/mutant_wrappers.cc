// Wrapper mutants built on SerdeL2AdapterWrapper: decorators of the wrapper, of the serde it is
// given or of its inner adapter, each adding one bug to what the wrapper does.
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "lmcache/conformance/process_stats.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/l2/testing/load_rewriting_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_utils.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"
#include "mutant_wrapper_support.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

struct WrapperKnobs {
  bool accepts_heterogeneous = false;  // a rejected batch becomes an empty one
  bool failed_store_succeeds = false;  // "drops the failed keys and succeeds"
  bool ignores_deserialize_failure = false;
  bool partial_becomes_full = false;  // any loaded bit -> every bit
  bool own_lookup_fd = false;
  bool leaks_temps = false;            // one L1 temp per store, never released
  bool close_drops_in_flight = false;  // no completion for tasks failed by close()
  bool empty_batch_never_completes = false;
  // Realistic bugs.
  bool reports_serialized_bytes = false;  // store bytes = what it serialized, not the inner's
  bool usage_from_own_accounting = false;
  bool listeners_kept_by_wrapper = false;  // fired by the wrapper with the objects' sizes
  bool unlock_not_forwarded = false;
  bool no_global_eviction = false;
  bool close_leaves_serde_open = false;
  bool temp_size_cached = false;            // the temp size of the first layout, for every layout
  bool resizes_inner_bitmap = false;        // an inner bitmap of the wrong size is cut or padded
  bool drops_results_at_close = false;      // results completed before close() are discarded
  bool keeps_load_destinations = false;     // every load's destinations kept until close()
  bool lookup_answers_after_close = false;  // "no result yet" instead of a throw after close()
  bool prefetches_lent_buffers = false;     // lends a spare set for the next store, kept unused
  bool caches_views_by_key = false;         // "views never change": memoized, never invalidated
  bool homogeneity_by_byte_size = false;    // a batch is homogeneous when its byte sizes agree
};

// The objects of a batch whose byte sizes all equal objects[0]'s, seen with objects[0]'s layout
// (a homogeneity check that compares sizes, not layouts); any other batch as it is.
std::vector<MemoryObjPtr> as_first_layout(const std::vector<MemoryObjPtr>& objects) {
  if (objects.empty()) return objects;
  const MemoryLayoutDesc& first = objects[0]->layout();
  for (const auto& o : objects) {
    if (o->layout().total_bytes() != first.total_bytes()) return objects;
  }
  std::vector<MemoryObjPtr> out;
  for (const auto& o : objects) {
    out.push_back(std::make_shared<MemoryObj>(o, o->data(), o->physical_size(), first));
  }
  return out;
}

// A serde processor whose failed deserializations report success.
class LyingDeserializeProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  std::optional<bool> query_deserialize_result(TaskId id) override {
    std::optional<bool> r = ForwardingSerdeProcessor::query_deserialize_result(id);
    return r ? std::optional<bool>(true) : r;
  }
};

// A serde processor whose close() does nothing (the wrapper "forgets" to close its serde).
class UnclosedProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  void close() override {}
};

// The temp size of the first layout asked about, for every layout.
class FirstEstimateProcessor final : public ForwardingSerdeProcessor {
 public:
  using ForwardingSerdeProcessor::ForwardingSerdeProcessor;
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    std::lock_guard lock(mu_);
    if (!first_) first_ = ForwardingSerdeProcessor::estimate_serialized_size(layout);
    return *first_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::optional<std::size_t> first_;
};

// An inner adapter whose load bitmaps are cut or padded to the batch size.
class BitmapFixingInner final : public l2_testing::LoadRewritingAdapter {
 public:
  using LoadRewritingAdapter::LoadRewritingAdapter;

 protected:
  std::optional<Bitmap> rewrite_load_result(std::size_t, std::size_t keys,
                                            std::optional<Bitmap> inner) override {
    if (!inner) return inner;
    Bitmap fixed(keys);
    for (std::size_t i = 0; i < fixed.size(); ++i) {
      if (inner->test(i)) fixed.set(i);
    }
    return fixed;
  }
};

// An inner adapter whose every lend also borrows a spare set "for the next store", which is
// never used: one set of lent buffers is always outstanding.
class PrefetchingLender final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    std::vector<MemoryObjPtr> lent = ForwardingL2Adapter::lend_store_buffers(keys, layout);
    std::vector<MemoryObjPtr> spare = ForwardingL2Adapter::lend_store_buffers(keys, layout);
    std::lock_guard lock(mu_);
    spare_ = std::move(spare);
    return lent;
  }

 private:
  std::mutex mu_;
  std::vector<MemoryObjPtr> spare_;
};

// An inner adapter whose view loads are memoized by key ("a view never changes"): a key the
// inner misses is answered from the memo, even after the key was deleted or evicted.
class ViewMemoizingInner final : public ViewRewritingAdapter {
 public:
  using ViewRewritingAdapter::ViewRewritingAdapter;

 protected:
  void rewrite_views(const std::vector<ObjectKey>& keys, L2LoadViews& r) override {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < keys.size() && i < r.views.size(); ++i) {
      if (r.loaded.test(i)) {
        memo_[keys[i]] = r.views[i];
      } else if (auto it = memo_.find(keys[i]); it != memo_.end()) {
        r.loaded.set(i);
        r.views[i] = it->second;
      }
    }
  }

 private:
  std::mutex mu_;
  std::unordered_map<ObjectKey, MemoryObjPtr> memo_;
};

class KnobWrapper final : public ForwardingL2Adapter {
 public:
  KnobWrapper(L2AdapterPtr wrapper, std::shared_ptr<L1Manager> l1, WrapperKnobs k)
      : ForwardingL2Adapter(std::move(wrapper)), l1_(std::move(l1)), k_(k) {
    if (k_.own_lookup_fd) own_lookup_ = std::make_unique<EventNotifier>();
  }

  int get_lookup_and_lock_event_fd() const override {
    return own_lookup_ ? own_lookup_->fd() : ForwardingL2Adapter::get_lookup_and_lock_event_fd();
  }

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    if (k_.empty_batch_never_completes && keys.empty()) return fake_ids_++;
    if (k_.leaks_temps && !keys.empty()) {
      l1_->reserve_write({make_temp_key(keys[0])}, {true},
                         MemoryLayoutDesc::single({8}, DType::kUInt8), ReserveMode::kNew);
    }
    TaskId id;
    try {
      id = ForwardingL2Adapter::submit_store_task(
          keys, k_.homogeneity_by_byte_size ? as_first_layout(objects) : objects);
    } catch (const std::invalid_argument&) {
      if (!k_.accepts_heterogeneous) throw;
      return ForwardingL2Adapter::submit_store_task({}, {});
    }
    std::lock_guard lock(mu_);
    Store& s = stores_[id];
    s.keys = keys;
    for (auto& o : objects) {
      s.serialized += o->layout().total_elements();  // the kit's fp8 serde: a byte per element
      s.original += o->layout().total_bytes();
    }
    return id;
  }

  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override {
    if (k_.lookup_answers_after_close && closed_) return std::nullopt;
    return ForwardingL2Adapter::query_lookup_and_lock_result(id);
  }

  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    if (k_.close_drops_in_flight && closed_) return {};
    std::vector<std::pair<std::vector<ObjectKey>, std::vector<std::uint64_t>>> fire;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, r] : done) {
        Store s = stores_[id];
        stores_.erase(id);
        if (k_.failed_store_succeeds && !r.is_successful()) r = L2StoreResult::success(1);
        if (!r.is_successful()) continue;
        if (k_.reports_serialized_bytes) r = L2StoreResult::success(s.serialized);
        own_usage_ += s.original;
        if (!s.keys.empty()) {
          fire.emplace_back(s.keys,
                            std::vector<std::uint64_t>(s.keys.size(), s.original / s.keys.size()));
        }
      }
    }
    if (k_.listeners_kept_by_wrapper) {
      for (auto& [keys, sizes] : fire) {
        for (auto& l : listeners_) l->on_l2_keys_stored(keys, sizes);
      }
    }
    return done;
  }

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    if (k_.empty_batch_never_completes && keys.empty()) return fake_ids_++;
    TaskId id;
    try {
      id = ForwardingL2Adapter::submit_load_task(
          keys, k_.homogeneity_by_byte_size ? as_first_layout(objects) : objects);
    } catch (const std::invalid_argument&) {
      if (!k_.accepts_heterogeneous) throw;
      return ForwardingL2Adapter::submit_load_task({}, {});
    }
    std::lock_guard lock(mu_);
    loads_.push_back(id);
    if (k_.keeps_load_destinations) kept_.insert(kept_.end(), objects.begin(), objects.end());
    return id;
  }

  std::optional<Bitmap> query_load_result(TaskId id) override {
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (k_.close_drops_in_flight && closed_) return std::nullopt;
    if (bits && k_.partial_becomes_full && bits->popcount() > 0) {
      bits = Bitmap(bits->size(), bits->size());
    }
    return bits;
  }

  void submit_unlock(const std::vector<ObjectKey>& keys) override {
    if (!k_.unlock_not_forwarded) ForwardingL2Adapter::submit_unlock(keys);
  }

  AdapterUsage get_usage() const override {
    AdapterUsage u = ForwardingL2Adapter::get_usage();
    if (k_.usage_from_own_accounting) {
      std::lock_guard lock(mu_);
      u.total_bytes_used = own_usage_;
    }
    return u;
  }

  bool supports_global_eviction() const override {
    return k_.no_global_eviction ? false : ForwardingL2Adapter::supports_global_eviction();
  }

  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    if (k_.listeners_kept_by_wrapper) {
      listeners_.push_back(std::move(listener));
      return;
    }
    ForwardingL2Adapter::register_listener(std::move(listener));
  }

  void close() override {
    if (k_.drops_results_at_close && !closed_) {
      // "Nobody will ask any more": what completed is thrown away before closing.
      ForwardingL2Adapter::pop_completed_store_tasks();
      std::vector<TaskId> loads;
      {
        std::lock_guard lock(mu_);
        loads.swap(loads_);
      }
      for (TaskId id : loads) ForwardingL2Adapter::query_load_result(id);
    }
    ForwardingL2Adapter::close();
    if (own_lookup_) own_lookup_->close();
    closed_ = true;
    std::lock_guard lock(mu_);
    kept_.clear();
  }

 private:
  struct Store {
    std::vector<ObjectKey> keys;
    std::uint64_t serialized = 0;
    std::uint64_t original = 0;
  };

  std::shared_ptr<L1Manager> l1_;
  const WrapperKnobs k_;
  std::unique_ptr<EventNotifier> own_lookup_;
  std::atomic<TaskId> fake_ids_{TaskId{1} << 40};
  std::atomic<bool> closed_{false};
  mutable std::mutex mu_;
  std::map<TaskId, Store> stores_;
  std::vector<TaskId> loads_;
  std::vector<MemoryObjPtr> kept_;
  std::uint64_t own_usage_ = 0;
  std::vector<std::shared_ptr<L2AdapterListener>> listeners_;  // registered before any task
};

WrapperUnderTest make_knob_wrapper(WrapperKnobs k) {
  WrapperUnderTest w;
  w.name = "decorated_wrapper";
  w.make = [k](L2AdapterPtr inner, SerdeProcessorPtr serde,
               std::shared_ptr<L1Manager> l1) -> L2AdapterPtr {
    if (k.ignores_deserialize_failure) {
      serde = std::make_unique<LyingDeserializeProcessor>(std::move(serde));
    }
    if (k.close_leaves_serde_open) serde = std::make_unique<UnclosedProcessor>(std::move(serde));
    if (k.temp_size_cached) serde = std::make_unique<FirstEstimateProcessor>(std::move(serde));
    if (k.resizes_inner_bitmap) inner = std::make_unique<BitmapFixingInner>(std::move(inner));
    if (k.prefetches_lent_buffers) inner = std::make_unique<PrefetchingLender>(std::move(inner));
    if (k.caches_views_by_key) inner = std::make_unique<ViewMemoizingInner>(std::move(inner));
    auto wrapper = std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde), l1);
    return std::make_unique<KnobWrapper>(std::move(wrapper), l1, k);
  };
  return w;
}

Impl wrapper_impl(WrapperUnderTest w) {
  Impl i;
  i.wrapper = std::move(w);
  return i;
}

void add(std::vector<Mutant>& out, std::string name, BugClass c, std::string property,
         std::string bug, WrapperKnobs k, std::function<std::string(const Impl&)> witness) {
  out.push_back(mutant(std::move(name), ImplementationKind::kWrapper, c, std::move(property),
                       std::move(bug), wrapper_impl(make_knob_wrapper(k)),
                       wrapper_impl(make_knob_wrapper({})), std::move(witness)));
}

}  // namespace

WrapperUnderTest decorated_wrapper() { return make_knob_wrapper({}); }

void add_wrapper_mutants(std::vector<Mutant>& out) {
  add(out, "empty_batch_never_completes", BugClass::kFailureOrder, "EmptyBatchCompletes",
      "an empty batch gets an id and never completes", {.empty_batch_never_completes = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        TaskId id = s.w->submit_store_task({}, {});
        return wait_store(*s.w, id) ? "" : "an empty store never completed";
      }));
  {
    // Not a wrapper at all: the inner adapter stores the raw objects.
    WrapperUnderTest w;
    w.make = [](L2AdapterPtr inner, SerdeProcessorPtr serde,
                std::shared_ptr<L1Manager>) -> L2AdapterPtr {
      serde->close();
      return inner;
    };
    out.push_back(mutant(
        "skips_the_serde", ImplementationKind::kWrapper, BugClass::kData, "StoreLoadRoundTrip",
        "hands the raw objects to the inner adapter", wrapper_impl(w),
        wrapper_impl(make_knob_wrapper({})), with_wrapper([](WitnessStack& s) -> std::string {
          auto objs = witness_objects(2, 1);
          auto r = wait_store(*s.w, s.w->submit_store_task(witness_keys(2), objs));
          return r && r->bytes_transferred() == 2 * kWitnessElements
                     ? ""
                     : "2 objects stored " + std::to_string(r ? r->bytes_transferred() : 0) +
                           " bytes, not one per element";
        })));
  }
  add(out, "own_lookup_fd", BugClass::kWrapperSurface, "LookupFdIsInners",
      "a lookup fd of its own instead of the inner's", {.own_lookup_fd = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        return s.w->get_lookup_and_lock_event_fd() == s.mock->get_lookup_and_lock_event_fd()
                   ? ""
                   : "the lookup fd is not the inner's";
      }));
  add(out, "accepts_heterogeneous_batch", BugClass::kFailureOrder, "HomogeneityEnforced",
      "a batch of mixed layouts is turned into an empty one", {.accepts_heterogeneous = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        auto objs = witness_objects(2, 1);
        objs[1] = MemoryObj::allocate(MemoryLayoutDesc::single({3}, DType::kFloat32));
        try {
          s.w->submit_store_task(witness_keys(2), objs);
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a batch of two layouts was accepted";
      }));
  add(out, "homogeneity_by_byte_size", BugClass::kSizes, "HomogeneityEnforced",
      "a batch counts as homogeneous when its objects have objects[0]'s byte size, whatever "
      "their shapes and dtypes",
      {.homogeneity_by_byte_size = true}, with_wrapper([](WitnessStack& s) -> std::string {
        const MemoryLayoutDesc a = MemoryLayoutDesc::single({8}, DType::kFloat32);
        const MemoryLayoutDesc b = MemoryLayoutDesc::single({16}, DType::kBFloat16);
        try {
          s.w->submit_store_task(witness_keys(2), {MemoryObj::allocate(a), MemoryObj::allocate(b)});
        } catch (const std::invalid_argument&) {
          return {};
        }
        return "a batch of float32[8] and bfloat16[16] (same bytes) was accepted";
      }));
  add(out, "failed_store_succeeds", BugClass::kFailureOrder, "AllOrNothingStore",
      "a failed store is reported as a success", {.failed_store_succeeds = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        s.fill_l1();
        auto r = wait_store(*s.w, s.w->submit_store_task(witness_keys(2), witness_objects(2, 1)));
        return r && !r->is_successful() ? "" : "a store with a full L1 succeeded";
      }));
  add(out, "ignores_deserialize_failure", BugClass::kFailureOrder, "AllOrNothingLoad",
      "a failed deserialize is taken for a success", {.ignores_deserialize_failure = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(2);
        wait_store(*s.w, s.w->submit_store_task(keys, witness_objects(2, 1)));
        // Destinations of another layout: the deserializer must reject them.
        const MemoryLayoutDesc larger =
            MemoryLayoutDesc::single({2 * kWitnessElements}, DType::kFloat32);
        std::vector<MemoryObjPtr> dsts = {MemoryObj::allocate(larger), MemoryObj::allocate(larger)};
        auto bits = wait_load(*s.w, s.w->submit_load_task(keys, dsts));
        return bits && bits->none() ? ""
                                    : "a load whose deserialize failed reported " +
                                          (bits ? bits->to_string() : std::string("nothing"));
      }));
  add(out, "partial_load_reported_full", BugClass::kData, "PartialLoadKeepsBitmap",
      "any loaded key makes every key reported loaded", {.partial_becomes_full = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(2);
        wait_store(*s.w, s.w->submit_store_task({keys[0]}, witness_objects(1, 1)));
        auto bits = wait_load(*s.w, s.w->submit_load_task(keys, witness_objects(2, 0)));
        return bits && *bits == Bitmap(2, 1)
                   ? ""
                   : "1 stored key of 2 loaded as " + (bits ? bits->to_string() : std::string("?"));
      }));
  add(out, "leaks_temps", BugClass::kState, "TempsReleased",
      "one L1 temp per store, never released", {.leaks_temps = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        wait_store(*s.w, s.w->submit_store_task(witness_keys(2), witness_objects(2, 1)));
        std::this_thread::sleep_for(20ms);
        return s.l1->get_memory_usage().used_bytes == 0 ? "" : "L1 holds bytes after a store";
      }));
  add(out, "prefetches_lent_buffers", BugClass::kState, "LentBuffersReleasedOnFailure",
      "borrows a spare set of lent buffers for the next store with every store, and never "
      "gives the spare back",
      {.prefetches_lent_buffers = true},
      with_wrapper(
          [](WitnessStack& s) -> std::string {
            auto r =
                wait_store(*s.w, s.w->submit_store_task(witness_keys(2), witness_objects(2, 1)));
            if (!r || !r->is_successful()) return "a store failed";
            return s.mock->lent_bytes_outstanding() == 0
                       ? ""
                       : std::to_string(s.mock->lent_bytes_outstanding()) +
                             " lent bytes outstanding after a completed store";
          },
          /*lends=*/true));
  add(out, "caches_views_by_key", BugClass::kState, "StatefulModel",
      "memoizes the inner's load views by key (\"a view never changes\") and answers a key the "
      "inner misses from the memo, so a deleted or evicted key still loads",
      {.caches_views_by_key = true},
      with_wrapper(
          [](WitnessStack& s) -> std::string {
            const std::vector<ObjectKey> keys = witness_keys(2);
            auto r = wait_store(*s.w, s.w->submit_store_task(keys, witness_objects(2, 1)));
            if (!r || !r->is_successful()) return "a store failed";
            auto first = wait_load(*s.w, s.w->submit_load_task(keys, witness_objects(2, 0)));
            if (!first || !first->all()) return "2 stored keys did not load";
            s.w->delete_keys({keys[0]});
            auto again = wait_load(*s.w, s.w->submit_load_task(keys, witness_objects(2, 0)));
            return again && again->to_string() == "01"
                       ? ""
                       : "after deleting key 0 the load answered " +
                             (again ? again->to_string() : std::string("nothing"));
          },
          /*lends=*/true));
  add(out, "close_drops_in_flight_tasks", BugClass::kFailureOrder, "CloseFailsInFlightTasks",
      "tasks failed by close() never come out", {.close_drops_in_flight = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        TaskId id = s.w->submit_store_task(witness_keys(2), witness_objects(2, 1));
        s.w->close();
        auto done = s.w->pop_completed_store_tasks();
        return done.count(id) ? "" : "a store in flight at close() never completed";
      }));

  // Realistic bugs.
  add(out, "reports_serialized_bytes", BugClass::kData, "StoreBytesAreInners",
      "reports the bytes it serialized, not what the inner stored (keys it already held count)",
      {.reports_serialized_bytes = true}, with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(2);
        auto objs = witness_objects(2, 1);
        wait_store(*s.w, s.w->submit_store_task(keys, objs));
        auto r = wait_store(*s.w, s.w->submit_store_task(keys, objs));
        return r && r->bytes_transferred() == 0
                   ? ""
                   : "re-storing 2 keys the inner holds reported " +
                         std::to_string(r ? r->bytes_transferred() : 0) + " bytes";
      }));
  add(out, "usage_from_own_accounting", BugClass::kWrapperSurface, "PassThroughMatchesInner",
      "get_usage() counts the original objects' bytes instead of asking the inner",
      {.usage_from_own_accounting = true}, with_wrapper([](WitnessStack& s) -> std::string {
        wait_store(*s.w, s.w->submit_store_task(witness_keys(2), witness_objects(2, 1)));
        return s.w->get_usage().total_bytes_used == s.mock->get_usage().total_bytes_used
                   ? ""
                   : "usage " + std::to_string(s.w->get_usage().total_bytes_used) +
                         ", the inner holds " +
                         std::to_string(s.mock->get_usage().total_bytes_used);
      }));
  add(out, "listeners_kept_by_wrapper", BugClass::kWrapperSurface, "PassThroughMatchesInner",
      "keeps listeners itself and reports the original objects' sizes",
      {.listeners_kept_by_wrapper = true}, with_wrapper([](WitnessStack& s) -> std::string {
        auto l = std::make_shared<SizeListener>();
        s.w->register_listener(l);
        wait_store(*s.w, s.w->submit_store_task(witness_keys(1), witness_objects(1, 1)));
        return l->last_size == kWitnessElements
                   ? ""
                   : "a listener saw a stored size of " + std::to_string(l->last_size.load()) +
                         " for " + std::to_string(kWitnessElements) + " stored bytes";
      }));
  add(out, "unlock_not_forwarded", BugClass::kWrapperSurface, "PassThroughMatchesInner",
      "submit_unlock() is not passed to the inner adapter", {.unlock_not_forwarded = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(1);
        wait_store(*s.w, s.w->submit_store_task(keys, witness_objects(1, 1)));
        wait_lookup(*s.w, s.w->submit_lookup_and_lock_task(keys));
        s.w->submit_unlock(keys);
        std::this_thread::sleep_for(20ms);
        return s.mock->locked_key_count() == 0 ? "" : "an unlocked key is still locked";
      }));
  add(out, "no_global_eviction", BugClass::kWrapperSurface, "PassThroughMatchesInner",
      "supports_global_eviction() answers false whatever the inner says",
      {.no_global_eviction = true}, with_wrapper([](WitnessStack& s) -> std::string {
        return s.w->supports_global_eviction() == s.mock->supports_global_eviction()
                   ? ""
                   : "eviction support differs from the inner's";
      }));
  add(out, "close_leaves_serde_open", BugClass::kWrapperSurface, "CloseReleasesResources",
      "close() closes the inner adapter but not the serde processor",
      {.close_leaves_serde_open = true}, [](const Impl& i) -> std::string {
        ProcessResources before = ProcessResources::take();
        WitnessStack s(i.wrapper);
        wait_store(*s.w, s.w->submit_store_task(witness_keys(1), witness_objects(1, 1)));
        s.w->close();
        std::string leak = resources_left_over(before, 1s);
        return leak.empty() ? "" : "after close(): " + leak;
      });
  add(out, "temp_size_cached_from_first_layout", BugClass::kState, "StatefulModel",
      "sizes every temp from the first layout it was given", {.temp_size_cached = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        wait_store(*s.w, s.w->submit_store_task(witness_keys(1), witness_objects(1, 1)));
        const MemoryLayoutDesc big =
            MemoryLayoutDesc::single({4 * kWitnessElements}, DType::kFloat16);
        auto r = wait_store(*s.w,
                            s.w->submit_store_task(witness_keys(1, 9), {MemoryObj::allocate(big)}));
        return r && r->is_successful() ? "" : "a store of a larger layout after a small one failed";
      }));
  add(out, "resizes_inner_bitmap", BugClass::kWrapperSurface, "AllOrNothingLoad",
      "cuts or pads an inner bitmap of the wrong size to the batch instead of failing the load",
      {.resizes_inner_bitmap = true}, [](const Impl& i) -> std::string {
        // The scenario needs an inner that answers with a bitmap one bit too long.
        WitnessStack s(i.wrapper, /*long_bitmaps=*/true);
        auto keys = witness_keys(2);
        wait_store(*s.w, s.w->submit_store_task(keys, witness_objects(2, 1)));
        auto bits = wait_load(*s.w, s.w->submit_load_task(keys, witness_objects(2, 0)));
        return bits && bits->none() ? ""
                                    : "an inner bitmap of 3 bits for 2 keys gave " +
                                          (bits ? bits->to_string() : std::string("?"));
      });
  add(out, "keeps_load_destinations", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "keeps every load's destination objects until close()", {.keeps_load_destinations = true},
      with_wrapper([](WitnessStack& s) -> std::string {
        auto keys = witness_keys(1);
        wait_store(*s.w, s.w->submit_store_task(keys, witness_objects(1, 1)));
        auto dsts = witness_objects(1, 0);
        wait_load(*s.w, s.w->submit_load_task(keys, dsts));
        std::this_thread::sleep_for(20ms);
        return dsts[0].use_count() > 1 ? "a loaded destination is still referenced" : "";
      }));
  add(out, "lookup_answers_after_close", BugClass::kWrapperSurface, "CloseFailsInFlightTasks",
      "query_lookup_and_lock_result() after close() answers \"not yet\" for a lookup whose "
      "locks close() dropped",
      {.lookup_answers_after_close = true}, with_wrapper([](WitnessStack& s) -> std::string {
        TaskId id = s.w->submit_lookup_and_lock_task(witness_keys(1));
        wait_readable(s.w->get_lookup_and_lock_event_fd(), 5s);
        s.w->close();
        try {
          (void)s.w->query_lookup_and_lock_result(id);
        } catch (const std::logic_error&) {
          return "";
        }
        return "query_lookup_and_lock_result() after close() did not throw";
      }));
  add(out, "drops_results_at_close", BugClass::kFailureOrder, "CloseFailsInFlightTasks",
      "close() throws away results that completed and were not taken",
      {.drops_results_at_close = true}, with_wrapper([](WitnessStack& s) -> std::string {
        TaskId id = s.w->submit_store_task(witness_keys(1), witness_objects(1, 1));
        wait_readable(s.w->get_store_event_fd(), 5s);
        s.w->close();
        return s.w->pop_completed_store_tasks().count(id)
                   ? ""
                   : "a completed store is gone after close()";
      }));
}

}  // namespace lmcache::conformance::selftest
