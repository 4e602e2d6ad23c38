// The lent store buffer properties (docs/l2-adapter.md, lend_store_buffers()): three of
// AdapterConformance and one of WrapperConformance (internal/property_list.h). A lent buffer is
// written once (by the caller, never by the adapter, and never lent while another lent buffer or
// a stored key still uses its memory), released on failure (whatever path it takes,
// lent_bytes_outstanding() comes back), and never visible before the store that adopts it.
// Scenario properties: fixed layouts from the descriptor's first dtype, several batch sizes, no
// random cases. An adapter that lends nothing for a small request is NotSupported (the
// capability is optional).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/scenario_checks.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/internal/wrapper_properties.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::conformance_internal::lent_buffer_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

using adapter_properties::Closer;

ObjectKey key(std::uint32_t i) {
  return ObjectKey(int_hash_to_bytes(i), "lent_buffer_conformance", 0, 0, "");
}

std::vector<ObjectKey> keys(std::uint32_t first, std::size_t n) {
  std::vector<ObjectKey> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(key(first + static_cast<std::uint32_t>(i)));
  return out;
}

MemoryLayoutDesc layout_of(const AdapterUnderTest& aut, std::int64_t elements) {
  const DType dtype = aut.object_dtypes.empty() ? DType::kUInt8 : aut.object_dtypes.front();
  return MemoryLayoutDesc::single({elements}, dtype);
}

// The byte a buffer of `tag` holds at offset i: distinct across tags and offsets.
std::byte pattern(std::uint32_t tag, std::size_t i) {
  return static_cast<std::byte>((tag * 131u + static_cast<std::uint32_t>(i) * 7u + 1u) & 0xFFu);
}

void fill(MemoryObj& obj, std::uint32_t tag) {
  std::byte* p = obj.data();
  for (std::size_t i = 0; i < obj.size(); ++i) p[i] = pattern(tag, i);
}

// "" when the first `n` bytes of `obj` hold the pattern of `tag`, else where they differ.
std::string check_pattern(const MemoryObj& obj, std::size_t n, std::uint32_t tag) {
  const std::byte* p = obj.data();
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(tag, i)) {
      return "byte " + std::to_string(i) + " is " + std::to_string(static_cast<int>(p[i])) +
             ", was written as " + std::to_string(static_cast<int>(pattern(tag, i)));
    }
  }
  return "";
}

std::vector<MemoryObjPtr> lend(L2AdapterInterface& a, const std::vector<ObjectKey>& ks,
                               const MemoryLayoutDesc& layout) {
  std::vector<MemoryObjPtr> lent = a.lend_store_buffers(ks, layout);
  scenario_check(lent.empty() || lent.size() == ks.size(),
                 "lend_store_buffers() of " + std::to_string(ks.size()) + " keys returned " +
                     std::to_string(lent.size()) + " buffers (all or nothing)");
  for (std::size_t i = 0; i < lent.size(); ++i) {
    scenario_check(lent[i] != nullptr, "lent buffer " + std::to_string(i) + " is null");
    scenario_check(lent[i]->layout() == layout, "lent buffer " + std::to_string(i) +
                                                    " has layout " + lent[i]->layout().to_string() +
                                                    ", asked for " + layout.to_string());
    scenario_check(lent[i]->physical_size() >= layout.total_bytes(),
                   "lent buffer " + std::to_string(i) + " holds " +
                       std::to_string(lent[i]->physical_size()) + " bytes, the layout needs " +
                       std::to_string(layout.total_bytes()));
  }
  return lent;
}

// NotSupported unless the adapter lends a buffer for one small object.
std::optional<Verdict> probe_lending(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  Closer closer{a.get()};
  if (a->lend_store_buffers({key(1)}, layout_of(aut, 64)).empty()) {
    return Verdict::not_supported(
        "the adapter lends no store buffers (lend_store_buffers() returned none for one object "
        "of 64 elements): the capability is optional");
  }
  return std::nullopt;
}

bool overlap(const MemoryObj& x, const MemoryObj& y) {
  const std::byte* a0 = x.data();
  const std::byte* b0 = y.data();
  const std::size_t an = std::max<std::size_t>(x.physical_size(), 1);
  const std::size_t bn = std::max<std::size_t>(y.physical_size(), 1);
  return a0 < b0 + bn && b0 < a0 + an;
}

