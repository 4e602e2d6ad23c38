#include "lmcache/conformance/wrapper_conformance.h"

#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/doubles.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache::conformance {

namespace {

using internal::CollectNotifies;
using internal::PollUntil;
using internal::ResultTimeout;

constexpr std::size_t kL1Bytes = 16u << 20;
const std::vector<DType> kKvDtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// One wrapper under test with the kit's collaborators around it.
struct Rig {
  std::shared_ptr<L1Manager> l1;
  std::shared_ptr<SerdeFaults> serde = std::make_shared<SerdeFaults>();
  std::shared_ptr<AdapterFaults> inner = std::make_shared<AdapterFaults>();
  std::shared_ptr<MockL2Adapter> mock;
  int inner_lookup_fd = -1;
  std::vector<ObjectKey> ballast;
  L2AdapterPtr wrapper;

  ~Rig() {
    try {
      if (wrapper) wrapper->close();
    } catch (...) {
    }
  }

  std::size_t l1_used() const { return l1->get_memory_usage().used_bytes; }

  // Takes every free byte of L1, so that any temp reservation runs out of memory.
  void ExhaustL1() {
    L1Usage u = l1->get_memory_usage();
    std::size_t take = u.capacity_bytes - u.used_bytes;
    ObjectKey key("ballast" + std::to_string(ballast.size()), "conformance-ballast", 0);
    auto r = l1->reserve_write({key}, {false}, ByteLayout(take));
    Require(r[0].error == L1Error::kSuccess, "could not fill L1 to simulate a full cache");
    ballast.push_back(key);
  }
};

std::unique_ptr<Rig> MakeRig(const WrapperUnderTest& wut, const WrapperRigOptions& options) {
  auto rig = std::make_unique<Rig>();
  rig->l1 = std::make_shared<L1Manager>(kL1Bytes);
  rig->mock = std::make_shared<MockL2Adapter>(MockL2AdapterOptions{1ull << 30, 1ull << 40});
  std::shared_ptr<L2AdapterInterface> below_script = rig->mock;
  if (options.decorate_inner) {
    // A switch-less ScriptedAdapter is a plain forwarder to the shared mock: the decorator owns
    // it (and may close it) while the rig keeps inspecting the mock.
    L2AdapterPtr decorated = options.decorate_inner(
        std::make_unique<ScriptedAdapter>(rig->mock, std::make_shared<AdapterFaults>()));
    Require(decorated != nullptr, "WrapperRigOptions::decorate_inner returned null");
    below_script = std::move(decorated);
  }
  auto inner = std::make_unique<ScriptedAdapter>(below_script, rig->inner);
  rig->inner_lookup_fd = inner->get_lookup_and_lock_event_fd();
  rig->wrapper =
      wut.make(std::move(inner), std::make_unique<ScriptedProcessor>(rig->serde), rig->l1);
  Require(rig->wrapper != nullptr, "the wrapper factory returned null");
  return rig;
}

std::vector<ObjectKey> MakeKeys(std::size_t n, std::uint64_t seed) {
  std::vector<ObjectKey> keys;
  for (std::size_t i = 0; i < n; ++i) {
    keys.emplace_back(int_hash_to_bytes(static_cast<std::uint32_t>(seed)) +
                          int_hash_to_bytes(static_cast<std::uint32_t>(i)),
                      "conformance-model", static_cast<std::int64_t>(i % 2), 0,
                      i % 2 ? "salt_a" : "");
  }
  return keys;
}

std::vector<MemoryObjPtr> MakeObjects(const MemoryLayoutDesc& layout, std::size_t n,
                                      std::uint64_t seed) {
  std::vector<MemoryObjPtr> objs;
  for (std::size_t i = 0; i < n; ++i) {
    MemoryObjPtr o = MakeObject(layout);
    FillValues(*o, ValueSpec{448.0, true, false}, seed + i);
    objs.push_back(o);
  }
  return objs;
}

// What the kit's fp8 serde gives back for `src`.
MemoryObjPtr Fp8RoundTrip(const MemoryObj& src) {
  Fp8Serializer ser;
  Fp8Deserializer deser;
  MemoryObjPtr bytes = MakeObject(ByteLayout(ser.estimate_serialized_size(src.layout())));
  bytes->set_used_size(ser.serialize(src, *bytes));
  MemoryObjPtr out = MakeObject(src.layout());
  deser.deserialize(*bytes, *out);
  return out;
}

MemoryLayoutDesc GenKvLayout() {
  MemoryLayoutDesc layout = *GenLayout(kKvDtypes, {1, 2, 64});
  if (layout.total_elements() == 0) layout = MemoryLayoutDesc::single({3}, layout.dtypes()[0]);
  return layout;
}

// Waits for the store result of `id` and checks it is handed out and signalled exactly once.
L2StoreResult WaitStoreOnce(L2AdapterInterface& w, TaskId id, const std::string& what) {
  std::optional<L2StoreResult> mine;
  auto deadline = std::chrono::steady_clock::now() + ResultTimeout();
  while (!mine) {
    for (auto& [tid, r] : w.pop_completed_store_tasks()) {
      if (tid == id) mine = r;
    }
    if (mine) break;
    Require(std::chrono::steady_clock::now() < deadline,
            what + ": store task " + std::to_string(id) + " never completed (within " +
                std::to_string(ResultTimeout().count()) + " ms)");
    wait_readable(w.get_store_event_fd(), std::chrono::milliseconds(2));
  }
  std::uint64_t n = CollectNotifies(w.get_store_event_fd(), 1);
  Require(n == 1, what + ": the store fd counted " + std::to_string(n) +
                      " notifies for one completed store (exactly one expected)");
  for (auto& [tid, r] : w.pop_completed_store_tasks()) {
    Require(tid != id, what + ": store task " + std::to_string(id) + " completed twice");
  }
  return *mine;
}

Bitmap WaitLoadOnce(L2AdapterInterface& w, TaskId id, const std::string& what) {
  std::optional<Bitmap> bits = PollUntil([&] { return w.query_load_result(id); }, ResultTimeout());
  Require(bits.has_value(), what + ": load task " + std::to_string(id) + " never completed");
  std::uint64_t n = CollectNotifies(w.get_load_event_fd(), 1);
  Require(n == 1, what + ": the load fd counted " + std::to_string(n) +
                      " notifies for one completed load (exactly one expected)");
  Require(!w.query_load_result(id), what + ": load task " + std::to_string(id) + " answered twice");
  return *bits;
}

void RequireL1Back(const Rig& rig, std::size_t baseline, const std::string& after) {
  auto back = PollUntil(
      [&]() -> std::optional<bool> {
        return rig.l1_used() == baseline ? std::optional<bool>(true) : std::nullopt;
      },
      internal::SettleTimeout());
  Require(back.has_value(), "after " + after + ", L1 holds " + std::to_string(rig.l1_used()) +
                                " bytes instead of the " + std::to_string(baseline) +
                                " before the submit: temps were not released");
}

// A submit that must not throw: any failure but a bad batch completes the task instead.
template <class Fn>
TaskId SubmitNoThrow(Fn&& fn, const std::string& what) {
  try {
    return fn();
  } catch (const std::exception& e) {
    FailCase(what + ": submit threw (" + e.what() + ") instead of completing the task as failed");
  }
}

std::string Id(std::string_view property, const WrapperUnderTest& wut,
               const WrapperRigOptions& rig_options) {
  std::string id = "WrapperConformance." + std::string(property) + "/" + wut.name;
  if (!rig_options.name.empty()) id += "@" + rig_options.name;
  return id;
}

constexpr RcOptions kWrapperRc{.max_success = 8, .max_size = 100, .shrink = false};

Verdict EmptyBatchCompletes(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(
      Id("EmptyBatchCompletes", wut, rig_options), {.max_success = 1, .shrink = false}, [&] {
        auto rig = MakeRig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        TaskId s = SubmitNoThrow([&] { return w.submit_store_task({}, {}); }, "empty store");
        L2StoreResult r = WaitStoreOnce(w, s, "empty store");
        Require(r.is_successful() && r.bytes_transferred() == 0,
                "an empty store completed as " + r.to_string() + " instead of success(0 bytes)");
        TaskId l = SubmitNoThrow([&] { return w.submit_load_task({}, {}); }, "empty load");
        Bitmap bits = WaitLoadOnce(w, l, "empty load");
        Require(bits.size() == 0,
                "an empty load returned a bitmap of " + std::to_string(bits.size()) + " bits");
      });
}

Verdict StoreLoadRoundTrip(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("StoreLoadRoundTrip", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = GenKvLayout();
    std::size_t n = *rc::gen::inRange<std::size_t>(1, 5);
    std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
    auto rig = MakeRig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = MakeKeys(n, seed);
    auto objs = MakeObjects(layout, n, seed);
    TaskId s = SubmitNoThrow([&] { return w.submit_store_task(keys, objs); }, "store");
    L2StoreResult r = WaitStoreOnce(w, s, "store");
    Require(r.is_successful(),
            "a store of " + std::to_string(n) + " objects " + layout.to_string() + " failed");
    const std::uint64_t serialized = n * layout.total_elements();  // fp8: one byte per element
    Require(r.bytes_transferred() == serialized,
            "a store reported " + std::to_string(r.bytes_transferred()) +
                " bytes; the inner adapter stored the serialized " + std::to_string(serialized) +
                " (the wrapper must report the inner's bytes)");
    std::vector<MemoryObjPtr> dsts;
    for (std::size_t i = 0; i < n; ++i) dsts.push_back(MakeObject(layout));
    TaskId l = SubmitNoThrow([&] { return w.submit_load_task(keys, dsts); }, "load");
    Bitmap bits = WaitLoadOnce(w, l, "load");
    Require(bits == Bitmap(n, n),
            "a load of " + std::to_string(n) + " stored keys returned " + bits.to_string());
    for (std::size_t i = 0; i < n; ++i) {
      MemoryObjPtr want = Fp8RoundTrip(*objs[i]);
      Require(std::memcmp(want->data(), dsts[i]->data(), layout.total_bytes()) == 0,
              "object " + std::to_string(i) +
                  " did not come back as the serde's round trip of what was stored");
    }
  });
}

