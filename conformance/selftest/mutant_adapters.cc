// Adapter mutants: decorators of the reference mock adapter, each adding one bug.
// (About 925 lines, on purpose: one family, every adapter mutant beside its witness scenario, so
// that a mutant and the scenario that proves it real are read together; the other kinds live in
// mutant_connectors.cc, mutant_processors.cc and their siblings.)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "lmcache/conformance/process_stats.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

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
  // Realistic bugs.
  bool bitmap_in_one_byte = false;       // result bitmaps kept in a uint8_t: bits 8+ lost
  bool stores_whole_buffer = false;      // stores physical_size() bytes, not size()
  bool load_leaves_size_unset = false;   // a load leaves the destination's size() at its capacity
  bool key_ignores_kv_rank = false;      // the storage key is built without kv_rank
  bool racy_store_ids = false;           // own store ids from a read-then-write counter
  bool pop_hands_out_twice = false;      // pop copies the results, then erases them in a 2nd step
  bool racy_usage_counter = false;       // own usage counter, updated read-then-write
  bool unlock_dedups_keys = false;       // a key twice in one unlock releases one lock
  bool usage_counted_at_submit = false;  // "is it new?" decided at submit: two stores in flight
                                         // count a key twice
  bool keeps_caller_objects = false;     // every stored / loaded object kept in a history
  bool thread_per_load = false;          // a helper thread per load, joined only by close()
  bool flaky_every_40th_load = false;    // one load in 40 (process-wide) loses its first hit
  // Lent store buffers (the mock lends; these break it).
  bool lends_first_buffer_again = false;  // every later lend hands out the first buffer again
  bool lent_bytes_only_grow = false;      // lent_bytes_outstanding() counts lends, never returns
  bool lent_keys_visible = false;         // lookups report keys present as soon as they are lent
  bool views_recycled_on_delete = false;  // a delete zeroes the memory of views still held
  // Issue 25's classes.
  bool truncates_past_64k = false;      // a fixed 64 KiB slot per object: the rest is dropped
  bool empty_values_missing = false;    // a 0-byte value reads as "no such key" on lookup
  bool drops_results_at_close = false;  // untaken store and load results dropped by close()
  bool load_ids_16_bit = false;         // load ids kept in 16 bits
};

std::atomic<std::uint64_t> g_loads{0};

ObjectKey without_rank(const ObjectKey& k) {
  return ObjectKey(k.chunk_hash(), k.model_name(), 0, k.object_group_id(), k.cache_salt());
}

class KnobAdapter final : public ViewRewritingAdapter {
 public:
  KnobAdapter(L2AdapterPtr inner, AdapterKnobs k) : ViewRewritingAdapter(std::move(inner)), k_(k) {
    if (k_.silent_load_fd || k_.close_leaks_fd) extra_ = std::make_unique<EventNotifier>();
  }
  ~KnobAdapter() override { join_helpers(); }