L2StoreResult store(L2AdapterInterface& a, const std::vector<ObjectKey>& ks,
                    const std::vector<MemoryObjPtr>& objs) {
  const TaskId id = a.submit_store_task(ks, objs);
  std::optional<L2StoreResult> result;
  poll_until(
      [&]() -> std::optional<bool> {
        for (auto& [done, r] : a.pop_completed_store_tasks()) {
          if (done == id) result = r;
        }
        return result ? std::optional<bool>(true) : std::nullopt;
      },
      result_timeout());
  scenario_check(result.has_value(), "store task " + std::to_string(id) + " did not complete");
  return *result;
}

Bitmap load(L2AdapterInterface& a, const std::vector<ObjectKey>& ks,
            const std::vector<MemoryObjPtr>& dsts) {
  const TaskId id = a.submit_load_task(ks, dsts);
  auto bits = poll_until([&] { return a.query_load_result(id); }, result_timeout());
  scenario_check(bits.has_value(), "load task " + std::to_string(id) + " did not complete");
  scenario_check(bits->size() == ks.size(), "load bitmap of " + std::to_string(bits->size()) +
                                                " bits for " + std::to_string(ks.size()) + " keys");
  return *bits;
}

// Lookup-and-lock of `ks`; the hits are unlocked again.
Bitmap lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& ks) {
  const TaskId id = a.submit_lookup_and_lock_task(ks);
  auto bits = poll_until([&] { return a.query_lookup_and_lock_result(id); }, result_timeout());
  scenario_check(bits.has_value(), "lookup task " + std::to_string(id) + " did not complete");
  scenario_check(bits->size() == ks.size(), "lookup bitmap of " + std::to_string(bits->size()) +
                                                " bits for " + std::to_string(ks.size()) + " keys");
  std::vector<ObjectKey> hits;
  for (std::size_t i : bits->set_indices()) hits.push_back(ks[i]);
  if (!hits.empty()) a.submit_unlock(hits);
  return *bits;
}

// A zeroed destination of `layout`, every byte of it set to `junk`.
MemoryObjPtr destination(const MemoryLayoutDesc& layout, std::uint8_t junk) {
  auto obj = MemoryObj::allocate(layout);
  std::memset(obj->data(), junk, obj->physical_size());
  return obj;
}

// "" when `loaded` holds what the adapter must give back for a store of `written` (narrowed to
// `written.size()`); for a serde-wrapping adapter, its declared round trip.
std::string check_loaded(const AdapterUnderTest& aut, const MemoryObj& written,
                         const MemoryObj& loaded) {
  if (aut.expected_load) {
    auto expected = MemoryObj::allocate(written.layout());
    aut.expected_load(written, *expected);
    if (!same_bytes(expected->data(), loaded.data(), expected->size())) {
      return "the loaded bytes are not the declared round trip of those written";
    }
    return "";
  }
  if (!same_bytes(written.data(), loaded.data(), written.size())) {
    return "the loaded bytes differ from those written into the lent buffer";
  }
  return "";
}

class StoreListener final : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>& ks,
                         const std::vector<std::uint64_t>&) override {
    stored.fetch_add(ks.size());
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {}
  void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                          const std::vector<std::uint64_t>&) override {}
  std::atomic<std::size_t> stored{0};
};

}  // namespace

// ---------------------------------------------------------------------------------------------