Verdict LookupFdIsInners(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  auto rig = MakeRig(wut, rig_options);
  L2AdapterInterface& w = *rig->wrapper;
  if (w.get_lookup_and_lock_event_fd() != rig->inner_lookup_fd) {
    return Verdict::Fail("the wrapper's lookup fd " +
                         std::to_string(w.get_lookup_and_lock_event_fd()) +
                         " is not the inner adapter's " + std::to_string(rig->inner_lookup_fd) +
                         " (lookups pass straight through)");
  }
  MemoryLayoutDesc layout = MemoryLayoutDesc::single({4, 3}, DType::kFloat32);
  auto keys = MakeKeys(3, 5);
  auto objs = MakeObjects(layout, 2, 5);
  Verdict v = RunRcProperty(
      Id("LookupFdIsInners", wut, rig_options), {.max_success = 1, .shrink = false}, [&] {
        TaskId s = w.submit_store_task({keys[0], keys[1]}, objs);
        Require(WaitStoreOnce(w, s, "store").is_successful(), "store failed");
        TaskId l = w.submit_lookup_and_lock_task(keys);
        auto bits = PollUntil([&] { return w.query_lookup_and_lock_result(l); }, ResultTimeout());
        Require(bits.has_value(), "lookup never completed");
        Require(*bits == Bitmap(3, 2),
                "lookup of 2 stored keys and 1 absent gave " + bits->to_string());
        Require(CollectNotifies(rig->inner_lookup_fd, 1) == 1,
                "the lookup did not notify the (inner's) lookup fd exactly once");
      });
  return v;
}

