#include "lmcache/conformance/wrapper_conformance.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/doubles.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/internal/wrapper_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/close_quietly.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache::conformance {}  // namespace lmcache::conformance

namespace lmcache::conformance_internal::wrapper_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// ---------------------------------------------------------------------------------------------
// The rig (internal/wrapper_properties.h).

namespace {

const std::vector<DType> kKvDtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
// Elements of one batch at most: objects and temps of the largest batch stay a few MiB.
constexpr std::size_t kBatchElements = std::size_t{1} << 20;

}  // namespace

Rig::~Rig() {
  if (wrapper) close_quietly(*wrapper);
}

std::size_t Rig::l1_used() const { return l1->get_memory_usage().used_bytes; }

void Rig::exhaust_l1() {
  L1Usage u = l1->get_memory_usage();
  std::size_t take = u.capacity_bytes - u.used_bytes;
  ObjectKey key("ballast" + std::to_string(ballast.size()), "conformance-ballast", 0);
  auto r = l1->reserve_write({key}, {false}, byte_layout(take));
  require(r[0].error == L1Error::kSuccess, "could not fill L1 to simulate a full cache");
  ballast.push_back(key);
}

void Rig::refill_l1() {
  if (ballast.empty()) return;
  l1->finish_write(ballast);
  l1->delete_keys(ballast);
  ballast.clear();
}

std::unique_ptr<Rig> make_rig(const WrapperUnderTest& wut, const WrapperRigOptions& options) {
  auto rig = std::make_unique<Rig>();
  rig->lends = options.inner_lends;
  rig->l1 = std::make_shared<L1Manager>(kRigL1Bytes);
  rig->mock =
      std::make_shared<MockL2Adapter>(MockL2AdapterOptions{.max_capacity_bytes = 1ull << 30,
                                                           .bandwidth_bytes_per_sec = 1ull << 40,
                                                           .lend_load_views = options.inner_lends});
  const ForwardedCapabilities lends{.store_buffers = options.inner_lends,
                                    .load_views = options.inner_lends};
  std::shared_ptr<L2AdapterInterface> below_script = rig->mock;
  if (options.decorate_inner) {
    // A switch-less ScriptedAdapter is a plain forwarder to the shared mock: the decorator owns
    // it (and may close it) while the rig keeps inspecting the mock.
    L2AdapterPtr decorated = options.decorate_inner(
        std::make_unique<ScriptedAdapter>(rig->mock, std::make_shared<AdapterFaults>(), lends));
    require(decorated != nullptr, "WrapperRigOptions::decorate_inner returned null");
    below_script = std::move(decorated);
  }
  auto inner = std::make_unique<ScriptedAdapter>(below_script, rig->inner, lends);
  rig->inner_lookup_fd = inner->get_lookup_and_lock_event_fd();
  rig->wrapper =
      wut.make(std::move(inner), std::make_unique<ScriptedProcessor>(rig->serde), rig->l1);
  require(rig->wrapper != nullptr, "the wrapper factory returned null");
  return rig;
}

std::string rc_id(std::string_view property, const WrapperUnderTest& wut,
                  const WrapperRigOptions& rig) {
  std::string id = "WrapperConformance." + std::string(property) + "/" + wut.name;
  if (!rig.name.empty()) id += "@" + rig.name;
  return id;
}

std::vector<ObjectKey> make_keys(std::size_t n, std::uint64_t seed) { return key_family(seed, n); }

std::vector<MemoryObjPtr> make_objects(const MemoryLayoutDesc& layout, std::size_t n,
                                       std::uint64_t seed) {
  std::vector<MemoryObjPtr> objs;
  for (std::size_t i = 0; i < n; ++i) {
    MemoryObjPtr o = make_object(layout);
    fill_values(*o, ValueSpec{448.0, true, false}, seed + i);
    objs.push_back(o);
  }
  return objs;
}