Verdict written_once(const AdapterUnderTest& aut) {
  if (auto unsupported = probe_lending(aut)) return *unsupported;
  return run_scenario([&] {
    L2AdapterPtr a = aut.make();
    Closer closer{a.get()};
    struct Stored {
      ObjectKey key;
      MemoryObjPtr buffer;  // kept: its memory must not be lent again while the key is stored
      std::uint32_t tag;
    };
    std::vector<Stored> stored;
    std::vector<MemoryObjPtr> held;  // every lent buffer still referenced here
    // Sizes around page and SIMD boundaries (one repeated: pools recycle by size), batches
    // past a byte of bitmap.
    const std::int64_t sizes[] = {4095, 4097, 4097, 65536 + 5};
    const std::size_t batches[] = {3, 17, 2, 1};
    std::uint32_t next_key = 100;
    std::uint32_t tag = 1;
    for (std::size_t round = 0; round < 4; ++round) {
      const MemoryLayoutDesc layout = layout_of(aut, sizes[round]);
      const std::vector<ObjectKey> ks = keys(next_key, batches[round]);
      next_key += static_cast<std::uint32_t>(batches[round]);
      std::vector<MemoryObjPtr> lent = lend(*a, ks, layout);
      scenario_check(!lent.empty(), "round " + std::to_string(round) +
                                        ": lend_store_buffers() of " + std::to_string(ks.size()) +
                                        " objects of " + layout.to_string() +
                                        " returned none, though the adapter lends and has room");
      for (std::size_t i = 0; i < lent.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          scenario_check(!overlap(*lent[i], *lent[j]),
                         "round " + std::to_string(round) + ": lent buffers " + std::to_string(j) +
                             " and " + std::to_string(i) + " of one call overlap");
        }
        for (const MemoryObjPtr& old : held) {
          scenario_check(!overlap(*lent[i], *old),
                         "round " + std::to_string(round) + ": lent buffer " + std::to_string(i) +
                             " overlaps a buffer lent earlier that is still lent or stored");
        }
      }
      std::vector<std::uint32_t> tags;
      for (const MemoryObjPtr& obj : lent) {
        // Narrow every other object (size() bytes are what is stored) unless a load gives back
        // a transformation of the whole layout.
        if (!aut.expected_load && obj->size() > 1 && (tag % 2) == 0) {
          obj->set_used_size(obj->size() / 2);
        }
        fill(*obj, tag);
        tags.push_back(tag++);
      }
      // Other traffic before the submit: a store and a load of caller buffers, a lookup.
      const MemoryLayoutDesc other_layout = layout_of(aut, 33);
      auto other = destination(other_layout, 0x5A);
      const ObjectKey other_key = key(next_key++);
      scenario_check(store(*a, {other_key}, {other}).is_successful(),
                     "a store of a caller buffer failed");
      load(*a, {other_key}, {destination(other_layout, 0)});
      lookup(*a, ks);
      for (std::size_t i = 0; i < lent.size(); ++i) {
        const std::string bad = check_pattern(*lent[i], lent[i]->size(), tags[i]);
        scenario_check(bad.empty(), "round " + std::to_string(round) + ": lent buffer " +
                                        std::to_string(i) +
                                        " changed before its store was submitted (" + bad +
                                        "): only the caller writes a lent buffer");
      }
      // Submit all but the last of rounds 0 and 2 (those are dropped unsubmitted).
      const std::size_t submit =
          (round % 2 == 0 && lent.size() > 1) ? lent.size() - 1 : lent.size();
      const std::vector<ObjectKey> sk(ks.begin(), ks.begin() + static_cast<std::ptrdiff_t>(submit));
      const std::vector<MemoryObjPtr> so(lent.begin(),
                                         lent.begin() + static_cast<std::ptrdiff_t>(submit));
      const L2StoreResult r = store(*a, sk, so);
      scenario_check(r.is_successful(), "round " + std::to_string(round) + ": the store of " +
                                            std::to_string(submit) + " lent buffers failed");
      for (std::size_t i = 0; i < submit; ++i) {
        stored.push_back({ks[i], lent[i], tags[i]});
        held.push_back(lent[i]);
      }
    }
    // Every key gives back exactly what was written into its buffer before its submit.
    for (const Stored& s : stored) {
      auto dst = destination(s.buffer->layout(), 0xC3);
      const Bitmap bits = load(*a, {s.key}, {dst});
      scenario_check(bits.test(0), "a key stored from a lent buffer did not load");
      // Rebuild what was written (the pattern of its tag over its stored size).
      auto written = MemoryObj::allocate(s.buffer->layout());
      written->set_used_size(s.buffer->size());
      fill(*written, s.tag);
      const std::string bad = check_loaded(aut, *written, *dst);
      scenario_check(bad.empty(), bad +
                                      " (a lent buffer was written by someone else, or its memory "
                                      "was lent again while its key was stored)");
    }
    return Verdict::pass();
  });
}