Verdict HomogeneityEnforced(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("HomogeneityEnforced", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc a = GenKvLayout();
    std::vector<Shape> shapes = a.shapes();
    std::vector<DType> dtypes = a.dtypes();
    switch (*rc::gen::inRange(0, 3)) {
      case 0:  // another dtype in group 0
        dtypes[0] = dtypes[0] == DType::kFloat32 ? DType::kBFloat16 : DType::kFloat32;
        break;
      case 1:  // another extent
        shapes[0].push_back(2);
        break;
      default:  // one more group
        shapes.push_back({3});
        dtypes.push_back(DType::kFloat16);
        break;
    }
    MemoryLayoutDesc b(shapes, dtypes);
    std::size_t n = *rc::gen::inRange<std::size_t>(2, 5);
    std::size_t j = *rc::gen::inRange<std::size_t>(1, n);
    auto rig = MakeRig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = MakeKeys(n, 9);
    auto objs = MakeObjects(a, n, 9);
    objs[j] = MakeObjects(b, 1, 99)[0];
    const std::size_t baseline = rig->l1_used();
    for (bool store : {true, false}) {
      const char* what = store ? "submit_store_task()" : "submit_load_task()";
      try {
        if (store) {
          w.submit_store_task(keys, objs);
        } else {
          w.submit_load_task(keys, objs);
        }
        FailCase(std::string(what) + " accepted a batch whose object " + std::to_string(j) +
                 " has layout " + b.to_string() + " while objects[0] has " + a.to_string());
      } catch (const std::invalid_argument& e) {
        Require(std::string(e.what()).find(std::to_string(j)) != std::string::npos,
                std::string(what) + " rejected a heterogeneous batch without naming index " +
                    std::to_string(j) + ": " + e.what());
      } catch (const rc::detail::CaseResult&) {
        throw;
      } catch (const std::exception& e) {
        FailCase(std::string(what) +
                 " rejected a heterogeneous batch with something other than "
                 "std::invalid_argument: " +
                 e.what());
      }
    }
    try {
      w.submit_store_task(keys, {objs.begin(), objs.end() - 1});
      FailCase("submit_store_task() accepted " + std::to_string(n) + " keys with " +
               std::to_string(n - 1) + " objects");
    } catch (const std::invalid_argument&) {
    }
    std::this_thread::sleep_for(internal::kSettle);
    Require(w.pop_completed_store_tasks().empty(), "a rejected store still completed");
    Require(consume_fd(w.get_store_event_fd()) == 0 && consume_fd(w.get_load_event_fd()) == 0,
            "a rejected submit still signalled");
    Require(rig->l1_used() == baseline, "a rejected submit left temps in L1");
    Require(rig->mock->stored_object_count() == 0, "a rejected store reached the inner adapter");
  });
}

