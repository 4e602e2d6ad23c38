// WrapperConformance properties about what a wrapper passes through and reports: the bytes of
// a store are the inner adapter's (also when it already held some keys), the pass-through
// calls reach the inner adapter and its answers come back unchanged, and tasks on the same keys
// may be in flight together.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/internal/wrapper_properties.h"

namespace lmcache::conformance_internal::wrapper_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// What the inner adapter reported for its last store of exactly `keys`, or nullopt.
std::optional<L2StoreResult> inner_result_for(const Rig& rig, const std::vector<ObjectKey>& keys) {
  std::optional<L2StoreResult> found;
  for (const auto& [id, store] : rig.inner->records().stores) {
    if (store.keys == keys && store.result) found = store.result;
  }
  return found;
}

class CountingListener final : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                         const std::vector<std::uint64_t>& sizes) override {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      stored_[keys[i].to_string()] = i < sizes.size() ? sizes[i] : ~std::uint64_t{0};
    }
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    std::lock_guard lock(mu_);
    accessed_ += keys.size();
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>&) override {
    std::lock_guard lock(mu_);
    deleted_ += keys.size();
  }
  std::map<std::string, std::uint64_t> stored() const {
    std::lock_guard lock(mu_);
    return stored_;
  }
  std::size_t accessed() const {
    std::lock_guard lock(mu_);
    return accessed_;
  }
  std::size_t deleted() const {
    std::lock_guard lock(mu_);
    return deleted_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> stored_;
  std::size_t accessed_ = 0;
  std::size_t deleted_ = 0;
};

}  // namespace

Verdict StoreBytesAreInners(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("StoreBytesAreInners", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 16);
    const std::size_t n = gen_kv_batch(layout, 2);
    const std::size_t held = *uniform_in_range<std::size_t>(1, n);
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = make_keys(n, *gen_seed());
    auto objs = make_objects(layout, n, 61);
    // The inner first holds `held` keys; then the whole batch is stored, twice.
    const std::vector<ObjectKey> first(keys.begin(), keys.begin() + static_cast<long>(held));
    const std::vector<MemoryObjPtr> first_objs(objs.begin(),
                                               objs.begin() + static_cast<long>(held));
    struct Round {
      const std::vector<ObjectKey>* keys;
      const std::vector<MemoryObjPtr>* objs;
      std::string what;
    };
    const Round rounds[] = {
        {&first, &first_objs, "a store of " + std::to_string(held) + " new keys"},
        {&keys, &objs,
         "a store of " + std::to_string(n) + " keys, " + std::to_string(held) +
             " of which the inner adapter already holds"},
        {&keys, &objs, "a store of " + std::to_string(n) + " keys the inner adapter all holds"},
    };
    for (const Round& r : rounds) {
      TaskId id = submit_no_throw([&] { return w.submit_store_task(*r.keys, *r.objs); }, r.what);
      L2StoreResult got = wait_store_once(w, id, r.what);
      require(got.is_successful(), r.what + " failed");
      std::optional<L2StoreResult> inner = inner_result_for(*rig, *r.keys);
      require(inner.has_value(), r.what +
                                     ": the inner adapter never completed a store of "
                                     "exactly these keys (it must see the original keys)");
      require(got.bytes_transferred() == inner->bytes_transferred(),
              r.what + " reported " + std::to_string(got.bytes_transferred()) +
                  " bytes, but its inner store reported " +
                  std::to_string(inner->bytes_transferred()) +
                  " (the wrapper reports the inner's bytes, not what it serialized)");
    }
  });
}