  int get_load_event_fd() const override {
    if (k_.same_fd) return ForwardingL2Adapter::get_store_event_fd();
    if (k_.silent_load_fd) return extra_->fd();
    return ForwardingL2Adapter::get_load_event_fd();
  }

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    std::vector<MemoryObjPtr> objs = objects;
    if (k_.stores_whole_buffer) {
      for (auto& o : objs) {
        auto whole = std::make_shared<MemoryObj>(o, o->data(), o->physical_size(), o->layout());
        whole->set_used_size(o->physical_size());
        o = whole;
      }
    }
    if (k_.truncates_past_64k) {
      for (auto& o : objs) {
        if (o->size() <= kSlotBytes) continue;
        auto slot = std::make_shared<MemoryObj>(o, o->data(), o->physical_size(), o->layout());
        slot->set_used_size(kSlotBytes);
        o = slot;
      }
    }
    if (k_.empty_values_missing) {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (objects[i]->size() == 0) empty_keys_.insert(keys[i]);
      }
    }
    keep(objects);
    if (k_.racy_usage_counter) {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < keys.size(); ++i) sizes_[keys[i]] = objects[i]->size();
    }
    std::vector<std::uint64_t> fresh_sizes;
    if (k_.usage_counted_at_submit) {
      std::lock_guard lock(mu_);
      std::unordered_set<ObjectKey> seen;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!present_.count(keys[i]) && seen.insert(keys[i]).second) {
          fresh_sizes.push_back(objects[i]->size());
        }
      }
    }
    TaskId id = 0;
    if (k_.racy_store_ids) {
      id = next_id_.load();  // read, then write later: concurrent submitters collide
      std::this_thread::sleep_for(1ms);
      next_id_.store(id + 1);
    }
    TaskId inner = ForwardingL2Adapter::submit_store_task(map_keys(keys), objs);
    std::lock_guard lock(mu_);
    store_keys_[inner] = {keys, fresh_sizes};
    if (!k_.racy_store_ids) return inner;
    outer_of_[inner] = id;
    return id;
  }

  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    std::map<TaskId, L2StoreResult> done;
    std::uint64_t added = 0;
    for (auto& [inner, r] : ForwardingL2Adapter::pop_completed_store_tasks()) {
      std::lock_guard lock(mu_);
      TaskId id = k_.racy_store_ids ? outer_of_[inner] : inner;
      L2StoreResult result = r;
      if (k_.zero_bytes && result.is_successful()) result = L2StoreResult::success(0);
      auto& [keys, fresh] = store_keys_[inner];
      if (result.is_successful()) {
        for (auto& key : keys) {
          if (present_.insert(key).second) added += sizes_[key];
        }
        if (k_.usage_counted_at_submit) {
          for (auto s : fresh) own_usage_ += s;
        }
      }
      store_keys_.erase(inner);
      done.emplace(id, result);
    }
    if (k_.racy_usage_counter && added > 0) {
      std::uint64_t u = racy_usage_.load();  // read, then write later
      std::this_thread::yield();
      racy_usage_.store(u + added);
    }
    if (!k_.pop_hands_out_twice) return done;
    {
      std::lock_guard lock(mu_);
      completed_.insert(done.begin(), done.end());
    }
    std::map<TaskId, L2StoreResult> copy;
    {
      std::lock_guard lock(mu_);
      copy = completed_;  // step 1: take a copy
    }
    // A realistic gap between the steps (a yield alone was missed under TSan's scheduling).
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard lock(mu_);  // step 2: erase what was copied
    for (auto& [id, r] : copy) completed_.erase(id);
    return copy;
  }

  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override {
    TaskId id = ForwardingL2Adapter::submit_lookup_and_lock_task(map_keys(keys));
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
      for (std::size_t i : bits->set_indices()) hits.push_back(map_key(lookup_keys_[id][i]));
      ForwardingL2Adapter::submit_unlock(hits);
    }
    if (k_.lookup_all_present) bits = Bitmap(bits->size(), bits->size());
    if (k_.lent_keys_visible) {
      const std::vector<ObjectKey>& asked = lookup_keys_[id];
      for (std::size_t i = 0; i < asked.size() && i < bits->size(); ++i) {
        if (lent_keys_.count(asked[i])) bits->set(i);
      }
    }
    if (k_.bitmap_in_one_byte) bits = low_byte(*bits);
    if (k_.empty_values_missing) {
      const std::vector<ObjectKey>& asked = lookup_keys_[id];
      for (std::size_t i = 0; i < asked.size() && i < bits->size(); ++i) {
        if (empty_keys_.count(asked[i])) bits->clear(i);
      }
    }
    return bits;
  }

  void submit_unlock(const std::vector<ObjectKey>& keys) override {
    std::vector<ObjectKey> ks = map_keys(keys);
    if (k_.unlock_dedups_keys) {
      std::vector<ObjectKey> unique;
      for (auto& key : ks) {
        if (std::find(unique.begin(), unique.end(), key) == unique.end()) unique.push_back(key);
      }
      ks = unique;
    }
    ForwardingL2Adapter::submit_unlock(ks);
  }

  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    keep(objects);
    TaskId id = ForwardingL2Adapter::submit_load_task(map_keys(keys), objects);
    std::lock_guard lock(mu_);
    issued_loads_.insert(id);
    if (k_.load_ids_16_bit) {
      const TaskId short_id = id & 0xFFFF;
      inner_load_of_[short_id] = id;  // a later task with the same low bits takes the slot
      return short_id;
    }
    if (k_.load_leaves_size_unset) load_dsts_[id] = objects;
    if (k_.thread_per_load) {
      helpers_.emplace_back([this] {
        std::unique_lock l(helper_mu_);
        helper_cv_.wait(l, [&] { return helpers_stop_; });
      });
    }
    return id;
  }

  std::optional<Bitmap> query_load_result(TaskId id) override {
    if (k_.unknown_id_throws) {
      std::lock_guard lock(mu_);
      if (!issued_loads_.count(id)) throw std::out_of_range("no load task " + std::to_string(id));
    }
    if (k_.load_ids_16_bit) {
      std::lock_guard lock(mu_);
      auto it = inner_load_of_.find(id);
      if (it != inner_load_of_.end()) id = it->second;
    }
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (!bits) return bits;
    if (k_.load_ignores_bitmap) bits = Bitmap(bits->size(), bits->size());
    if (k_.bitmap_in_one_byte) bits = low_byte(*bits);
    if (k_.flaky_every_40th_load && ++g_loads % 40 == 0) {
      auto hits = bits->set_indices();
      if (!hits.empty()) bits->clear(hits.front());
    }
    if (k_.load_leaves_size_unset) {
      std::lock_guard lock(mu_);
      for (auto& o : load_dsts_[id]) o->set_used_size(o->physical_size());
      load_dsts_.erase(id);
    }
    return bits;
  }

  void delete_keys(const std::vector<ObjectKey>& keys) override {
    if (k_.racy_usage_counter) {
      // What the deleted keys held, read before the delete, subtracted read-then-write.
      std::uint64_t freed = 0;
      {
        std::lock_guard lock(mu_);
        for (auto& key : keys) {
          if (present_.erase(key)) freed += sizes_[key];
        }
      }
      std::uint64_t u = racy_usage_.load();
      std::this_thread::yield();
      racy_usage_.store(u - freed);
    }
    if (k_.usage_counted_at_submit) {
      std::lock_guard lock(mu_);
      for (auto& key : keys) present_.erase(key);
    }
    if (k_.views_recycled_on_delete) {
      std::lock_guard lock(mu_);
      for (auto& key : keys) {
        for (const MemoryObjPtr& v : views_of_[key]) std::memset(v->data(), 0, v->size());
        views_of_.erase(key);
      }
    }
    if (k_.empty_values_missing) {
      std::lock_guard lock(mu_);
      for (auto& key : keys) empty_keys_.erase(key);
    }
    if (!k_.delete_is_noop) ForwardingL2Adapter::delete_keys(map_keys(keys));
  }

  AdapterUsage get_usage() const override {
    AdapterUsage u = ForwardingL2Adapter::get_usage();
    if (k_.usage_doubled) u.total_bytes_used *= 2;
    if (k_.usage_counted_at_submit) {
      std::lock_guard lock(mu_);
      u.total_bytes_used = own_usage_;
    }
    if (k_.racy_usage_counter) u.total_bytes_used = racy_usage_.load();
    return u;
  }

  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    std::vector<MemoryObjPtr> lent = ForwardingL2Adapter::lend_store_buffers(keys, layout);
    std::lock_guard lock(mu_);
    for (const auto& b : lent) lent_total_ += b->physical_size();
    if (k_.lent_keys_visible && !lent.empty()) lent_keys_.insert(keys.begin(), keys.end());
    if (k_.lends_first_buffer_again && !lent.empty()) {
      // One ring per buffer size whose index never advances: the first buffer lent of a size
      // is lent again for that size.
      auto [it, first] = first_lent_.try_emplace(lent.front()->physical_size(), lent.front());
      if (!first) lent.front() = it->second;
    }
    return lent;
  }

  // Load views pass through (the mock lends them); the knob recycles their memory on delete.
  std::vector<ObjectKey> inner_keys(const std::vector<ObjectKey>& keys) const override {
    return map_keys(keys);
  }
  void rewrite_views(const std::vector<ObjectKey>& asked, L2LoadViews& r) override {
    if (!k_.views_recycled_on_delete) return;
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < asked.size() && i < r.views.size(); ++i) {
      if (r.views[i]) views_of_[asked[i]].push_back(r.views[i]);
    }
  }

  std::uint64_t lent_bytes_outstanding() const override {
    if (!k_.lent_bytes_only_grow) return ForwardingL2Adapter::lent_bytes_outstanding();
    std::lock_guard lock(mu_);
    return lent_total_;
  }

  void register_listener(std::shared_ptr<L2AdapterListener> listener) override {
    if (!k_.drops_listeners) ForwardingL2Adapter::register_listener(std::move(listener));
  }

  void close() override {
    {
      std::lock_guard lock(close_mu_);
      if (closed_ && k_.close_throws_twice) throw std::logic_error("adapter already closed");
      closed_ = true;
    }
    ForwardingL2Adapter::close();
    if (k_.drops_results_at_close) {
      (void)ForwardingL2Adapter::pop_completed_store_tasks();
      std::set<TaskId> loads;
      {
        std::lock_guard lock(mu_);
        loads = issued_loads_;
      }
      for (TaskId id : loads) (void)ForwardingL2Adapter::query_load_result(id);
    }
    if (extra_ && !k_.close_leaks_fd) extra_->close();
    join_helpers();
    std::lock_guard lock(mu_);
    history_.clear();
    first_lent_.clear();
  }

 private:
  static Bitmap low_byte(const Bitmap& bits) {
    Bitmap out(bits.size());
    for (std::size_t i = 0; i < std::min<std::size_t>(8, bits.size()); ++i) {
      if (bits.test(i)) out.set(i);
    }
    return out;
  }
  ObjectKey map_key(const ObjectKey& k) const {
    return k_.key_ignores_kv_rank ? without_rank(k) : k;
  }
  std::vector<ObjectKey> map_keys(const std::vector<ObjectKey>& keys) const {
    if (!k_.key_ignores_kv_rank) return keys;
    std::vector<ObjectKey> out;
    for (auto& k : keys) out.push_back(without_rank(k));
    return out;
  }
  void keep(const std::vector<MemoryObjPtr>& objects) {
    if (!k_.keeps_caller_objects) return;
    std::lock_guard lock(mu_);
    history_.insert(history_.end(), objects.begin(), objects.end());
  }
  void join_helpers() {
    {
      std::lock_guard l(helper_mu_);
      helpers_stop_ = true;
    }
    helper_cv_.notify_all();
    std::vector<std::thread> helpers;
    {
      std::lock_guard lock(mu_);
      helpers.swap(helpers_);
    }
    for (auto& t : helpers) t.join();
  }

  static constexpr std::size_t kSlotBytes = 64u << 10;
  const AdapterKnobs k_;
  std::unique_ptr<EventNotifier> extra_;
  std::unordered_set<ObjectKey> empty_keys_;
  std::map<TaskId, TaskId> inner_load_of_;
  mutable std::mutex mu_;
  std::map<TaskId, std::vector<ObjectKey>> lookup_keys_;
  std::map<TaskId, Bitmap> answered_;
  std::set<TaskId> issued_loads_;
  std::map<TaskId, std::vector<MemoryObjPtr>> load_dsts_;
  std::map<TaskId, std::pair<std::vector<ObjectKey>, std::vector<std::uint64_t>>> store_keys_;
  std::map<TaskId, TaskId> outer_of_;
  std::map<TaskId, L2StoreResult> completed_;
  std::unordered_set<ObjectKey> present_;
  std::unordered_map<ObjectKey, std::uint64_t> sizes_;
  std::uint64_t own_usage_ = 0;
  std::atomic<std::uint64_t> racy_usage_{0};
  std::atomic<TaskId> next_id_{0};
  std::vector<MemoryObjPtr> history_;
  std::uint64_t lent_total_ = 0;
  std::unordered_map<ObjectKey, std::vector<MemoryObjPtr>> views_of_;
  std::map<std::size_t, MemoryObjPtr> first_lent_;
  std::unordered_set<ObjectKey> lent_keys_;
  std::vector<std::thread> helpers_;
  std::mutex helper_mu_;
  std::condition_variable helper_cv_;
  bool helpers_stop_ = false;
  std::mutex close_mu_;
  bool closed_ = false;
};