MemoryObjPtr fp8_round_trip(const MemoryObj& src) {
  Fp8Serializer ser;
  Fp8Deserializer deser;
  MemoryObjPtr bytes = make_object(byte_layout(ser.estimate_serialized_size(src.layout())));
  bytes->set_used_size(ser.serialize(src, *bytes, probe_key()));
  MemoryObjPtr out = make_object(src.layout());
  deser.deserialize(*bytes, *out, probe_key());
  return out;
}

std::uint64_t serialized_size(const MemoryLayoutDesc& layout) { return layout.total_elements(); }

MemoryLayoutDesc gen_kv_layout(std::size_t max_elements) {
  SizeLimits limits = size_limits();
  limits.max_groups = 2;
  limits.max_group_elements = std::min(limits.max_group_elements, max_elements);
  limits.max_total_elements = limits.max_group_elements;
  MemoryLayoutDesc layout = *gen_layout(kKvDtypes, limits);
  if (layout.total_elements() == 0) layout = MemoryLayoutDesc::single({3}, layout.dtypes()[0]);
  return layout;
}

std::size_t gen_kv_batch(const MemoryLayoutDesc& layout, std::size_t min_batch) {
  const std::size_t each = std::max<std::size_t>(1, layout.total_elements());
  const std::size_t most =
      std::clamp<std::size_t>(kBatchElements / each, min_batch, current_profile().max_batch);
  return std::max(min_batch, *gen_batch_size(most));
}

L2StoreResult wait_store_once(L2AdapterInterface& w, TaskId id, const std::string& what) {
  std::optional<L2StoreResult> mine;
  auto deadline = wait_deadline(result_timeout());
  ResultPacer pacer(w.get_store_event_fd());
  while (!mine) {
    for (auto& [tid, r] : w.pop_completed_store_tasks()) {
      if (tid == id) mine = r;
    }
    if (mine) break;
    require(!deadline.expired(), what + ": store task " + std::to_string(id) +
                                     " never completed (within " +
                                     std::to_string(result_timeout().count()) + " ms)");
    pacer.wait();
  }
  std::uint64_t n = collect_notifies(w.get_store_event_fd(), 1);
  require(n == 1, what + ": the store fd counted " + std::to_string(n) +
                      " notifies for one completed store (exactly one expected)");
  for (auto& [tid, r] : w.pop_completed_store_tasks()) {
    require(tid != id, what + ": store task " + std::to_string(id) + " completed twice");
  }
  return *mine;
}

void require_stored(L2AdapterInterface& w, const std::vector<ObjectKey>& keys,
                    const std::vector<MemoryObjPtr>& objs) {
  require(wait_store_once(w, w.submit_store_task(keys, objs), "store").is_successful(),
          "store failed");
}

StoredBatch store_fresh_batch(L2AdapterInterface& w, const MemoryLayoutDesc& layout, std::size_t n,
                              std::uint64_t seed) {
  StoredBatch batch{make_keys(n, seed), make_objects(layout, n, seed)};
  require_stored(w, batch.keys, batch.objs);
  return batch;
}

Bitmap wait_load_once(L2AdapterInterface& w, TaskId id, const std::string& what) {
  std::optional<Bitmap> bits =
      poll_until([&] { return w.query_load_result(id); }, result_timeout());
  require(bits.has_value(), what + ": load task " + std::to_string(id) + " never completed");
  std::uint64_t n = collect_notifies(w.get_load_event_fd(), 1);
  require(n == 1, what + ": the load fd counted " + std::to_string(n) +
                      " notifies for one completed load (exactly one expected)");
  require(!w.query_load_result(id), what + ": load task " + std::to_string(id) + " answered twice");
  return *bits;
}