enum class StoreFault { kTempAllocation, kSubmitSerialize, kSerialize, kInnerSubmit, kInnerStore };
enum class LoadFault { kTempAllocation, kInnerSubmit, kSubmitDeserialize, kDeserialize };

const char* Name(StoreFault f) {
  switch (f) {
    case StoreFault::kTempAllocation:
      return "temp allocation (L1 full)";
    case StoreFault::kSubmitSerialize:
      return "submit_serialize throws";
    case StoreFault::kSerialize:
      return "serialize throws on one pair";
    case StoreFault::kInnerSubmit:
      return "inner submit_store_task throws";
    case StoreFault::kInnerStore:
      return "inner store fails";
  }
  return "?";
}

const char* Name(LoadFault f) {
  switch (f) {
    case LoadFault::kTempAllocation:
      return "temp allocation (L1 full)";
    case LoadFault::kInnerSubmit:
      return "inner submit_load_task throws";
    case LoadFault::kSubmitDeserialize:
      return "submit_deserialize throws";
    case LoadFault::kDeserialize:
      return "deserialize throws";
  }
  return "?";
}

Verdict AllOrNothingStore(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("AllOrNothingStore", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = GenKvLayout();
    std::size_t n = *rc::gen::inRange<std::size_t>(1, 5);
    long failing_pair = *rc::gen::inRange<long>(0, static_cast<long>(n));
    for (StoreFault f :
         {StoreFault::kTempAllocation, StoreFault::kSubmitSerialize, StoreFault::kSerialize,
          StoreFault::kInnerSubmit, StoreFault::kInnerStore}) {
      const std::string what = std::string("store with ") + Name(f) + " (" + std::to_string(n) +
                               " objects " + layout.to_string() + ")";
      auto rig = MakeRig(wut, rig_options);
      L2AdapterInterface& w = *rig->wrapper;
      auto keys = MakeKeys(n, 21);
      auto objs = MakeObjects(layout, n, 21);
      switch (f) {
        case StoreFault::kTempAllocation:
          rig->ExhaustL1();
          break;
        case StoreFault::kSubmitSerialize:
          rig->serde->throw_on_submit_serialize = true;
          break;
        case StoreFault::kSerialize:
          rig->serde->FailSerializeCallFromNow(failing_pair);
          break;
        case StoreFault::kInnerSubmit:
          rig->inner->throw_on_submit_store = true;
          break;
        case StoreFault::kInnerStore:
          rig->inner->fail_stores = true;
          break;
      }
      const std::size_t baseline = rig->l1_used();
      TaskId id = SubmitNoThrow([&] { return w.submit_store_task(keys, objs); }, what);
      L2StoreResult r = WaitStoreOnce(w, id, what);
      Require(!r.is_successful() && r.bytes_transferred() == 0,
              what + " completed as " + r.to_string() + " instead of failure (all or nothing)");
      RequireL1Back(*rig, baseline, what);
      if (f != StoreFault::kInnerStore) {
        for (std::size_t i = 0; i < n; ++i) {
          Require(!rig->mock->has_key(keys[i]),
                  what + " still stored key " + std::to_string(i) + " in the inner adapter");
        }
      }
    }
  });
}

