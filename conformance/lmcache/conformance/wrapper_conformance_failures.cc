// WrapperConformance properties about failures: all or nothing at every failure point the
// wrapper contract lists (and at every position of a batch), and a stateful model in which
// stores and loads of several layouts, some hit by an injected failure, follow each other on
// one wrapper.
#include <algorithm>
#include <cstring>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
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

enum class StoreFault {
  kTempAllocation,
  kSubmitSerialize,
  kSerialize,  // at one pair
  kSerializeQuery,
  kInnerSubmit,
  kInnerStore,
};
enum class LoadFault {
  kTempAllocation,
  kInnerSubmit,
  kInnerQuery,
  kBitmapLonger,
  kBitmapShorter,
  kSubmitDeserialize,
  kDeserialize,  // at one pair
  kDeserializeQuery,
};

std::string name(StoreFault f, long pair) {
  switch (f) {
    case StoreFault::kTempAllocation:
      return "temp allocation (L1 full)";
    case StoreFault::kSubmitSerialize:
      return "submit_serialize throws";
    case StoreFault::kSerialize:
      return "serialize throws on pair " + std::to_string(pair);
    case StoreFault::kSerializeQuery:
      return "query_serialize_result throws";
    case StoreFault::kInnerSubmit:
      return "inner submit_store_task throws";
    case StoreFault::kInnerStore:
      return "inner store fails";
  }
  return "?";
}

std::string name(LoadFault f, long pair) {
  switch (f) {
    case LoadFault::kTempAllocation:
      return "temp allocation (L1 full)";
    case LoadFault::kInnerSubmit:
      return "inner submit_load_task throws";
    case LoadFault::kInnerQuery:
      return "inner query_load_result throws";
    case LoadFault::kBitmapLonger:
      return "the inner's load bitmap is one bit too long";
    case LoadFault::kBitmapShorter:
      return "the inner's load bitmap is one bit too short";
    case LoadFault::kSubmitDeserialize:
      return "submit_deserialize throws";
    case LoadFault::kDeserialize:
      return "deserialize throws on pair " + std::to_string(pair);
    case LoadFault::kDeserializeQuery:
      return "query_deserialize_result throws";
  }
  return "?";
}

void arm(Rig& rig, StoreFault f, long pair) {
  switch (f) {
    case StoreFault::kTempAllocation:
      rig.exhaust_l1();
      break;
    case StoreFault::kSubmitSerialize:
      rig.serde->throw_on_submit_serialize = true;
      break;
    case StoreFault::kSerialize:
      rig.serde->fail_serialize_call_from_now(pair);
      break;
    case StoreFault::kSerializeQuery:
      rig.serde->throw_on_query = true;
      break;
    case StoreFault::kInnerSubmit:
      rig.inner->throw_on_submit_store = true;
      break;
    case StoreFault::kInnerStore:
      rig.inner->fail_stores = true;
      break;
  }
}

// `dsts`: the destinations of the load about to be submitted (a deserialize failure is aimed
// at that load's calls only).
void arm(Rig& rig, LoadFault f, long pair, const std::vector<MemoryObjPtr>& dsts) {
  switch (f) {
    case LoadFault::kTempAllocation:
      rig.exhaust_l1();
      break;
    case LoadFault::kInnerSubmit:
      rig.inner->throw_on_submit_load = true;
      break;
    case LoadFault::kInnerQuery:
      rig.inner->throw_on_query_load = true;
      break;
    case LoadFault::kBitmapLonger:
      rig.inner->load_bitmap_size_delta = 1;
      break;
    case LoadFault::kBitmapShorter:
      rig.inner->load_bitmap_size_delta = -1;
      break;
    case LoadFault::kSubmitDeserialize:
      rig.serde->throw_on_submit_deserialize = true;
      break;
    case LoadFault::kDeserialize:
      rig.serde->watch_deserialize_into(dsts, pair);
      break;
    case LoadFault::kDeserializeQuery:
      rig.serde->throw_on_query = true;
      break;
  }
}

void disarm(Rig& rig) {
  rig.refill_l1();
  rig.serde->throw_on_submit_serialize = false;
  rig.serde->throw_on_submit_deserialize = false;
  rig.serde->serialize_fail_at = -1;
  rig.serde->unwatch_deserialize();
  rig.serde->throw_on_query = false;
  rig.inner->throw_on_submit_store = false;
  rig.inner->throw_on_submit_load = false;
  rig.inner->throw_on_query_load = false;
  rig.inner->fail_stores = false;
  rig.inner->load_bitmap_size_delta = 0;
}