// The result of one task, without the exactly-once checks (other properties make them) and
// their settle time: hundreds of tasks must not wait out hundreds of settles.
L2StoreResult wait_store_quietly(L2AdapterInterface& w, TaskId id, const std::string& what) {
  std::map<TaskId, L2StoreResult> got;
  auto r = poll_until(
      [&]() -> std::optional<L2StoreResult> {
        for (auto& kv : w.pop_completed_store_tasks()) got.insert(kv);
        return got.count(id) ? std::optional<L2StoreResult>(got.at(id)) : std::nullopt;
      },
      result_timeout());
  require(r.has_value(), what + ": store task " + std::to_string(id) + " never completed");
  consume_fd(w.get_store_event_fd());
  return *r;
}

Bitmap wait_load_quietly(L2AdapterInterface& w, TaskId id, const std::string& what) {
  auto bits = poll_until([&] { return w.query_load_result(id); }, result_timeout());
  require(bits.has_value(), what + ": load task " + std::to_string(id) + " never completed");
  consume_fd(w.get_load_event_fd());
  return *bits;
}

void require_l1_back(const Rig& rig, std::size_t baseline, const std::string& after) {
  auto back = poll_until(
      [&]() -> std::optional<bool> {
        return rig.l1_used() == baseline ? std::optional<bool>(true) : std::nullopt;
      },
      settle_timeout());
  require(back.has_value(), "after " + after + ", L1 holds " + std::to_string(rig.l1_used()) +
                                " bytes instead of the " + std::to_string(baseline) +
                                " before the submit: temps were not released");
}

void require_loaded(const std::vector<MemoryObjPtr>& objs, const std::vector<MemoryObjPtr>& dsts,
                    const std::vector<std::vector<std::byte>>& before, const Bitmap& bits,
                    const std::string& what) {
  for (std::size_t i = 0; i < dsts.size(); ++i) {
    const std::size_t n = dsts[i]->layout().total_bytes();
    if (bits.test(i)) {
      MemoryObjPtr want = fp8_round_trip(*objs[i]);
      require(same_bytes(want->data(), dsts[i]->data(), n),
              what + ": object " + std::to_string(i) + " of " + std::to_string(dsts.size()) +
                  " did not come back as the serde's round trip of what was stored");
    } else {
      require(same_bytes(before[i].data(), dsts[i]->physical_bytes().data(), before[i].size()),
              what + ": the destination of unloaded key " + std::to_string(i) +
                  " was written (only set bits may be deserialized)");
    }
  }
}

std::vector<MemoryObjPtr> stale_destinations(const MemoryLayoutDesc& layout, std::size_t n,
                                             std::vector<std::vector<std::byte>>* before) {
  std::vector<MemoryObjPtr> dsts;
  for (std::size_t i = 0; i < n; ++i) {
    MemoryObjPtr d = make_object(layout);
    fill_bytes(d->physical_bytes(), 500 + i);
    before->emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
    dsts.push_back(d);
  }
  return dsts;
}

// ---------------------------------------------------------------------------------------------
// Properties: empty batches, round trips, lookups, homogeneity, partial loads, temps.

Verdict EmptyBatchCompletes(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(
      rc_id("EmptyBatchCompletes", wut, rig_options),
      {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        TaskId s = submit_no_throw([&] { return w.submit_store_task({}, {}); }, "empty store");
        L2StoreResult r = wait_store_once(w, s, "empty store");
        require(r.is_successful() && r.bytes_transferred() == 0,
                "an empty store completed as " + r.to_string() + " instead of success(0 bytes)");
        TaskId l = submit_no_throw([&] { return w.submit_load_task({}, {}); }, "empty load");
        Bitmap bits = wait_load_once(w, l, "empty load");
        require(bits.size() == 0,
                "an empty load returned a bitmap of " + std::to_string(bits.size()) + " bits");
      });
}