Verdict released_on_failure(const AdapterUnderTest& aut) {
  if (auto unsupported = probe_lending(aut)) return *unsupported;
  return run_scenario([&] {
    L2AdapterPtr a = aut.make();
    Closer closer{a.get()};
    auto outstanding = [&] { return a->lent_bytes_outstanding(); };
    auto expect_outstanding = [&](std::uint64_t want, const std::string& when) {
      // Allow the adapter a moment for what it does on its own threads.
      poll_until([&] { return outstanding() == want ? std::optional<bool>(true) : std::nullopt; },
                 settle_timeout());
      scenario_check(outstanding() == want, "lent_bytes_outstanding() is " +
                                                std::to_string(outstanding()) + " " + when +
                                                ", expected " + std::to_string(want));
    };
    expect_outstanding(0, "on a fresh adapter");
    const std::uint64_t usage_before = a->get_usage().total_bytes_used;
    const MemoryLayoutDesc layout = layout_of(aut, 4096 + 3);
    const std::vector<ObjectKey> ks = keys(200, 4);
    std::vector<MemoryObjPtr> lent = lend(*a, ks, layout);
    scenario_check(!lent.empty(), "lend_store_buffers() of 4 objects returned none");
    std::uint64_t total = 0;
    std::vector<std::uint64_t> sizes;
    for (const MemoryObjPtr& obj : lent) {
      sizes.push_back(obj->physical_size());
      total += obj->physical_size();
      fill(*obj, 7);
    }
    expect_outstanding(total, "after lending 4 buffers");
    if (aut.capabilities.reports_usage) {
      scenario_check(a->get_usage().total_bytes_used == usage_before,
                     "lending changed get_usage()");
    }
    // 1. Dropped unsubmitted.
    lent[0].reset();
    total -= sizes[0];
    expect_outstanding(total, "after the caller dropped an unsubmitted lent buffer");
    // 2. Adopted by its store (and the caller's reference dropped after it completed).
    scenario_check(store(*a, {ks[1]}, {lent[1]}).is_successful(),
                   "the store of a lent buffer failed");
    lent[1].reset();
    total -= sizes[1];
    expect_outstanding(total, "after a lent buffer was stored under its key");
    // 3. Submitted under another key: a copy; the buffer goes back when dropped.
    scenario_check(store(*a, {key(299)}, {lent[2]}).is_successful(),
                   "the store of a lent buffer under another key failed");
    lent[2].reset();
    total -= sizes[2];
    expect_outstanding(total, "after a lent buffer stored under another key was dropped");
    // 4. Outstanding at close(): goes back when dropped afterwards.
    a->close();
    lent[3].reset();
    expect_outstanding(0, "after close() and the drop of the last lent buffer");
    return Verdict::pass();
  });
}

Verdict invisible_before_store(const AdapterUnderTest& aut) {
  if (auto unsupported = probe_lending(aut)) return *unsupported;
  return run_scenario([&] {
    L2AdapterPtr a = aut.make();
    Closer closer{a.get()};
    auto listener = std::make_shared<StoreListener>();
    if (aut.capabilities.supports_listeners) a->register_listener(listener);
    const std::uint64_t usage_before = a->get_usage().total_bytes_used;
    const MemoryLayoutDesc layout = layout_of(aut, 1000);
    const std::vector<ObjectKey> ks = keys(300, 3);
    std::vector<MemoryObjPtr> lent = lend(*a, ks, layout);
    scenario_check(!lent.empty(), "lend_store_buffers() of 3 objects returned none");
    for (std::size_t i = 0; i < lent.size(); ++i)
      fill(*lent[i], 40 + static_cast<std::uint32_t>(i));
    // Lent and written, not stored: absent everywhere.
    scenario_check(lookup(*a, ks).none(),
                   "a lookup found a key whose buffer is lent but not stored");
    std::vector<MemoryObjPtr> dsts;
    for (std::size_t i = 0; i < ks.size(); ++i) dsts.push_back(destination(layout, 0xA5));
    scenario_check(load(*a, ks, dsts).none(),
                   "a load found a key whose buffer is lent but not stored");
    for (const MemoryObjPtr& d : dsts) {
      for (std::size_t i = 0; i < d->physical_size(); ++i) {
        scenario_check(d->data()[i] == std::byte{0xA5},
                       "a load of a key not stored wrote its destination");
      }
    }
    if (aut.capabilities.reports_usage) {
      scenario_check(a->get_usage().total_bytes_used == usage_before,
                     "get_usage() counts buffers that are lent but not stored");
    }
    if (aut.capabilities.supports_listeners) {
      scenario_check(listener->stored.load() == 0,
                     "listeners heard of a store before any was submitted");
    }
    // Store key 0, drop key 2's buffer, keep key 1's unsubmitted.
    scenario_check(store(*a, {ks[0]}, {lent[0]}).is_successful(),
                   "the store of a lent buffer failed");
    lent[2].reset();
    const Bitmap present = lookup(*a, ks);
    scenario_check(present.test(0), "the key stored from a lent buffer is not found");
    scenario_check(!present.test(1), "a key whose buffer is still lent, unsubmitted, is found");
    scenario_check(!present.test(2), "a key whose lent buffer was dropped is found");
    auto back = destination(layout, 0);
    scenario_check(load(*a, {ks[0]}, {back}).test(0),
                   "the key stored from a lent buffer does not load");
    const std::string bad = check_loaded(aut, *lent[0], *back);
    scenario_check(bad.empty(), bad);
    return Verdict::pass();
  });
}