// Whether the armed fault may leave the task successful: a full L1 over an inner that lends
// (the wrapper may need no temps then). All or nothing still holds either way.
bool may_not_fire(const Rig& rig, StoreFault f) {
  return rig.lends && f == StoreFault::kTempAllocation;
}
bool may_not_fire(const Rig& rig, LoadFault f) {
  return rig.lends && f == LoadFault::kTempAllocation;
}

// Over a lending inner: every buffer the wrapper borrowed is back once the task completed
// (released on failure as on success; docs/wrapper.md, "Lent buffers").
void require_lent_back(const Rig& rig, const std::string& what) {
  poll_until(
      [&] {
        return rig.mock->lent_bytes_outstanding() == 0 ? std::optional<bool>(true) : std::nullopt;
      },
      settle_timeout());
  require(rig.mock->lent_bytes_outstanding() == 0,
          what + " left " + std::to_string(rig.mock->lent_bytes_outstanding()) +
              " bytes of the inner's lent buffers outstanding");
}

// The positions of a batch of n a failure is put at: the first, the second, the middle, the
// last, and one drawn at random.
std::vector<long> failing_positions(std::size_t n) {
  std::set<long> at = {0, std::min<long>(1, static_cast<long>(n) - 1), static_cast<long>(n / 2),
                       static_cast<long>(n) - 1, *uniform_in_range<long>(0, static_cast<long>(n))};
  return {at.begin(), at.end()};
}

}  // namespace

Verdict AllOrNothingStore(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("AllOrNothingStore", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 14);
    const std::size_t n = gen_kv_batch(layout);
    std::vector<std::pair<StoreFault, long>> faults;
    for (StoreFault f :
         {StoreFault::kTempAllocation, StoreFault::kSubmitSerialize, StoreFault::kSerializeQuery,
          StoreFault::kInnerSubmit, StoreFault::kInnerStore}) {
      faults.emplace_back(f, 0);
    }
    for (long p : failing_positions(n)) faults.emplace_back(StoreFault::kSerialize, p);
    for (const auto& [f, pair] : faults) {
      const std::string what = "store with " + name(f, pair) + " (" + std::to_string(n) +
                               " objects " + layout.to_string() + ")";
      auto rig = make_rig(wut, rig_options);
      L2AdapterInterface& w = *rig->wrapper;
      auto keys = make_keys(n, 21);
      auto objs = make_objects(layout, n, 21);
      arm(*rig, f, pair);
      const std::size_t baseline = rig->l1_used();
      TaskId id = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, what);
      L2StoreResult r = wait_store_once(w, id, what);
      require_l1_back(*rig, baseline, what);
      if (rig->lends) require_lent_back(*rig, what);
      if (may_not_fire(*rig, f) && r.is_successful()) {
        require(r.bytes_transferred() == n * serialized_size(layout),
                what + " succeeded reporting " + std::to_string(r.bytes_transferred()) +
                    " bytes; the inner stored " + std::to_string(n * serialized_size(layout)));
        for (std::size_t i = 0; i < n; ++i) {
          require(rig->mock->has_key(keys[i]), what + " succeeded without storing key " +
                                                   std::to_string(i) + " in the inner adapter");
        }
        rig->refill_l1();  // the load may need temps (a wrapper need not use load views)
        std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
        TaskId l = submit_no_throw([&] { return w.submit_load_task(keys, dsts); }, what);
        require(wait_load_once(w, l, what) == Bitmap(n, n),
                what + " succeeded, but its keys do not all load back");
        for (std::size_t i = 0; i < n; ++i) {
          require(
              same_bytes(dsts[i]->data(), fp8_round_trip(*objs[i])->data(), layout.total_bytes()),
              what + " succeeded, but key " + std::to_string(i) +
                  " loads back other bytes than stored");
        }
        continue;
      }
      require(!r.is_successful() && r.bytes_transferred() == 0,
              what + " completed as " + r.to_string() + " instead of failure (all or nothing)");
      if (f != StoreFault::kInnerStore) {
        for (std::size_t i = 0; i < n; ++i) {
          require(!rig->mock->has_key(keys[i]),
                  what + " still stored key " + std::to_string(i) + " in the inner adapter");
        }
      }
    }
  });
}