Verdict StoreLoadRoundTrip(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("StoreLoadRoundTrip", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(current_profile().max_group_elements);
    const std::size_t n = gen_kv_batch(layout);
    std::uint64_t seed = *gen_seed();
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = make_keys(n, seed);
    auto objs = make_objects(layout, n, seed);
    const std::string what = "a store of " + std::to_string(n) + " objects " + layout.to_string();
    TaskId s = submit_no_throw([&] { return w.submit_store_task(keys, objs); }, "store");
    L2StoreResult r = wait_store_once(w, s, what);
    require(r.is_successful(), what + " failed");
    const std::uint64_t serialized = n * serialized_size(layout);
    require(r.bytes_transferred() == serialized,
            what + " reported " + std::to_string(r.bytes_transferred()) +
                " bytes; the inner adapter stored the serialized " + std::to_string(serialized) +
                " (the wrapper must report the inner's bytes)");
    std::vector<std::vector<std::byte>> before;
    std::vector<MemoryObjPtr> dsts = stale_destinations(layout, n, &before);
    TaskId l = submit_no_throw([&] { return w.submit_load_task(keys, dsts); }, "load");
    Bitmap bits = wait_load_once(w, l, "load");
    require(bits == Bitmap(n, n),
            "a load of " + std::to_string(n) + " stored keys returned " + bits.to_string());
    require_loaded(objs, dsts, before, bits, "a load of " + std::to_string(n) + " stored keys");
  });
}

Verdict LookupFdIsInners(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  auto rig = make_rig(wut, rig_options);
  L2AdapterInterface& w = *rig->wrapper;
  if (w.get_lookup_and_lock_event_fd() != rig->inner_lookup_fd) {
    return Verdict::fail("the wrapper's lookup fd " +
                         std::to_string(w.get_lookup_and_lock_event_fd()) +
                         " is not the inner adapter's " + std::to_string(rig->inner_lookup_fd) +
                         " (lookups pass straight through)");
  }
  MemoryLayoutDesc layout = MemoryLayoutDesc::single({4, 3}, DType::kFloat32);
  auto keys = make_keys(3, 5);
  auto objs = make_objects(layout, 2, 5);
  return run_rc_property(
      rc_id("LookupFdIsInners", wut, rig_options),
      {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
        require_stored(w, {keys[0], keys[1]}, objs);
        TaskId l = w.submit_lookup_and_lock_task(keys);
        auto bits = poll_until([&] { return w.query_lookup_and_lock_result(l); }, result_timeout());
        require(bits.has_value(), "lookup never completed");
        require(*bits == Bitmap(3, 2),
                "lookup of 2 stored keys and 1 absent gave " + bits->to_string());
        require(collect_notifies(rig->inner_lookup_fd, 1) == 1,
                "the lookup did not notify the (inner's) lookup fd exactly once");
      });
}

