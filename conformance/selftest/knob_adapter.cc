// The knob adapter (knob_adapter.h): a decorator of the reference mock adapter whose knobs each
// add one bug. One class on purpose: a knob is a line or two at the step it perturbs, and the
// witness scenarios of mutant_adapters.cc read every knob against the same forwarding code.
#include "knob_adapter.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lmcache/conformance/testing/stored_damage.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/testing/temp_dir.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

std::atomic<std::uint64_t> g_loads{0};

// The adapter types of config_ignores_unknown_keys and config_flag_kind_unchecked.
constexpr const char* kLenientType = "selftest_lenient_mock";
constexpr const char* kKindBlindType = "selftest_kind_blind_mock";
// The serde type of config_stage_keys_unchecked.
constexpr const char* kStageBlindSerde = "selftest_stage_blind_chain";

ObjectKey without_rank(const ObjectKey& k) {
  return ObjectKey(k.chunk_hash(), k.model_name(), 0, k.object_group_id(), k.cache_salt());
}

class KnobAdapter final : public ViewRewritingAdapter {
 public:
  // `capacity`: admission of its own against that many bytes (capacity_kept_after_delete).
  KnobAdapter(L2AdapterPtr inner, AdapterKnobs k, std::uint64_t capacity = 0)
      : ViewRewritingAdapter(std::move(inner)), k_(k), capacity_(capacity) {
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
    if (capacity_ > 0) {
      std::uint64_t bytes = 0;
      for (const auto& o : objects) bytes += o->size();
      std::lock_guard lock(mu_);
      if (admitted_ + bytes > capacity_) {
        const TaskId refused = ForwardingL2Adapter::submit_store_task({}, {});
        refused_.insert(refused);
        store_keys_[refused] = {keys, fresh_sizes};
        return refused;
      }
      admitted_ += bytes;  // the bug: no delete ever lowers it
    }
    TaskId id = 0;
    if (k_.racy_store_ids) {
      id = next_id_.load();  // read, then write later: concurrent submitters collide
      std::this_thread::sleep_for(1ms);
      next_id_.store(id + 1);
    }
    TaskId inner = ForwardingL2Adapter::submit_store_task(map_keys(keys), objs);
    std::lock_guard lock(mu_);
    if (k_.damaged_object_loads) stored_.insert(keys.begin(), keys.end());
    if (++stores_ == k_.late_pool_fd_at_store) late_pool_ = std::make_unique<EventNotifier>();
    store_keys_[inner] = {keys, fresh_sizes};
    if (k_.store_failure_reported_done) {
      std::uint64_t sent = 0;
      for (const auto& o : objects) sent += o->size();
      sent_bytes_[inner] = sent;
    }
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
      if (refused_.erase(inner) > 0) result = L2StoreResult::failure();
      if (k_.zero_bytes && result.is_successful()) result = L2StoreResult::success(0);
      if (k_.store_failure_reported_done && !result.is_successful()) {
        result = L2StoreResult::success(sent_bytes_[inner]);  // the reply was never read
      }
      sent_bytes_.erase(inner);
      if (k_.failed_store_never_completes && !result.is_successful()) {
        store_keys_.erase(inner);  // the worker that saw the error is gone with the task
        continue;
      }
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
    // A gap between the steps, taken only when there is something to hand out: a popper with
    // nothing to copy comes straight back, so it copies many times within the other's gap.
    // Under TSan on a loaded 2-core machine, ConcurrentSubmitters missed this mutant in 5 of 60
    // runs with a 200 us gap on every call; with the gap only when there is something to hand
    // out, in 1 of 120 at 2 ms (the other popper descheduled through it) and 0 of 120 at 10 ms.
    if (!copy.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
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
    if (k_.unlock_releases_every_lock) {
      for (std::size_t i : bits->set_indices()) ++locks_held_[map_key(lookup_keys_[id][i])];
    }
    return bits;
  }

  void submit_unlock(const std::vector<ObjectKey>& keys) override {
    std::vector<ObjectKey> ks = map_keys(keys);
    if (k_.unlock_releases_every_lock) {
      // One unlock of a key releases as many locks as it holds, as if locks were a flag.
      std::vector<ObjectKey> all;
      std::lock_guard lock(mu_);
      for (auto& key : ks) {
        auto it = locks_held_.find(key);
        if (it == locks_held_.end()) continue;
        all.insert(all.end(), it->second, key);
        locks_held_.erase(it);
      }
      ks = all;
    }
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
    if (k_.load_ids_own_counter) {
      const TaskId own = next_load_id_++;
      inner_load_of_[own] = id;
      id = own;
    }
    issued_loads_.insert(id);
    if (k_.damaged_object_loads) load_keys_[id] = keys;
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
    const TaskId asked = id;
    if (k_.load_ids_16_bit || k_.load_ids_own_counter) {
      std::lock_guard lock(mu_);
      auto it = inner_load_of_.find(id);
      if (it != inner_load_of_.end()) id = it->second;
    }
    if (k_.load_result_after_notify) {
      // The worker notifies, then files the result: the first query after the notify finds
      // nothing, a later one finds it.
      std::lock_guard lock(mu_);
      if (auto it = filed_loads_.find(asked); it != filed_loads_.end()) {
        std::optional<Bitmap> filed = std::move(it->second);
        filed_loads_.erase(it);
        return filed;
      }
      if (std::optional<Bitmap> inner = ForwardingL2Adapter::query_load_result(id)) {
        filed_loads_.emplace(asked, std::move(*inner));
      }
      return std::nullopt;
    }
    std::optional<Bitmap> bits = ForwardingL2Adapter::query_load_result(id);
    if (!bits) return bits;
    if (k_.load_ignores_bitmap) bits = Bitmap(bits->size(), bits->size());
    if (k_.damaged_object_loads) {
      std::lock_guard lock(mu_);
      const std::vector<ObjectKey> keys = std::move(load_keys_[id]);
      load_keys_.erase(id);
      for (std::size_t i = 0; i < keys.size() && i < bits->size(); ++i) {
        if (stored_.count(keys[i])) bits->set(i);  // the bug: whatever the store gave back
      }
    }
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
    if (k_.damaged_object_loads) {
      std::lock_guard lock(mu_);
      for (const ObjectKey& k : keys) stored_.erase(k);
    }
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
    if (capacity_ > 0) u.total_capacity_bytes = capacity_;
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
    if (late_pool_) late_pool_->close();
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
  TaskId next_load_id_ = 0;                                // load_ids_own_counter
  std::map<TaskId, Bitmap> filed_loads_;                   // load_result_after_notify
  std::unordered_map<ObjectKey, std::size_t> locks_held_;  // unlock_releases_every_lock
  std::map<TaskId, std::vector<MemoryObjPtr>> load_dsts_;
  std::map<TaskId, std::pair<std::vector<ObjectKey>, std::vector<std::uint64_t>>> store_keys_;
  std::map<TaskId, TaskId> outer_of_;
  std::map<TaskId, L2StoreResult> completed_;
  std::size_t stores_ = 0;                    // under mu_
  std::unique_ptr<EventNotifier> late_pool_;  // under mu_
  std::unordered_set<ObjectKey> present_;
  const std::uint64_t capacity_;
  std::uint64_t admitted_ = 0;                          // capacity_kept_after_delete
  std::set<TaskId> refused_;                            // capacity_kept_after_delete
  std::unordered_set<ObjectKey> stored_;                // damaged_object_loads
  std::map<TaskId, std::vector<ObjectKey>> load_keys_;  // damaged_object_loads
  std::unordered_map<ObjectKey, std::uint64_t> sizes_;
  std::map<TaskId, std::uint64_t> sent_bytes_;  // store_failure_reported_done
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

}  // namespace

AdapterUnderTest make_knob_adapter(AdapterKnobs k) {
  AdapterUnderTest a;
  a.name = "decorated_mock";
  auto mock = [](std::uint64_t capacity) {
    return std::make_unique<MockL2Adapter>(
        MockL2AdapterOptions{.max_capacity_bytes = capacity,
                             .bandwidth_bytes_per_sec = 1ull << 40,
                             .lend_load_views = true});
  };
  a.make = [k, mock]() -> L2AdapterPtr {
    return std::make_unique<KnobAdapter>(mock(1ull << 30), k);
  };
  // With a capacity: the mock's own, or, for capacity_kept_after_delete, the decorator's.
  a.make_with_capacity = [k, mock](std::uint64_t bytes) -> L2AdapterPtr {
    if (!k.capacity_kept_after_delete) return std::make_unique<KnobAdapter>(mock(bytes), k);
    return std::make_unique<KnobAdapter>(mock(1ull << 30), k, bytes);
  };
  // Over the kit's hostile RESP peers, the same decorator over the reference resp adapter.
  a.make_over_resp_peer = [k](std::uint16_t port) -> L2AdapterPtr {
    return std::make_unique<KnobAdapter>(
        resp::create_resp_adapter(Json{{"type", "resp"}, {"host", "127.0.0.1"}, {"port", port}}),
        k);
  };
  // Over damaged storage, the same decorator over the reference fs adapter with its crc32
  // trailer, in a directory of the process's.
  static const storage_testing::TempDir damage_dir("lmcache-selftest-damage-");
  a.make_damageable = damageable_fs(
      Json{{"type", "fs"}, {"base_path", damage_dir.path().string()}, {"checksum", "crc32"}},
      [k](const Json& config) -> L2AdapterPtr {
        return std::make_unique<KnobAdapter>(fs::create_fs_adapter(config), k);
      });
  a.detects_changed_bytes = true;
  a.config = Json{
      {"type", "mock"}, {"max_size_gb", 1}, {"mock_bandwidth_gb", 1024}, {"lend_load_views", true}};
  if (k.config_ignores_unknown_keys) {
    static std::once_flag registered;
    std::call_once(registered, [] {
      register_l2_adapter_type(kLenientType, [](const Json& config, const AdapterContext&) {
        MockL2AdapterOptions options;
        options.max_capacity_bytes =
            static_cast<std::uint64_t>(config.value("max_size_gb", 1.0) * (1ull << 30));
        options.bandwidth_bytes_per_sec = 1ull << 40;
        options.lend_load_views = config.value("lend_load_views", false);
        return std::make_unique<MockL2Adapter>(options);  // whatever else it holds is ignored
      });
    });
    a.config = Json{{"type", kLenientType}, {"max_size_gb", 1}, {"lend_load_views", true}};
  }
  if (k.config_flag_kind_unchecked) {
    static std::once_flag registered;
    std::call_once(registered, [] {
      register_l2_adapter_type(kKindBlindType, [](const Json& config, const AdapterContext&) {
        MockL2AdapterOptions options{.max_capacity_bytes = 1ull << 30,
                                     .bandwidth_bytes_per_sec = 1ull << 40};
        for (const auto& [key, value] : config.items()) {
          if (key == "lend_load_views") {
            options.lend_load_views = value.is_boolean() && value.get<bool>();  // the bug
          } else if (key != "type") {
            throw std::invalid_argument(std::string(kKindBlindType) + ": unknown key '" + key +
                                        "'");
          }
        }
        return std::make_unique<MockL2Adapter>(options);
      });
    });
    a.config = Json{{"type", kKindBlindType}, {"lend_load_views", true}};
  }
  if (k.config_stage_keys_unchecked) {
    static std::once_flag registered;
    std::call_once(registered, [] {
      register_serde_factory(kStageBlindSerde, [](const Json& kwargs) {
        for (const auto& [key, value] : kwargs.items()) {
          if (key != "stages" && key != "max_workers") {
            throw std::invalid_argument(std::string(kStageBlindSerde) + ": unknown key '" + key +
                                        "'");
          }
        }
        Json chain = kwargs;
        for (Json& stage : chain["stages"]) {
          // The bug: whatever a stage holds besides the keys its type reads is dropped.
          Json known{{"type", stage.at("type")}};
          for (const char* key : {"fp8_dtype", "overflow", "master_key_path", "aes_bits"}) {
            if (stage.contains(key)) known[key] = stage[key];
          }
          stage = std::move(known);
        }
        return make_chain_serde_processor(chain);
      });
    });
    (*a.config)["serde"] =
        Json{{"type", kStageBlindSerde},
             {"stages", Json::array({Json{{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}},
                                     Json{{"type", "checksum"}}})}};
  }
  a.capabilities.reports_lock_count = true;
  return a;
}

}  // namespace lmcache::conformance::selftest