Verdict AllOrNothingLoad(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("AllOrNothingLoad", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 14);
    const std::size_t n = gen_kv_batch(layout);
    std::vector<std::pair<LoadFault, long>> faults;
    for (LoadFault f : {LoadFault::kTempAllocation, LoadFault::kInnerSubmit, LoadFault::kInnerQuery,
                        LoadFault::kBitmapLonger, LoadFault::kBitmapShorter,
                        LoadFault::kSubmitDeserialize, LoadFault::kDeserializeQuery}) {
      faults.emplace_back(f, 0);
    }
    for (long p : failing_positions(n)) faults.emplace_back(LoadFault::kDeserialize, p);
    // One rig: every fault is armed, tried and disarmed in turn over the same stored keys.
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = make_keys(n, 31);
    auto objs = make_objects(layout, n, 31);
    TaskId s = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, "store");
    require(wait_store_once(w, s, "store").is_successful(), "storing the keys to load failed");
    for (const auto& [f, pair] : faults) {
      const std::string what = "load with " + name(f, pair) + " (" + std::to_string(n) +
                               " objects " + layout.to_string() + ")";
      const std::size_t baseline = rig->l1_used();
      std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
      // This load's deserialize calls are told apart by their destinations (the wrapper
      // deserializes straight into the caller's, docs/wrapper.md), so pairs of an earlier
      // failed load still running neither take the failure nor count.
      rig->serde->watch_deserialize_into(dsts, -1);
      arm(*rig, f, pair, dsts);
      TaskId l = submit_no_throw([&] { return w.submit_load_task(keys, dsts); }, what);
      Bitmap bits = wait_load_once(w, l, what);
      const long calls = rig->serde->watched_deserialize_calls();
      disarm(*rig);
      if (f == LoadFault::kDeserialize && calls <= pair) {
        // The failing call never came: an inner that loses keys (a fault plan's drop) left
        // fewer pairs to deserialize. Then at most the deserialized pairs may be loaded.
        require(bits.popcount() <= static_cast<std::size_t>(calls) &&
                    static_cast<std::size_t>(calls) < n,
                what + " (the failing call never came: " + std::to_string(calls) +
                    " deserialize calls into its destinations) returned bitmap " +
                    bits.to_string() +
                    ": more keys loaded than deserialized, or every key deserialized but the "
                    "failing call skipped");
      } else if (may_not_fire(*rig, f) && bits == Bitmap(n, n)) {
        for (std::size_t i = 0; i < n; ++i) {
          require(
              same_bytes(dsts[i]->data(), fp8_round_trip(*objs[i])->data(), layout.total_bytes()),
              what + " loaded key " + std::to_string(i) + " with other bytes than stored");
        }
      } else {
        require(bits == Bitmap(n), what + " returned bitmap " + bits.to_string() + " instead of " +
                                       std::to_string(n) + " zeros (all or nothing)");
      }
      require_l1_back(*rig, baseline, what);
    }
    (void)objs;
  });
}

// ---------------------------------------------------------------------------------------------
// StatefulModel

namespace {

struct WrapperStep {
  enum class Kind { kStore, kLoad, kLookup, kUnlock, kDelete } kind = Kind::kStore;
  std::size_t cls = 0;
  std::vector<int> keys;  // indices into the class's keys
  int fault = -1;         // a StoreFault / LoadFault, or -1
  long pair = 0;
};

std::ostream& operator<<(std::ostream& os, const WrapperStep& s) {
  static const char* kNames[] = {"Store", "Load", "LookupAndLock", "Unlock", "Delete"};
  os << kNames[static_cast<int>(s.kind)] << "(class " << s.cls << ", keys [";
  for (std::size_t i = 0; i < s.keys.size(); ++i) os << (i ? ", " : "") << s.keys[i];
  os << "]";
  if (s.fault >= 0) {
    os << ", "
       << (s.kind == WrapperStep::Kind::kStore ? name(static_cast<StoreFault>(s.fault), s.pair)
                                               : name(static_cast<LoadFault>(s.fault), s.pair));
  }
  return os << ")";
}

void showValue(const WrapperStep& s, std::ostream& os) { os << s; }

}  // namespace