Verdict AllOrNothingLoad(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("AllOrNothingLoad", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = GenKvLayout();
    std::size_t n = *rc::gen::inRange<std::size_t>(1, 5);
    for (LoadFault f : {LoadFault::kTempAllocation, LoadFault::kInnerSubmit,
                        LoadFault::kSubmitDeserialize, LoadFault::kDeserialize}) {
      const std::string what = std::string("load with ") + Name(f) + " (" + std::to_string(n) +
                               " objects " + layout.to_string() + ")";
      auto rig = MakeRig(wut, rig_options);
      L2AdapterInterface& w = *rig->wrapper;
      auto keys = MakeKeys(n, 31);
      auto objs = MakeObjects(layout, n, 31);
      TaskId s = SubmitNoThrow([&] { return w.submit_store_task(keys, objs); }, "store");
      Require(WaitStoreOnce(w, s, "store").is_successful(), "storing the keys to load failed");
      switch (f) {
        case LoadFault::kTempAllocation:
          rig->ExhaustL1();
          break;
        case LoadFault::kInnerSubmit:
          rig->inner->throw_on_submit_load = true;
          break;
        case LoadFault::kSubmitDeserialize:
          rig->serde->throw_on_submit_deserialize = true;
          break;
        case LoadFault::kDeserialize:
          rig->serde->deserialize_fail_always = true;
          break;
      }
      const std::size_t baseline = rig->l1_used();
      std::vector<MemoryObjPtr> dsts;
      for (std::size_t i = 0; i < n; ++i) dsts.push_back(MakeObject(layout));
      TaskId l = SubmitNoThrow([&] { return w.submit_load_task(keys, dsts); }, what);
      Bitmap bits = WaitLoadOnce(w, l, what);
      Require(bits == Bitmap(n), what + " returned bitmap " + bits.to_string() +
                                     " instead of all zeros (all or nothing)");
      RequireL1Back(*rig, baseline, what);
    }
  });
}