AdapterUnderTest make_knob_adapter(AdapterKnobs k) {
  AdapterUnderTest a;
  a.name = "decorated_mock";
  a.make = [k]() -> L2AdapterPtr {
    return std::make_unique<KnobAdapter>(
        std::make_unique<MockL2Adapter>(MockL2AdapterOptions{.max_capacity_bytes = 1ull << 30,
                                                             .bandwidth_bytes_per_sec = 1ull << 40,
                                                             .lend_load_views = true}),
        k);
  };
  a.capabilities.reports_lock_count = true;
  return a;
}

Impl adapter_impl(AdapterKnobs k) {
  Impl i;
  i.adapter = make_knob_adapter(k);
  return i;
}

// ---------------------------------------------------------------------------------------------
// Witness scenarios.

ObjectKey key(std::uint32_t i, std::int64_t rank = 0) {
  return ObjectKey(int_hash_to_bytes(i), "witness-model", rank);
}

MemoryObjPtr object(std::uint8_t fill, std::size_t bytes = 32) {
  MemoryObjPtr o = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8));
  std::memset(o->data(), fill, bytes);
  return o;
}

std::optional<L2StoreResult> store(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                                   const std::vector<MemoryObjPtr>& objs) {
  TaskId id = a.submit_store_task(keys, objs);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto done = a.pop_completed_store_tasks();
    if (done.count(id)) return done.at(id);
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::optional<Bitmap> load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& dsts) {
  TaskId id = a.submit_load_task(keys, dsts);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto b = a.query_load_result(id)) return b;
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::optional<Bitmap> lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& keys) {
  TaskId id = a.submit_lookup_and_lock_task(keys);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto b = a.query_lookup_and_lock_result(id)) return b;
    std::this_thread::sleep_for(200us);
  }
  return std::nullopt;
}