Verdict HomogeneityEnforced(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("HomogeneityEnforced", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc a = gen_kv_layout(1u << 12);
    std::vector<Shape> shapes = a.shapes();
    std::vector<DType> dtypes = a.dtypes();
    // Half the time the other layout has exactly as many bytes (a wrapper that compares
    // sizes, not layouts, lets it through).
    const auto n0 = static_cast<std::int64_t>(a.group_elements(0));
    switch (*uniform_in_range(0, 5)) {
      case 0:  // another dtype in group 0
        dtypes[0] = dtypes[0] == DType::kFloat32 ? DType::kBFloat16 : DType::kFloat32;
        break;
      case 1:  // another extent
        shapes[0].push_back(2);
        break;
      case 2:  // one more group
        shapes.push_back({3});
        dtypes.push_back(DType::kFloat16);
        break;
      case 3:  // the same bytes in another shape
        shapes[0] = shapes[0].size() == 1 ? Shape{1, n0} : Shape{n0};
        break;
      default:  // the same bytes as another dtype
        if (dtypes[0] == DType::kFloat32) {
          dtypes[0] = DType::kBFloat16;
          shapes[0] = {2 * n0};
        } else {
          dtypes[0] = dtypes[0] == DType::kBFloat16 ? DType::kFloat16 : DType::kBFloat16;
        }
        break;
    }
    MemoryLayoutDesc b(shapes, dtypes);
    std::size_t n = std::max<std::size_t>(2, gen_kv_batch(a, 2));
    std::size_t j = *uniform_in_range<std::size_t>(1, n);
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = make_keys(n, 9);
    auto objs = make_objects(a, n, 9);
    objs[j] = make_objects(b, 1, 99)[0];
    const std::size_t baseline = rig->l1_used();
    for (bool store : {true, false}) {
      const char* what = store ? "submit_store_task()" : "submit_load_task()";
      try {
        if (store) {
          w.submit_store_task(keys, objs);
        } else {
          w.submit_load_task(keys, objs);
        }
        fail_case(std::string(what) + " accepted a batch whose object " + std::to_string(j) +
                  " has layout " + b.to_string() + " while objects[0] has " + a.to_string());
      } catch (const std::invalid_argument& e) {
        require(std::string(e.what()).find(std::to_string(j)) != std::string::npos,
                std::string(what) + " rejected a heterogeneous batch without naming index " +
                    std::to_string(j) + ": " + e.what());
      } catch (const rc::detail::CaseResult&) {
        throw;
      } catch (const std::exception& e) {
        fail_case(std::string(what) +
                  " rejected a heterogeneous batch with something other than "
                  "std::invalid_argument: " +
                  e.what());
      }
    }
    try {
      w.submit_store_task(keys, {objs.begin(), objs.end() - 1});
      fail_case("submit_store_task() accepted " + std::to_string(n) + " keys with " +
                std::to_string(n - 1) + " objects");
    } catch (const std::invalid_argument&) {
    }
    std::this_thread::sleep_for(kSettle);
    require(w.pop_completed_store_tasks().empty(), "a rejected store still completed");
    require(consume_fd(w.get_store_event_fd()) == 0 && consume_fd(w.get_load_event_fd()) == 0,
            "a rejected submit still signalled");
    require(rig->l1_used() == baseline, "a rejected submit left temps in L1");
    require(rig->mock->stored_object_count() == 0, "a rejected store reached the inner adapter");
  });
}

Verdict PartialLoadKeepsBitmap(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("PartialLoadKeepsBitmap", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 16);
    const std::size_t n = gen_kv_batch(layout, 2);
    auto stored = *rc::gen::container<std::vector<bool>>(n, rc::gen::element(false, true));
    auto dropped = *rc::gen::container<std::vector<bool>>(n, rc::gen::element(false, true));
    // Always a partial bitmap: key 0 loads; the last one is absent or dropped.
    stored[0] = true;
    dropped[0] = false;
    if (stored[n - 1] && !dropped[n - 1]) dropped[n - 1] = true;
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = make_keys(n, 41);
    auto objs = make_objects(layout, n, 41);
    std::vector<ObjectKey> store_keys;
    std::vector<MemoryObjPtr> store_objs;
    std::set<std::size_t> drop;
    for (std::size_t i = 0; i < n; ++i) {
      if (stored[i]) {
        store_keys.push_back(keys[i]);
        store_objs.push_back(objs[i]);
      }
      if (dropped[i]) drop.insert(i);
    }
    TaskId s =
        submit_no_throw([&] { return w.submit_store_task(store_keys, store_objs); }, "store");
    require(wait_store_once(w, s, "store").is_successful(), "store failed");
    rig->inner->set_dropped_load_indices(drop);
    const std::size_t baseline = rig->l1_used();
    std::vector<std::vector<std::byte>> before;
    std::vector<MemoryObjPtr> dsts = stale_destinations(layout, n, &before);
    TaskId l = submit_no_throw([&] { return w.submit_load_task(keys, dsts); }, "partial load");
    Bitmap bits = wait_load_once(w, l, "partial load");
    Bitmap expected(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (stored[i] && !dropped[i]) expected.set(i);
    }
    require(bits == expected, "the inner adapter loaded " + expected.to_string() +
                                  " but the wrapper reported " + bits.to_string() +
                                  " (a partial inner bitmap must be kept)");
    require_loaded(objs, dsts, before, bits, "a partial load of " + std::to_string(n) + " keys");
    require_l1_back(*rig, baseline, "a partial load");
  });
}