Verdict PassThroughMatchesInner(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(
      rc_id("PassThroughMatchesInner", wut, rig_options), {.max_success = 3, .shrink = false}, [&] {
        MemoryLayoutDesc layout = gen_kv_layout(1u << 12);
        const std::size_t n = gen_kv_batch(layout, 2);
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        auto keys = make_keys(n, *gen_seed());
        auto objs = make_objects(layout, n, 71);

        // Listeners register on the inner adapter and see what it stores.
        auto listener = std::make_shared<CountingListener>();
        const std::size_t registered = rig->inner->records().listeners_registered;
        w.register_listener(listener);
        require(rig->inner->records().listeners_registered == registered + 1,
                "register_listener() did not reach the inner adapter (listeners track what the "
                "inner really stores)");
        require_stored(w, keys, objs);
        std::map<std::string, std::uint64_t> seen = listener->stored();
        for (const auto& key : keys) {
          auto it = seen.find(key.to_string());
          require(it != seen.end(),
                  "a listener registered through the wrapper did not see the "
                  "store of an original key");
          require(it->second == serialized_size(layout),
                  "a listener registered through the wrapper saw a stored size of " +
                      std::to_string(it->second) + " for an object the inner stores in " +
                      std::to_string(serialized_size(layout)) + " bytes");
        }

        // Usage, eviction support and status are the inner's answers.
        AdapterUsage inner_usage = rig->mock->get_usage();
        AdapterUsage got = w.get_usage();
        require(got.total_bytes_used == inner_usage.total_bytes_used &&
                    got.bytes_by_cache_salt == inner_usage.bytes_by_cache_salt,
                "get_usage() reports " + std::to_string(got.total_bytes_used) +
                    " bytes used; the inner adapter holds " +
                    std::to_string(inner_usage.total_bytes_used));
        AdapterUsage scripted;
        scripted.total_bytes_used = 12345;
        scripted.total_capacity_bytes = 99999;
        scripted.bytes_by_cache_salt = {{"scripted", 12345}};
        rig->inner->set_usage_override(scripted);
        got = w.get_usage();
        rig->inner->set_usage_override(std::nullopt);
        require(got.total_bytes_used == scripted.total_bytes_used &&
                    got.total_capacity_bytes == scripted.total_capacity_bytes &&
                    got.bytes_by_cache_salt == scripted.bytes_by_cache_salt,
                "get_usage() does not pass the inner adapter's answer through (the inner said "
                "12345 of 99999 bytes, the wrapper " +
                    std::to_string(got.total_bytes_used) + " of " +
                    std::to_string(got.total_capacity_bytes) + ")");
        for (int answer : {0, 1}) {
          rig->inner->eviction_override = answer;
          const bool evicts = w.supports_global_eviction();
          require(evicts == (answer == 1), std::string("supports_global_eviction() answered ") +
                                               (evicts ? "true" : "false") +
                                               " where the inner adapter says " +
                                               (answer == 1 ? "true" : "false"));
        }
        rig->inner->eviction_override = -1;
        rig->inner->status_marker = 4242;
        Json status = w.report_status();
        rig->inner->status_marker = -1;
        require(status.is_object() && status.contains("scripted_inner_marker") &&
                    status["scripted_inner_marker"] == 4242,
                "report_status() does not contain the inner adapter's status fields");

        // Unlock and delete reach the inner adapter with the original keys.
        TaskId l = w.submit_lookup_and_lock_task(keys);
        auto bits = poll_until([&] { return w.query_lookup_and_lock_result(l); }, result_timeout());
        require(bits.has_value() && bits->all(), "a lookup of stored keys did not find them all");
        require(rig->mock->locked_key_count() == n,
                "after a lookup of " + std::to_string(n) + " keys the inner adapter holds " +
                    std::to_string(rig->mock->locked_key_count()) + " locks");
        w.submit_unlock(keys);
        auto unlocked = poll_until(
            [&]() -> std::optional<bool> {
              return rig->mock->locked_key_count() == 0 ? std::optional<bool>(true) : std::nullopt;
            },
            settle_timeout());
        AdapterFaults::Records rec = rig->inner->records();
        require(!rec.unlocks.empty() && rec.unlocks.back() == keys,
                "submit_unlock() did not pass the original keys to the inner adapter");
        require(unlocked.has_value(), "after submit_unlock() the inner adapter still holds " +
                                          std::to_string(rig->mock->locked_key_count()) + " locks");
        const std::size_t deleted_before = listener->deleted();
        w.delete_keys(keys);
        rec = rig->inner->records();
        require(!rec.deletes.empty() && rec.deletes.back() == keys,
                "delete_keys() did not pass the original keys to the inner adapter");
        for (const auto& key : keys) {
          require(!rig->mock->has_key(key), "delete_keys() left a key in the inner adapter");
        }
        require(listener->deleted() == deleted_before + n,
                "a listener registered through the wrapper did not see the delete of " +
                    std::to_string(n) + " keys");
      });
}