std::uint64_t locked(const L2AdapterInterface& a) {
  return a.report_status().value("locked_key_count", std::uint64_t{0});
}

using AdapterWitness = std::function<std::string(L2AdapterInterface&)>;

std::function<std::string(const Impl&)> with_adapter(AdapterWitness w) {
  return [w](const Impl& i) {
    L2AdapterPtr a = i.adapter.make();
    std::string r = w(*a);
    try {
      a->close();
    } catch (...) {  // the second_close_throws mutant
    }
    return r;
  };
}

void add(std::vector<Mutant>& out, std::string name, BugClass c, std::string property,
         std::string bug, AdapterKnobs k, std::function<std::string(const Impl&)> witness) {
  out.push_back(mutant(std::move(name), ImplementationKind::kAdapter, c, std::move(property),
                       std::move(bug), adapter_impl(k), adapter_impl({}), std::move(witness)));
}

std::string store_then_check(L2AdapterInterface& a, std::size_t n) {
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> objs;
  for (std::uint32_t i = 0; i < n; ++i) {
    keys.push_back(key(i));
    objs.push_back(object(static_cast<std::uint8_t>(i)));
  }
  auto r = store(a, keys, objs);
  if (!r || !r->is_successful()) return "a store failed";
  return {};
}

}  // namespace