Verdict PartialLoadKeepsBitmap(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("PartialLoadKeepsBitmap", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = GenKvLayout();
    std::size_t n = *rc::gen::inRange<std::size_t>(2, 7);
    auto stored = *rc::gen::container<std::vector<bool>>(n, rc::gen::arbitrary<bool>());
    auto dropped = *rc::gen::container<std::vector<bool>>(n, rc::gen::arbitrary<bool>());
    // Always a partial bitmap: key 0 loads; the last one is absent or dropped.
    stored[0] = true;
    dropped[0] = false;
    if (stored[n - 1] && !dropped[n - 1]) dropped[n - 1] = true;
    auto rig = MakeRig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    auto keys = MakeKeys(n, 41);
    auto objs = MakeObjects(layout, n, 41);
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
    TaskId s = SubmitNoThrow([&] { return w.submit_store_task(store_keys, store_objs); }, "store");
    Require(WaitStoreOnce(w, s, "store").is_successful(), "store failed");
    rig->inner->SetDroppedLoadIndices(drop);
    const std::size_t baseline = rig->l1_used();
    std::vector<MemoryObjPtr> dsts;
    std::vector<std::vector<std::byte>> before;
    for (std::size_t i = 0; i < n; ++i) {
      MemoryObjPtr d = MakeObject(layout);
      FillBytes(d->physical_bytes(), 500 + i);
      before.emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
      dsts.push_back(d);
    }
    TaskId l = SubmitNoThrow([&] { return w.submit_load_task(keys, dsts); }, "partial load");
    Bitmap bits = WaitLoadOnce(w, l, "partial load");
    Bitmap expected(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (stored[i] && !dropped[i]) expected.set(i);
    }
    Require(bits == expected, "the inner adapter loaded " + expected.to_string() +
                                  " but the wrapper reported " + bits.to_string() +
                                  " (a partial inner bitmap must be kept)");
    for (std::size_t i = 0; i < n; ++i) {
      if (expected.test(i)) {
        MemoryObjPtr want = Fp8RoundTrip(*objs[i]);
        Require(std::memcmp(want->data(), dsts[i]->data(), layout.total_bytes()) == 0,
                "loaded object " + std::to_string(i) + " is not the serde round trip");
      } else {
        Require(std::memcmp(before[i].data(), dsts[i]->data(), before[i].size()) == 0,
                "the destination of unloaded key " + std::to_string(i) +
                    " was written (only set bits may be deserialized)");
      }
    }
    RequireL1Back(*rig, baseline, "a partial load");
  });
}

Verdict TempsReleased(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(Id("TempsReleased", wut, rig_options), kWrapperRc, [&] {
    MemoryLayoutDesc layout = GenKvLayout();
    std::size_t n = *rc::gen::inRange<std::size_t>(1, 5);
    auto rig = MakeRig(wut, rig_options);
    L2AdapterInterface& w = *rig->wrapper;
    const std::size_t baseline = rig->l1_used();
    auto keys = MakeKeys(n, 51);
    auto objs = MakeObjects(layout, n, 51);
    TaskId s = w.submit_store_task(keys, objs);
    Require(WaitStoreOnce(w, s, "store").is_successful(), "store failed");
    RequireL1Back(*rig, baseline, "a successful store");

    auto other = MakeKeys(n, 52);
    rig->serde->FailSerializeCallFromNow(0);
    TaskId f = w.submit_store_task(other, objs);
    Require(!WaitStoreOnce(w, f, "failing store").is_successful(), "a failing store succeeded");
    RequireL1Back(*rig, baseline, "a failed store");

    std::vector<MemoryObjPtr> dsts;
    for (std::size_t i = 0; i < n; ++i) dsts.push_back(MakeObject(layout));
    TaskId l = w.submit_load_task(keys, dsts);
    Require(WaitLoadOnce(w, l, "load") == Bitmap(n, n), "load of stored keys failed");
    RequireL1Back(*rig, baseline, "a successful load");

    rig->serde->deserialize_fail_always = true;
    TaskId lf = w.submit_load_task(keys, dsts);
    Require(WaitLoadOnce(w, lf, "failing load") == Bitmap(n), "a failing load reported keys");
    RequireL1Back(*rig, baseline, "a failed load");
  });
}