Verdict SameKeyInFlight(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("SameKeyInFlight", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 14);
    const std::size_t n = gen_kv_batch(layout);
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    const std::size_t baseline = rig->l1_used();
    auto keys = make_keys(n, *gen_seed());
    auto objs = make_objects(layout, n, 81);
    const std::string batch = std::to_string(n) + " keys " + layout.to_string();

    // Two stores of the same keys submitted back to back: both are in flight together (each
    // holds its temps from its submit on).
    TaskId s1 = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, "first store");
    TaskId s2 = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, "second store");
    std::map<TaskId, L2StoreResult> done;
    poll_until(
        [&]() -> std::optional<bool> {
          for (auto& kv : w.pop_completed_store_tasks()) {
            require(done.emplace(kv).second, "a store of " + batch + " completed twice");
          }
          return done.size() >= 2 ? std::optional<bool>(true) : std::nullopt;
        },
        result_timeout());
    require(done.count(s1) && done.count(s2),
            "two stores of the same " + batch + " in flight together did not both complete");
    require(done.at(s1).is_successful() && done.at(s2).is_successful(),
            "two stores of the same " + batch + " in flight together: " + done.at(s1).to_string() +
                " and " + done.at(s2).to_string() +
                " (both must succeed: temps of one key must not collide)");
    const std::uint64_t sum = done.at(s1).bytes_transferred() + done.at(s2).bytes_transferred();
    require(sum == n * serialized_size(layout),
            "two stores of the same " + batch + " reported " + std::to_string(sum) +
                " bytes in all; the inner stored each key once, " +
                std::to_string(n * serialized_size(layout)) + " bytes");

    // Two loads of the same keys in flight together.
    std::vector<std::vector<std::byte>> before1, before2;
    auto d1 = stale_destinations(layout, n, &before1);
    auto d2 = stale_destinations(layout, n, &before2);
    TaskId l1 = submit_no_throw([&] { return w.submit_load_task(keys, d1); }, "first load");
    TaskId l2 = submit_no_throw([&] { return w.submit_load_task(keys, d2); }, "second load");
    auto b1 = poll_until([&] { return w.query_load_result(l1); }, result_timeout());
    auto b2 = poll_until([&] { return w.query_load_result(l2); }, result_timeout());
    require(b1 && b2, "two loads of the same " + batch + " in flight together did not complete");
    require(*b1 == Bitmap(n, n) && *b2 == Bitmap(n, n),
            "two loads of the same stored " + batch + " in flight together returned " +
                b1->to_string() + " and " + b2->to_string());
    require_loaded(objs, d1, before1, *b1, "the first of two loads in flight");
    require_loaded(objs, d2, before2, *b2, "the second of two loads in flight");

    // A store and a load of new keys in flight together: the load may miss keys, but what it
    // reports loaded is whole.
    auto fresh = make_keys(n, *gen_seed() | 1);
    std::vector<std::vector<std::byte>> before3;
    auto d3 = stale_destinations(layout, n, &before3);
    TaskId s3 = submit_no_throw([&] { return w.submit_store_task(fresh, objs); }, "store");
    TaskId l3 = submit_no_throw([&] { return w.submit_load_task(fresh, d3); }, "load");
    auto b3 = poll_until([&] { return w.query_load_result(l3); }, result_timeout());
    require(b3.has_value(), "a load in flight with a store of the same keys never completed");
    require_loaded(objs, d3, before3, *b3, "a load in flight with a store of the same keys");
    std::map<TaskId, L2StoreResult> last;
    poll_until(
        [&]() -> std::optional<bool> {
          for (auto& kv : w.pop_completed_store_tasks()) last.insert(kv);
          return last.count(s3) ? std::optional<bool>(true) : std::nullopt;
        },
        result_timeout());
    require(last.count(s3) && last.at(s3).is_successful(),
            "a store in flight with a load of the same keys did not succeed");
    require_l1_back(*rig, baseline, "tasks on the same keys in flight together");
  });
}

}  // namespace lmcache::conformance_internal::wrapper_properties