Verdict StatefulModel(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  const DepthProfile& profile = current_profile();
  return run_rc_property(
      rc_id("StatefulModel", wut, rig_options), {.max_success = 30, .shrink = false}, [&] {
        const auto n_classes = *uniform_in_range<std::size_t>(2, 4);
        const std::size_t per_class = std::min<std::size_t>(profile.max_batch, 24);
        std::vector<MemoryLayoutDesc> layouts;
        // Layouts of different sizes (a wrapper that sizes temps from the first one it saw
        // fails on a larger one).
        for (std::size_t c = 0; c < n_classes; ++c) {
          MemoryLayoutDesc l = gen_kv_layout(1u << 13);
          for (int retry = 0; retry < 4; ++retry) {
            bool same_size = false;
            for (const auto& other : layouts) same_size |= other.total_bytes() == l.total_bytes();
            if (!same_size) break;
            l = gen_kv_layout(1u << 13);
          }
          layouts.push_back(l);
        }
        // Every sequence at the full budget: bugs of state across calls (a memo kept past a
        // delete, a size cached from the first layout) need a store, a load, a delete and a load
        // again of one key, which short sequences rarely hold.
        const int n_steps = profile.max_commands;
        const auto steps = *rc::gen::container<std::vector<WrapperStep>>(
            static_cast<std::size_t>(n_steps), rc::gen::exec([n_classes, per_class] {
              WrapperStep s;
              s.kind =
                  *rc::gen::weightedElement<WrapperStep::Kind>({{4, WrapperStep::Kind::kStore},
                                                                {4, WrapperStep::Kind::kLoad},
                                                                {1, WrapperStep::Kind::kLookup},
                                                                {1, WrapperStep::Kind::kUnlock},
                                                                {2, WrapperStep::Kind::kDelete}});
              s.cls = *uniform_in_range<std::size_t>(0, n_classes);
              // Half the steps draw from the class's first 4 keys only, so that one key meets
              // a store, a load, a delete and a load again within a sequence.
              const int span = *uniform_in_range(0, 2) == 0
                                   ? static_cast<int>(std::min<std::size_t>(4, per_class))
                                   : static_cast<int>(per_class);
              const std::size_t n = *gen_batch_size(per_class);
              for (std::size_t i = 0; i < n; ++i) s.keys.push_back(*uniform_in_range(0, span));
              std::sort(s.keys.begin(), s.keys.end());
              s.keys.erase(std::unique(s.keys.begin(), s.keys.end()), s.keys.end());
              if (*uniform_in_range(0, 3) == 0) {
                if (s.kind == WrapperStep::Kind::kStore) {
                  // Failures that happen before the inner store: nothing may be stored. Not
                  // kSerializeQuery: a wrapper may fail that store while its serialize still
                  // runs, and the late call would take the next step's "fail the serialize
                  // call from now" (a global count); AllOrNothingStore checks it on a fresh rig.
                  s.fault = static_cast<int>(
                      *rc::gen::element(StoreFault::kTempAllocation, StoreFault::kSubmitSerialize,
                                        StoreFault::kSerialize, StoreFault::kInnerSubmit));
                } else if (s.kind == WrapperStep::Kind::kLoad) {
                  s.fault = static_cast<int>(*rc::gen::element(
                      LoadFault::kTempAllocation, LoadFault::kInnerSubmit, LoadFault::kBitmapLonger,
                      LoadFault::kSubmitDeserialize, LoadFault::kDeserialize));
                }
                s.pair = *uniform_in_range<long>(0, static_cast<long>(s.keys.size()));
              }
              return s;
            }));
        for (std::size_t c = 0; c < n_classes; ++c) {
          RC_LOG() << "class " << c << ": " << layouts[c].to_string() << "\n";
        }
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        const std::vector<ObjectKey> all_keys = make_keys(n_classes * per_class, *gen_seed());
        auto key_of = [&](std::size_t c, int k) {
          return all_keys[c * per_class + static_cast<std::size_t>(k)];
        };
        std::vector<std::vector<MemoryObjPtr>> objects;  // per class, per key
        for (std::size_t c = 0; c < n_classes; ++c) {
          objects.push_back(make_objects(layouts[c], per_class, 1000 * c + 7));
        }
        std::set<std::pair<std::size_t, int>> present;
        const std::size_t baseline = rig->l1_used();
        for (std::size_t i = 0; i < steps.size(); ++i) {
          const WrapperStep& step = steps[i];
          std::ostringstream os;
          os << "step " << i << " (" << step << ")";
          const std::string at = os.str();
          std::vector<ObjectKey> keys;
          for (int k : step.keys) keys.push_back(key_of(step.cls, k));
          const std::size_t n = keys.size();
          switch (step.kind) {
            case WrapperStep::Kind::kStore: {
              std::vector<MemoryObjPtr> objs;
              std::uint64_t fresh = 0;
              for (int k : step.keys) {
                objs.push_back(objects[step.cls][static_cast<std::size_t>(k)]);
                if (!present.count({step.cls, k})) fresh += serialized_size(layouts[step.cls]);
              }
              if (step.fault >= 0) arm(*rig, static_cast<StoreFault>(step.fault), step.pair);
              TaskId id = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, at);
              L2StoreResult r = wait_store_quietly(w, id, at);
              disarm(*rig);
              const bool fired =
                  step.fault >= 0 &&
                  !(may_not_fire(*rig, static_cast<StoreFault>(step.fault)) && r.is_successful());
              if (fired) {
                require(!r.is_successful() && r.bytes_transferred() == 0,
                        at + " completed as " + r.to_string() + " instead of failure");
                for (std::size_t j = 0; j < n; ++j) {
                  require(
                      !rig->mock->has_key(keys[j]) || present.count({step.cls, step.keys[j]}),
                      at + " failed but stored key " + std::to_string(j) + " in the inner adapter");
                }
              } else {
                require(r.is_successful(), at + " failed");
                require(r.bytes_transferred() == fresh,
                        at + " reported " + std::to_string(r.bytes_transferred()) +
                            " bytes; the inner stored " + std::to_string(fresh) +
                            " (the serialized bytes of the keys it did not hold yet)");
                for (int k : step.keys) present.insert({step.cls, k});
              }
              break;
            }
            case WrapperStep::Kind::kLoad: {
              std::vector<std::vector<std::byte>> before;
              std::vector<MemoryObjPtr> dsts = stale_destinations(layouts[step.cls], n, &before);
              Bitmap want(n);
              std::vector<MemoryObjPtr> objs;
              for (std::size_t j = 0; j < n; ++j) {
                objs.push_back(objects[step.cls][static_cast<std::size_t>(step.keys[j])]);
                if (present.count({step.cls, step.keys[j]})) want.set(j);
              }
              // A deserialize failure needs something to deserialize.
              const bool fails = step.fault >= 0 &&
                                 (static_cast<LoadFault>(step.fault) != LoadFault::kDeserialize ||
                                  static_cast<std::size_t>(step.pair) < want.popcount());
              if (step.fault >= 0) arm(*rig, static_cast<LoadFault>(step.fault), step.pair, dsts);
              TaskId id = submit_no_throw([&] { return w.submit_load_task(keys, dsts); }, at);
              Bitmap bits = wait_load_quietly(w, id, at);
              disarm(*rig);
              if (fails && may_not_fire(*rig, static_cast<LoadFault>(step.fault)) && bits == want) {
                require_loaded(objs, dsts, before, bits, at);  // the full L1 needed no temps
              } else if (fails) {
                require(bits == Bitmap(n),
                        at + " returned " + bits.to_string() + " instead of an all-zero bitmap");
              } else {
                require(bits == want, at + " returned " + bits.to_string() + ", the model says " +
                                          want.to_string());
                require_loaded(objs, dsts, before, bits, at);
              }
              break;
            }
            case WrapperStep::Kind::kLookup: {
              TaskId id = w.submit_lookup_and_lock_task(keys);
              auto bits =
                  poll_until([&] { return w.query_lookup_and_lock_result(id); }, result_timeout());
              require(bits.has_value(), at + " never completed");
              Bitmap want(n);
              for (std::size_t j = 0; j < n; ++j) {
                if (present.count({step.cls, step.keys[j]})) want.set(j);
              }
              require(*bits == want, at + " returned " + bits->to_string() + ", the model says " +
                                         want.to_string());
              break;
            }
            case WrapperStep::Kind::kUnlock:
              w.submit_unlock(keys);
              break;
            case WrapperStep::Kind::kDelete:
              w.delete_keys(keys);
              for (int k : step.keys) present.erase({step.cls, k});
              break;
          }
          require_l1_back(*rig, baseline, at);
        }
      });
}

}  // namespace lmcache::conformance_internal::wrapper_properties