Verdict CloseFailsInFlightTasks(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return RunRcProperty(
      Id("CloseFailsInFlightTasks", wut, rig_options), {.max_success = 3, .shrink = false}, [&] {
        MemoryLayoutDesc layout = GenKvLayout();
        std::size_t n = *rc::gen::inRange<std::size_t>(1, 4);
        auto rig = MakeRig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        const std::size_t baseline = rig->l1_used();
        auto keys = MakeKeys(n, 61);
        auto objs = MakeObjects(layout, n, 61);
        TaskId s = w.submit_store_task(keys, objs);
        Require(WaitStoreOnce(w, s, "store").is_successful(), "store failed");

        // Hold the inner adapter's results: the next store and load stay in flight.
        rig->inner->hold_results = true;
        auto more = MakeKeys(n, 62);
        TaskId held_store = w.submit_store_task(more, objs);
        std::vector<MemoryObjPtr> dsts;
        for (std::size_t i = 0; i < n; ++i) dsts.push_back(MakeObject(layout));
        TaskId held_load = w.submit_load_task(keys, dsts);
        auto reached = PollUntil(
            [&]() -> std::optional<bool> {
              return rig->mock->has_key(more.back()) ? std::optional<bool>(true) : std::nullopt;
            },
            ResultTimeout());
        Require(reached.has_value(), "the held store never reached the inner adapter");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the load reach it too

        try {
          w.close();
          w.close();
        } catch (const std::exception& e) {
          FailCase(std::string("close() threw: ") + e.what());
        }
        std::map<TaskId, L2StoreResult> popped = w.pop_completed_store_tasks();
        Require(popped.count(held_store) == 1,
                "the store in flight at close() never completed (it must complete as failed)");
        Require(!popped.at(held_store).is_successful(),
                "the store in flight at close() completed as " + popped.at(held_store).to_string());
        Require(w.pop_completed_store_tasks().empty(), "a store completed twice after close()");
        std::optional<Bitmap> bits = w.query_load_result(held_load);
        Require(bits.has_value(),
                "the load in flight at close() never completed (it must complete as failed)");
        Require(*bits == Bitmap(n),
                "the load in flight at close() completed as " + bits->to_string());
        Require(!w.query_load_result(held_load), "a load completed twice after close()");
        Require(rig->l1_used() == baseline,
                "after close() L1 holds " + std::to_string(rig->l1_used()) +
                    " bytes of temps (expected " + std::to_string(baseline) + ")");
        try {
          w.submit_store_task(keys, objs);
          FailCase("submit_store_task() after close() did not throw");
        } catch (const std::logic_error&) {
        }
      });
}

}  // namespace

Verdict RunWrapperProperty(std::string_view property, const WrapperUnderTest& wrapper) {
  return RunWrapperProperty(property, wrapper, WrapperRigOptions{});
}

Verdict RunWrapperProperty(std::string_view property, const WrapperUnderTest& wrapper,
                           const WrapperRigOptions& rig) {
  using Fn = Verdict (*)(const WrapperUnderTest&, const WrapperRigOptions&);
  static const std::pair<std::string_view, Fn> kTable[] = {
      {"EmptyBatchCompletes", &EmptyBatchCompletes},
      {"StoreLoadRoundTrip", &StoreLoadRoundTrip},
      {"LookupFdIsInners", &LookupFdIsInners},
      {"HomogeneityEnforced", &HomogeneityEnforced},
      {"AllOrNothingStore", &AllOrNothingStore},
      {"AllOrNothingLoad", &AllOrNothingLoad},
      {"PartialLoadKeepsBitmap", &PartialLoadKeepsBitmap},
      {"TempsReleased", &TempsReleased},
      {"CloseFailsInFlightTasks", &CloseFailsInFlightTasks},
  };
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(wrapper, rig);
      } catch (const rc::detail::CaseResult& r) {
        return Verdict::Fail(r.description);
      } catch (const std::exception& e) {
        return Verdict::Fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::Fail("unknown wrapper property '" + std::string(property) + "'");
}

namespace internal {
int WrapperConformanceLinkAnchor() { return 0; }
}  // namespace internal

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WrapperConformance);

LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, EmptyBatchCompletes, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, StoreLoadRoundTrip, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, LookupFdIsInners, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, HomogeneityEnforced, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, AllOrNothingStore, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, AllOrNothingLoad, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, PartialLoadKeepsBitmap, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, TempsReleased, RunWrapperProperty)
LMCACHE_CONFORMANCE_PROPERTY(WrapperConformance, CloseFailsInFlightTasks, RunWrapperProperty)

}  // namespace lmcache::conformance