// ---------------------------------------------------------------------------------------------

namespace {

constexpr std::uint64_t kWrapperL1Bytes = 64ull << 20;

// An fp8 serializer that fails (throws) for every pair, or sleeps before serializing.
class ScriptedFp8Serializer final : public Serializer {
 public:
  ScriptedFp8Serializer(bool fail, std::chrono::milliseconds delay) : fail_(fail), delay_(delay) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    if (fail_) throw std::runtime_error("injected serialize failure");
    return inner_.serialize(src, dst, key);
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return inner_.estimate_serialized_size(layout);
  }

 private:
  Fp8Serializer inner_;
  bool fail_;
  std::chrono::milliseconds delay_;
};

// Small float32 values every fp8 format keeps finite.
MemoryObjPtr wide_object(const MemoryLayoutDesc& layout, std::uint32_t seed) {
  auto obj = MemoryObj::allocate(layout);
  auto* f = reinterpret_cast<float*>(obj->data());
  for (std::size_t i = 0; i < obj->size() / sizeof(float); ++i) {
    f[i] = static_cast<float>(static_cast<int>((seed * 37u + i * 11u) % 61u) - 30) / 8.0f;
  }
  return obj;
}

struct WrapperRig {
  MockL2Adapter* inner = nullptr;  // owned by the wrapper
  L2AdapterPtr wrapper;
};

WrapperRig make_rig(const WrapperUnderTest& wut, bool fail, std::chrono::milliseconds delay) {
  auto mock =
      std::make_unique<MockL2Adapter>(MockL2AdapterOptions{1ull << 30, std::uint64_t{1} << 40});
  WrapperRig rig;
  rig.inner = mock.get();
  auto serde = std::make_unique<AsyncSerdeProcessor>(
      std::make_shared<ScriptedFp8Serializer>(fail, delay), std::make_shared<Fp8Deserializer>());
  rig.wrapper =
      wut.make(std::move(mock), std::move(serde), std::make_shared<L1Manager>(kWrapperL1Bytes));
  scenario_check(rig.wrapper != nullptr, "the wrapper factory returned null");
  return rig;
}

}  // namespace