AdapterUnderTest decorated_mock_adapter() { return make_knob_adapter({}); }

void add_adapter_mutants(std::vector<Mutant>& out) {
  add(out, "load_fd_is_store_fd", BugClass::kFailureOrder, "DistinctEventFds",
      "the load fd is the store fd", {.same_fd = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        return a.get_load_event_fd() == a.get_store_event_fd() ? "load fd == store fd" : "";
      }));
  add(out, "unknown_load_id_throws", BugClass::kFailureOrder, "UnknownIdsGiveNone",
      "a load query of an id never issued throws", {.unknown_id_throws = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        try {
          a.query_load_result(999);
        } catch (const std::exception& e) {
          return std::string("threw: ") + e.what();
        }
        return {};
      }));
  add(out, "lookup_answers_twice", BugClass::kFailureOrder, "OneShotResults",
      "lookup results are handed out again", {.answer_twice = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId id = a.submit_lookup_and_lock_task({key(1)});
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (!a.query_lookup_and_lock_result(id) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        return a.query_lookup_and_lock_result(id) ? "a lookup answered twice" : "";
      }));
  add(out, "load_fd_never_signalled", BugClass::kFailureOrder, "EachKindSignalsItsFd",
      "the load fd is a fd nobody signals", {.silent_load_fd = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        load(a, {key(1)}, {object(0)});
        return wait_readable(a.get_load_event_fd(), 200ms) ? "" : "a load never signalled";
      }));
  add(out, "store_reports_zero_bytes", BugClass::kData, "StoreReportsBytes",
      "stores report 0 bytes transferred", {.zero_bytes = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto r = store(a, {key(1)}, {object(1)});
        return r && r->bytes_transferred() == 32 ? ""
                                                 : "a store of 32 new bytes reported another count";
      }));
  add(out, "lookup_reports_absent_keys", BugClass::kData, "LookupReportsPresence",
      "lookups report every key present", {.lookup_all_present = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto b = lookup(a, {key(1)});
        return b && !b->test(0) ? "" : "an absent key was reported present";
      }));
  add(out, "load_ignores_bitmap", BugClass::kData, "PartialLoadBitmap",
      "loads report every key loaded", {.load_ignores_bitmap = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        auto b = load(a, {key(1)}, {object(0)});
        return b && !b->test(0) ? "" : "an absent key was reported loaded";
      }));
  add(out, "lookup_does_not_lock", BugClass::kState, "LookupLocks",
      "lookup hits are unlocked at once", {.lookup_does_not_lock = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        lookup(a, {key(0)});
        std::this_thread::sleep_for(20ms);
        return locked(a) == 1 ? "" : "a lookup hit holds no lock";
      }));
  add(out, "usage_does_not_match", BugClass::kData, "UsageMatchesStoredBytes",
      "usage reports twice the bytes held", {.usage_doubled = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        return a.get_usage().total_bytes_used == 32 ? "" : "32 stored bytes, other usage";
      }));
  add(out, "listeners_not_called", BugClass::kData, "ListenersCalled",
      "register_listener() drops the listener", {.drops_listeners = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        struct Counting : L2AdapterListener {
          std::atomic<int> stored{0};
          void on_l2_keys_stored(const std::vector<ObjectKey>& k,
                                 const std::vector<std::uint64_t>&) override {
            stored += static_cast<int>(k.size());
          }
          void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {}
          void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                                  const std::vector<std::uint64_t>&) override {}
        };
        auto l = std::make_shared<Counting>();
        a.register_listener(l);
        store_then_check(a, 1);
        return l->stored == 1 ? "" : "the listener saw no store";
      }));
  add(out, "delete_does_nothing", BugClass::kState, "StatefulModel", "delete_keys() is a no-op",
      {.delete_is_noop = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        a.delete_keys({key(0)});
        auto b = lookup(a, {key(0)});
        return b && !b->test(0) ? "" : "a deleted key is still found";
      }));
  add(out, "second_close_throws", BugClass::kFailureOrder, "CloseIsIdempotent",
      "a second close() throws", {.close_throws_twice = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        a.close();
        try {
          a.close();
        } catch (const std::exception& e) {
          return std::string("a second close() threw: ") + e.what();
        }
        return {};
      }));
  add(out, "adapter_close_leaks_fd", BugClass::kState, "CloseReleasesResources",
      "close() leaves an eventfd open", {.close_leaks_fd = true}, [](const Impl& i) -> std::string {
        ProcessResources before = ProcessResources::take();
        L2AdapterPtr a = i.adapter.make();
        a->close();
        std::string leak = resources_left_over(before, 1s);
        return leak.empty() ? "" : "after close(): " + leak;
      });

  // Realistic bugs.
  add(out, "bitmap_in_one_byte", BugClass::kSizes, "PartialLoadBitmap",
      "result bitmaps are built in a uint8_t: keys past the 8th are never reported",
      {.bitmap_in_one_byte = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 9);
        std::vector<ObjectKey> keys;
        std::vector<MemoryObjPtr> dsts;
        for (std::uint32_t i = 0; i < 9; ++i) {
          keys.push_back(key(i));
          dsts.push_back(object(0));
        }
        auto b = load(a, keys, dsts);
        return b && b->all() ? ""
                             : "a load of 9 stored keys gave " +
                                   (b ? b->to_string() : std::string("nothing"));
      }));
  add(out, "stores_whole_buffer", BugClass::kSizes, "StoreReportsBytes",
      "stores physical_size() bytes of a narrowed object instead of its size()",
      {.stores_whole_buffer = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(7, 64);
        o->set_used_size(10);
        auto r = store(a, {key(1)}, {o});
        return r && r->bytes_transferred() == 10
                   ? ""
                   : "an object narrowed to 10 bytes stored " +
                         std::to_string(r ? r->bytes_transferred() : 0);
      }));
  add(out, "load_leaves_size_unset", BugClass::kSizes, "PartialLoadBitmap",
      "a load leaves the destination's size() at its capacity instead of the stored length",
      {.load_leaves_size_unset = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(7, 64);
        o->set_used_size(10);
        store(a, {key(1)}, {o});
        MemoryObjPtr d = object(0, 64);
        load(a, {key(1)}, {d});
        return d->size() == 10
                   ? ""
                   : "a load of 10 stored bytes left size() " + std::to_string(d->size());
      }));
  add(out, "key_ignores_kv_rank", BugClass::kSizes, "LookupReportsPresence",
      "builds its storage key from hash, model, group and salt, not kv_rank",
      {.key_ignores_kv_rank = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store(a, {key(1, 0)}, {object(1)});
        auto b = lookup(a, {key(1, 3)});
        return b && !b->test(0) ? "" : "a key of another kv_rank was found";
      }));
  add(out, "racy_store_ids", BugClass::kConcurrency, "ConcurrentSubmitters",
      "store ids come from a read-then-write counter", {.racy_store_ids = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        std::vector<TaskId> ids(4);
        std::latch start(4);
        std::vector<std::thread> pool;
        for (std::uint32_t t = 0; t < 4; ++t) {
          pool.emplace_back([&, t] {
            start.arrive_and_wait();
            ids[t] = a.submit_store_task({key(t)}, {object(1)});
          });
        }
        for (auto& th : pool) th.join();
        return std::set<TaskId>(ids.begin(), ids.end()).size() == 4 ? "" : "repeated store ids";
      }));
  add(out, "pop_hands_out_twice", BugClass::kConcurrency, "ConcurrentSubmitters",
      "pop copies the completed results, then erases them in a second step: two threads "
      "popping at once both get them",
      {.pop_hands_out_twice = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        for (int round = 0; round < 200; ++round) {
          a.submit_store_task({key(static_cast<std::uint32_t>(round))}, {object(1)});
          std::this_thread::sleep_for(1ms);
          std::map<TaskId, L2StoreResult> got[2];
          std::latch start(2);
          std::thread t0([&] {
            start.arrive_and_wait();
            got[0] = a.pop_completed_store_tasks();
          });
          std::thread t1([&] {
            start.arrive_and_wait();
            got[1] = a.pop_completed_store_tasks();
          });
          t0.join();
          t1.join();
          for (auto& [id, r] : got[0]) {
            if (got[1].count(id)) return "a store result was handed to both poppers";
          }
        }
        return {};
      }));
  add(out, "racy_usage_counter", BugClass::kConcurrency, "ConcurrentSubmitters",
      "keeps its own usage counter and subtracts deletes read-then-write",
      {.racy_usage_counter = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        for (int round = 0; round < 50; ++round) {
          std::vector<ObjectKey> keys;
          std::vector<MemoryObjPtr> objs;
          for (std::uint32_t i = 0; i < 8; ++i) {
            keys.push_back(key(100 * static_cast<std::uint32_t>(round) + i));
            objs.push_back(object(1));
          }
          store(a, keys, objs);
          std::latch start(4);
          std::vector<std::thread> pool;
          for (std::size_t t = 0; t < 4; ++t) {
            pool.emplace_back([&, t] {
              start.arrive_and_wait();
              a.delete_keys({keys[2 * t], keys[2 * t + 1]});
            });
          }
          for (auto& th : pool) th.join();
          if (a.get_usage().total_bytes_used != 0) {
            return "after 4 threads deleted every key at once, usage reads " +
                   std::to_string(a.get_usage().total_bytes_used);
          }
        }
        return {};
      }));
  add(out, "lock_leaked_on_duplicate_keys", BugClass::kFailureOrder, "LookupLocks",
      "a key twice in one lookup takes two locks, twice in one unlock releases one",
      {.unlock_dedups_keys = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        lookup(a, {key(0), key(0)});
        a.submit_unlock({key(0), key(0)});
        std::this_thread::sleep_for(20ms);
        return locked(a) == 0 ? "" : "a lock is left after unlocking both lookups";
      }));
  add(out, "usage_counted_at_submit", BugClass::kFailureOrder, "UsageMatchesStoredBytes",
      "decides at submit whether a key is new: two stores of one key in flight count it twice",
      {.usage_counted_at_submit = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId s1 = a.submit_store_task({key(1)}, {object(1)});
        TaskId s2 = a.submit_store_task({key(1)}, {object(1)});
        std::map<TaskId, L2StoreResult> done;
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (done.size() < 2 && std::chrono::steady_clock::now() < deadline) {
          for (auto& kv : a.pop_completed_store_tasks()) done.insert(kv);
          std::this_thread::sleep_for(200us);
        }
        (void)s1;
        (void)s2;
        return a.get_usage().total_bytes_used == 32
                   ? ""
                   : "one 32-byte key, usage " + std::to_string(a.get_usage().total_bytes_used);
      }));
  add(out, "keeps_caller_objects", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "keeps every object it was given in a history until close()", {.keeps_caller_objects = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr o = object(1);
        store(a, {key(1)}, {o});
        std::this_thread::sleep_for(20ms);
        return o.use_count() > 1 ? "a stored object is still referenced after the store" : "";
      }));
  add(out, "thread_per_load", BugClass::kState, "ResourcesBoundedOverManyTasks",
      "starts a helper thread per load and joins them only in close()", {.thread_per_load = true},
      with_adapter([](L2AdapterInterface& a) -> std::string {
        load(a, {key(1)}, {object(0)});
        const std::size_t before = thread_count();
        for (int i = 0; i < 10; ++i) load(a, {key(1)}, {object(0)});
        // Settled: a finished helper thread can stay listed in /proc for a moment.
        const std::size_t after =
            wait_for_resources({std::numeric_limits<std::size_t>::max(), before}).threads;
        return after > before ? "10 loads left " + std::to_string(after - before) + " threads" : "";
      }));
  add(out, "flaky_every_40th_load", BugClass::kLuck, "PartialLoadBitmap",
      "one load in 40 (counted across the process) drops its first hit",
      {.flaky_every_40th_load = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        store_then_check(a, 1);
        for (int i = 0; i < 45; ++i) {
          auto b = load(a, {key(0)}, {object(0)});
          if (!b || !b->test(0)) return "load " + std::to_string(i) + " of a stored key missed it";
        }
        return {};
      }));
  const MemoryLayoutDesc lend_layout = MemoryLayoutDesc::single({256}, DType::kUInt8);
  add(out, "lends_first_buffer_again", BugClass::kState, "LentBufferWrittenOnce",
      "one lend ring per buffer size whose index never advances: every later lend of a size "
      "hands out the first buffer of that size again",
      {.lends_first_buffer_again = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        auto first = a.lend_store_buffers({key(1)}, lend_layout);
        auto second = a.lend_store_buffers({key(2)}, lend_layout);
        if (first.empty() || second.empty()) return {};
        return first[0]->data() == second[0]->data() ? "the same memory was lent twice" : "";
      }));
  add(out, "lent_bytes_only_grow", BugClass::kState, "LentBufferReleasedOnFailure",
      "lent_bytes_outstanding() adds every lend and never takes a returned buffer off",
      {.lent_bytes_only_grow = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        a.lend_store_buffers({key(1)}, lend_layout).clear();  // dropped unsubmitted
        return a.lent_bytes_outstanding() == 0
                   ? ""
                   : "a dropped buffer still counts " + std::to_string(a.lent_bytes_outstanding()) +
                         " lent bytes";
      }));
  add(out, "views_recycled_on_delete", BugClass::kState, "LoadViewsHoldStoredBytes",
      "hands out views of storage memory that a delete recycles (zeroes) while the views are "
      "still held",
      {.views_recycled_on_delete = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        if (store_then_check(a, 2) != "") return {};
        const TaskId id = a.submit_load_view_task({key(1)});
        std::optional<L2LoadViews> r;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (!(r = a.query_load_view_result(id)) && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        if (!r || !r->views.at(0)) return {};
        MemoryObjPtr view = r->views[0];
        a.delete_keys({key(1)});
        return view->data()[0] == std::byte{1} ? "" : "a view changed when its key was deleted";
      }));
  add(out, "lent_keys_visible", BugClass::kFailureOrder, "LentBufferInvisibleBeforeStore",
      "lookups report a key present as soon as a buffer is lent for it, before any store",
      {.lent_keys_visible = true},
      with_adapter([lend_layout](L2AdapterInterface& a) -> std::string {
        auto lent = a.lend_store_buffers({key(1)}, lend_layout);
        auto b = lookup(a, {key(1)});
        return b && b->test(0) ? "a key was present before its store" : "";
      }));

  // Issue 25's classes: object sizes past 64 KiB and of 0 bytes, results around close(), ids
  // past 2^16.
  add(out, "truncates_objects_past_64k", BugClass::kSizes, "PartialLoadBitmap",
      "each object is stored in a fixed 64 KiB slot: the bytes of a KV chunk past it are dropped",
      {.truncates_past_64k = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        MemoryObjPtr big = object(7, 70000);
        if (auto r = store(a, {key(1)}, {big}); !r || !r->is_successful()) return {};
        MemoryObjPtr dst = object(0, 70000);
        auto b = load(a, {key(1)}, {dst});
        return b && b->test(0) && dst->size() == 70000 && dst->data()[69999] == std::byte{7}
                   ? ""
                   : "a 70,000-byte object did not load back whole";
      }));
  add(out, "empty_values_read_as_missing", BugClass::kSizes, "LookupReportsPresence",
      "a stored 0-byte object reads as \"no such key\" on lookup, as a client that takes an "
      "empty reply for a missing one",
      {.empty_values_missing = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        if (auto r = store(a, {key(1)}, {object(0, 0)}); !r || !r->is_successful()) return {};
        auto b = lookup(a, {key(1)});
        return b && b->test(0) ? "" : "a stored 0-byte object was reported absent";
      }));
  add(out, "adapter_drops_results_at_close", BugClass::kFailureOrder, "CloseIsIdempotent",
      "close() discards store and load results that completed before it and were not taken",
      {.drops_results_at_close = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        TaskId id = a.submit_store_task({key(1)}, {object(1)});
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (consume_fd(a.get_store_event_fd()) == 0 &&
               std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(200us);
        }
        a.close();
        return a.pop_completed_store_tasks().count(id) ? ""
                                                       : "a completed store was dropped by close()";
      }));
  add(out, "adapter_load_ids_16_bit", BugClass::kState, "TaskIdsNeverReused",
      "load ids are kept in 16 bits: the load 65,536 tasks later takes an early load's id",
      {.load_ids_16_bit = true}, with_adapter([](L2AdapterInterface& a) -> std::string {
        const TaskId first = a.submit_load_task({key(9)}, {object(0)});
        for (int i = 0; i < 65535; ++i) (void)a.submit_load_task({key(9)}, {object(0)});
        const TaskId later = a.submit_load_task({key(9)}, {object(0)});
        return later == first ? "a load 65,536 tasks later got the first load's id" : "";
      }));
}

}  // namespace lmcache::conformance::selftest