Verdict TempsReleased(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(rc_id("TempsReleased", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = gen_kv_layout(1u << 16);
    const std::size_t n = gen_kv_batch(layout);
    const long failing = *uniform_in_range<long>(0, static_cast<long>(n));
    auto rig = make_rig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    const std::size_t baseline = rig->l1_used();
    const auto [keys, objs] = store_fresh_batch(w, layout, n, 51);
    require_l1_back(*rig, baseline, "a successful store");

    auto other = make_keys(n, 52);
    rig->serde->fail_serialize_call_from_now(failing);
    TaskId f = w.submit_store_task(other, objs);
    require(!wait_store_once(w, f, "failing store").is_successful(), "a failing store succeeded");
    require_l1_back(*rig, baseline,
                    "a store whose pair " + std::to_string(failing) + " of " + std::to_string(n) +
                        " failed to serialize");

    std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
    TaskId l = w.submit_load_task(keys, dsts);
    require(wait_load_once(w, l, "load") == Bitmap(n, n), "load of stored keys failed");
    require_l1_back(*rig, baseline, "a successful load");

    rig->serde->deserialize_fail_always = true;
    TaskId lf = w.submit_load_task(keys, dsts);
    require(wait_load_once(w, lf, "failing load") == Bitmap(n), "a failing load reported keys");
    require_l1_back(*rig, baseline, "a failed load");
  });
}

}  // namespace lmcache::conformance_internal::wrapper_properties

namespace lmcache::conformance {

Verdict run_wrapper_property(std::string_view property, const WrapperUnderTest& wrapper) {
  if (wrapper.decorate_inner) {
    // The descriptor's own inner stack (a live adapter): it lends nothing the kit controls, so
    // there is no second, lending run.
    WrapperRigOptions rig;
    rig.name = "inner";
    rig.decorate_inner = wrapper.decorate_inner;
    return run_wrapper_property(property, wrapper, rig);
  }
  Verdict plain = run_wrapper_property(property, wrapper, WrapperRigOptions{});
  if (plain.status != Status::kPass) return plain;
  WrapperRigOptions lending;
  lending.name = "lends";
  lending.inner_lends = true;
  Verdict lent = run_wrapper_property(property, wrapper, lending);
  if (lent.status == Status::kFail) {
    lent.message = "with an inner adapter that lends store buffers and load views: " + lent.message;
  }
  return lent.status == Status::kFail ? lent : plain;
}

Verdict run_wrapper_property(std::string_view property, const WrapperUnderTest& wrapper,
                             const WrapperRigOptions& rig) {
  using Fn = Verdict (*)(const WrapperUnderTest&, const WrapperRigOptions&);
#define LMCACHE_WRAPPER_ENTRY(Name, Checks) \
  {#Name, &conformance_internal::wrapper_properties::Name},
  static const std::pair<std::string_view, Fn> kTable[] = {
      LMCACHE_CONFORMANCE_WRAPPER_PROPERTIES(LMCACHE_WRAPPER_ENTRY)};
#undef LMCACHE_WRAPPER_ENTRY
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(wrapper, rig);
      } catch (const rc::detail::CaseResult& r) {
        return Verdict::fail(r.description);
      } catch (const std::exception& e) {
        return Verdict::fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::fail("unknown wrapper property '" + std::string(property) + "'");
}

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
int wrapper_conformance_link_anchor() { return 0; }
}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WrapperConformance);

#define LMCACHE_WRAPPER_TEST(Name, Checks) \
  LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, Name, run_wrapper_property)
LMCACHE_CONFORMANCE_WRAPPER_PROPERTIES(LMCACHE_WRAPPER_TEST)
#undef LMCACHE_WRAPPER_TEST

}  // namespace lmcache::conformance