Verdict wrapper_released_on_failure(const WrapperUnderTest& wut) {
  return run_scenario([&] {
    const MemoryLayoutDesc layout = MemoryLayoutDesc::single({4096 + 7}, DType::kFloat32);
    auto expect_released = [](const WrapperRig& rig, const std::string& when) {
      poll_until(
          [&] {
            return rig.inner->lent_bytes_outstanding() == 0 ? std::optional<bool>(true)
                                                            : std::nullopt;
          },
          settle_timeout());
      scenario_check(rig.inner->lent_bytes_outstanding() == 0,
                     "the inner adapter still has " +
                         std::to_string(rig.inner->lent_bytes_outstanding()) +
                         " lent bytes outstanding " + when);
    };
    // 1. Successful stores of several batch sizes round-trip and give every buffer back.
    {
      WrapperRig rig = make_rig(wut, /*fail=*/false, std::chrono::milliseconds(0));
      Closer closer{rig.wrapper.get()};
      Fp8Serializer ser;
      Fp8Deserializer deser;
      std::uint32_t next = 400;
      for (std::size_t batch : {1, 5, 17}) {
        const std::vector<ObjectKey> ks = keys(next, batch);
        next += static_cast<std::uint32_t>(batch);
        std::vector<MemoryObjPtr> objs;
        for (std::size_t i = 0; i < batch; ++i) objs.push_back(wide_object(layout, next + i));
        scenario_check(store(*rig.wrapper, ks, objs).is_successful(),
                       "a store of " + std::to_string(batch) + " objects failed");
        expect_released(rig, "after a successful store of " + std::to_string(batch) + " objects");
        std::vector<MemoryObjPtr> dsts;
        for (std::size_t i = 0; i < batch; ++i) dsts.push_back(destination(layout, 0));
        scenario_check(load(*rig.wrapper, ks, dsts).all(), "keys just stored did not all load");
        for (std::size_t i = 0; i < batch; ++i) {
          auto temp = MemoryObj::allocate(MemoryLayoutDesc::single(
              {static_cast<std::int64_t>(ser.estimate_serialized_size(layout))}, DType::kUInt8));
          temp->set_used_size(ser.serialize(*objs[i], *temp, probe_key()));
          auto expected = destination(layout, 0);
          deser.deserialize(*temp, *expected, probe_key());
          scenario_check(
              same_bytes(expected->data(), dsts[i]->data(), layout.total_bytes()),
              "a key loaded back other bytes than the serde round trip of what was stored");
        }
      }
    }
    // 2. Stores whose serialize fails: failure, nothing stored, every lent buffer back.
    {
      WrapperRig rig = make_rig(wut, /*fail=*/true, std::chrono::milliseconds(0));
      Closer closer{rig.wrapper.get()};
      for (std::size_t batch : {1, 6}) {
        const std::vector<ObjectKey> ks = keys(500 + static_cast<std::uint32_t>(batch) * 10, batch);
        std::vector<MemoryObjPtr> objs;
        for (std::size_t i = 0; i < batch; ++i) objs.push_back(wide_object(layout, 3));
        const L2StoreResult r = store(*rig.wrapper, ks, objs);
        scenario_check(!r.is_successful(), "a store whose serialize failed reported success");
        expect_released(rig, "after a store whose serialize failed");
        scenario_check(lookup(*rig.wrapper, ks).none(), "a failed store left keys behind");
      }
    }
    // 3. Stores in flight at close(): every lent buffer back once close() returned.
    {
      WrapperRig rig = make_rig(wut, /*fail=*/false, std::chrono::milliseconds(5));
      MockL2Adapter* inner = rig.inner;
      for (std::uint32_t t = 0; t < 4; ++t) {
        std::vector<MemoryObjPtr> objs;
        for (std::size_t i = 0; i < 3; ++i) objs.push_back(wide_object(layout, t));
        rig.wrapper->submit_store_task(keys(600 + t * 3, 3), objs);
      }
      rig.wrapper->close();
      // The inner is closed and still alive (the wrapper owns it): its count must be 0 now.
      poll_until(
          [&] {
            return inner->lent_bytes_outstanding() == 0 ? std::optional<bool>(true) : std::nullopt;
          },
          settle_timeout());
      scenario_check(inner->lent_bytes_outstanding() == 0,
                     "the inner adapter still has " +
                         std::to_string(inner->lent_bytes_outstanding()) +
                         " lent bytes outstanding after close()");
    }
    return Verdict::pass();
  });
}

}  // namespace lmcache::conformance_internal::lent_buffer_properties

namespace lmcache::conformance_internal::adapter_properties {

Verdict LentBufferWrittenOnce(const AdapterUnderTest& aut) {
  return lent_buffer_properties::written_once(aut);
}
Verdict LentBufferReleasedOnFailure(const AdapterUnderTest& aut) {
  return lent_buffer_properties::released_on_failure(aut);
}
Verdict LentBufferInvisibleBeforeStore(const AdapterUnderTest& aut) {
  return lent_buffer_properties::invisible_before_store(aut);
}

}  // namespace lmcache::conformance_internal::adapter_properties

namespace lmcache::conformance_internal::wrapper_properties {

Verdict LentBuffersReleasedOnFailure(const WrapperUnderTest& wut, const WrapperRigOptions&) {
  return lent_buffer_properties::wrapper_released_on_failure(wut);
}

}  // namespace lmcache::conformance_internal::wrapper_properties
