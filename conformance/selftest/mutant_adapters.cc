// Adapter mutants: decorators of the reference mock adapter, each breaking one rule.
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

struct AdapterKnobs {
  bool same_fd = false;               // the load fd is the store fd
  bool unknown_id_throws = false;     // query_load_result of an id never issued throws
  bool answer_twice = false;          // lookup results are handed out again
  bool silent_load_fd = false;        // the load fd is never signalled
  bool zero_bytes = false;            // stores report 0 bytes transferred
  bool lookup_all_present = false;    // lookup bitmaps say every key is present
  bool load_ignores_bitmap = false;   // load bitmaps say every key was loaded
  bool lookup_does_not_lock = false;  // hits are unlocked right away
  bool usage_doubled = false;
  bool drops_listeners = false;
  bool delete_is_noop = false;
  bool close_throws_twice = false;
  bool close_leaks_fd = false;
};

class KnobAdapter final : public ForwardingL2Adapter {
 public:
  KnobAdapter(L2AdapterPtr inner, AdapterKnobs k) : ForwardingL2Adapter(std::move(inner)), k_(k) {
    if (k_.silent_load_fd || k_.close_leaks_fd) extra_ = std::make_unique<EventNotifier>();
  }

  int get_load_event_fd() const override {
    if (k_.same_fd) return ForwardingL2Adapter::get_store_event_fd();
    if (k_.silent_load_fd) return extra_->fd();
    return ForwardingL2Adapter::get_load_event_fd();
  }

  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    auto done = ForwardingL2Adapter::pop_completed_store_tasks();
    if (k_.zero_bytes) {
      for (auto& [id, r] : done) {
        if (r.is_successful()) r = L2StoreResult::success(0);
      }
    }
    return done;
  }

  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override {
    TaskId id = ForwardingL2Adapter::submit_lookup_and_lock_task(keys);
    std::lock_guard lock(mu_);
    lookup_keys_[id] = keys;
    return id;
  }

  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override {
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_lookup_and_lock_result(id);
    std::lock_guard lock(mu_);
    if (!bits) {
      if (k_.answer_twice && answered_.count(id)) return answered_[id];
      return bits;
    }
    if (k_.answer_twice) answered_[id] = *bits;
    if (k_.lookup_does_not_lock) {
      std::vector<ObjectKey> hits;
      for (std::size_t i : bits->set_indices()) hits.push_back(lookup_keys_[id][i]);
      ForwardingL2Adapter::submit_unlock(hits);
    }
    if (k_.lookup_all_present) bits = Bitmap(bits->size(), bits->size());
    return bits;
  }

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    TaskId id = ForwardingL2Adapter::submit_load_task(keys, objects);
    std::lock_guard lock(mu_);
    issued_loads_.insert(id);
    return id;
  }

  std::optional<Bitmap> query_load_result(TaskId id) override {
    if (k_.unknown_id_throws) {
      std::lock_guard lock(mu_);
      if (!issued_loads_.count(id)) throw std::out_of_range("no load task " + std::to_string(id));
    }
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (bits && k_.load_ignores_bitmap) bits = Bitmap(bits->size(), bits->size());
    return bits;
  }

  void delete_keys(const std::vector<ObjectKey>& keys) override {
    if (!k_.delete_is_noop) ForwardingL2Adapter::delete_keys(keys);
  }

  AdapterUsage get_usage() const override {
    AdapterUsage u = ForwardingL2Adapter::get_usage();
    if (k_.usage_doubled) u.total_bytes_used *= 2;
    return u;
  }

  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    if (!k_.drops_listeners) ForwardingL2Adapter::register_listener(std::move(listener));
  }

  void close() override {
    std::lock_guard lock(close_mu_);
    if (closed_ && k_.close_throws_twice) throw std::logic_error("adapter already closed");
    closed_ = true;
    ForwardingL2Adapter::close();
    if (extra_ && !k_.close_leaks_fd) extra_->close();
  }

 private:
  const AdapterKnobs k_;
  std::unique_ptr<EventNotifier> extra_;
  std::mutex mu_;
  std::map<TaskId, std::vector<ObjectKey>> lookup_keys_;
  std::map<TaskId, Bitmap> answered_;
  std::set<TaskId> issued_loads_;
  std::mutex close_mu_;
  bool closed_ = false;
};

AdapterUnderTest MakeKnobAdapter(std::string name, AdapterKnobs k) {
  AdapterUnderTest a;
  a.name = std::move(name);
  a.make = [k]() -> L2AdapterPtr {
    return std::make_unique<KnobAdapter>(
        std::make_unique<MockL2Adapter>(MockL2AdapterOptions{1ull << 30, 1ull << 40}), k);
  };
  a.capabilities.reports_lock_count = true;
  return a;
}

Mutant AdapterMutant(std::string name, std::string property, AdapterKnobs k) {
  Mutant m;
  m.name = name;
  m.kind = ImplementationKind::kAdapter;
  m.property = std::move(property);
  m.adapter = MakeKnobAdapter(std::move(name), k);
  return m;
}

}  // namespace

AdapterUnderTest DecoratedMockAdapter() { return MakeKnobAdapter("decorated_mock", {}); }

void AddAdapterMutants(std::vector<Mutant>& out) {
  out.push_back(AdapterMutant("load_fd_is_store_fd", "DistinctEventFds", {.same_fd = true}));
  out.push_back(
      AdapterMutant("unknown_load_id_throws", "UnknownIdsGiveNone", {.unknown_id_throws = true}));
  out.push_back(AdapterMutant("lookup_answers_twice", "OneShotResults", {.answer_twice = true}));
  out.push_back(
      AdapterMutant("load_fd_never_signalled", "EachKindSignalsItsFd", {.silent_load_fd = true}));
  out.push_back(
      AdapterMutant("store_reports_zero_bytes", "StoreReportsBytes", {.zero_bytes = true}));
  out.push_back(AdapterMutant("lookup_reports_absent_keys", "LookupReportsPresence",
                              {.lookup_all_present = true}));
  out.push_back(
      AdapterMutant("load_ignores_bitmap", "PartialLoadBitmap", {.load_ignores_bitmap = true}));
  out.push_back(
      AdapterMutant("lookup_does_not_lock", "LookupLocks", {.lookup_does_not_lock = true}));
  out.push_back(
      AdapterMutant("usage_does_not_match", "UsageMatchesStoredBytes", {.usage_doubled = true}));
  out.push_back(
      AdapterMutant("listeners_not_called", "ListenersCalled", {.drops_listeners = true}));
  out.push_back(AdapterMutant("delete_does_nothing", "StatefulModel", {.delete_is_noop = true}));
  out.push_back(
      AdapterMutant("second_close_throws", "CloseIsIdempotent", {.close_throws_twice = true}));
  out.push_back(
      AdapterMutant("adapter_close_leaks_fd", "CloseReleasesResources", {.close_leaks_fd = true}));
}

}  // namespace lmcache::conformance::selftest
