#include "lmcache/fault/fault_inject_adapter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/wrapper/adapter_factory.h"
#include "lmcache/wrapper/testing/wrapper_test_support.h"

namespace lmcache::fault {
namespace {

using namespace std::chrono_literals;
using lmcache::wrapper_internal::wait_load;
using lmcache::wrapper_internal::wait_store;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ObjectKey key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "test_model", 0); }

std::vector<ObjectKey> keys(std::size_t n, std::uint32_t first = 0) {
  std::vector<ObjectKey> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(key(first + static_cast<std::uint32_t>(i)));
  return out;
}

MemoryObjPtr object(std::uint8_t fill, std::size_t bytes = 64) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8));
  std::memset(obj->data(), fill, bytes);
  return obj;
}

std::vector<MemoryObjPtr> objects(std::size_t n, std::uint8_t base = 1) {
  std::vector<MemoryObjPtr> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(object(static_cast<std::uint8_t>(base + i)));
  return out;
}

std::optional<Bitmap> wait_lookup(L2AdapterInterface& a, TaskId id,
                                  std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto r = a.query_lookup_and_lock_result(id)) return r;
    wait_readable(a.get_lookup_and_lock_event_fd(), 20ms);
    consume_fd(a.get_lookup_and_lock_event_fd());
  }
  return std::nullopt;
}

// An adapter over a 0.01 GB / 10 GB/s mock (the Python tests' inner), with a handle on the mock.
struct Harness {
  explicit Harness(FaultInjectOptions options) {
    auto inner = std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(0.01, 10));
    mock = inner.get();
    log = std::make_shared<FaultLog>();
    adapter = std::make_unique<FaultInjectL2Adapter>(std::move(inner), std::move(options), log);
  }
  // Stores through the adapter (callers enable no store fault). Not through the mock: the
  // adapter's pump consumes the mock's completions.
  void seed_mock(const std::vector<ObjectKey>& k, const std::vector<MemoryObjPtr>& o) {
    auto r = wait_store(*adapter, adapter->submit_store_task(k, o));
    ASSERT_TRUE(r && r->is_successful());
  }
  Bitmap lookup(const std::vector<ObjectKey>& k) {
    auto r = wait_lookup(*adapter, adapter->submit_lookup_and_lock_task(k));
    EXPECT_TRUE(r);
    return r.value_or(Bitmap());
  }
  Bitmap load(const std::vector<ObjectKey>& k, std::vector<MemoryObjPtr>* dsts = nullptr) {
    std::vector<MemoryObjPtr> local = objects(k.size(), 200);
    auto& d = dsts ? *dsts : local;
    if (d.empty()) d = local;
    auto r = wait_load(*adapter, adapter->submit_load_task(k, d));
    EXPECT_TRUE(r);
    return r.value_or(Bitmap());
  }
  std::vector<FaultEvent> events(FaultKind kind) {
    for (auto& e : log->drain()) drained.push_back(std::move(e));
    std::vector<FaultEvent> out;
    for (const auto& e : drained) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  MockL2Adapter* mock = nullptr;
  std::shared_ptr<FaultLog> log;
  std::unique_ptr<FaultInjectL2Adapter> adapter;
  std::vector<FaultEvent> drained;
};

FaultInjectOptions opts(const char* json) {
  return FaultInjectOptions::from_json(Json::parse(json));
}

// ---------------------------------------------------------------------------------------------
// Config: Python's ValueError texts, strict keys.

std::string error_of(const char* json) {
  try {
    parse_fault_inject_config(Json::parse(json));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FaultInjectConfig, PythonValueErrorMessages) {
  const char* inner = R"("inner": {"type": "mock", "max_size_gb": 0.01, "mock_bandwidth_gb": 1})";
  auto with = [&](const std::string& rest) {
    static std::string s;
    s = "{" + std::string(inner) + ", " + rest + "}";
    return s.c_str();
  };
  EXPECT_EQ(error_of("{}"), "'inner' must be an adapter spec dict with a 'type' field");
  EXPECT_EQ(error_of(R"({"inner": 3})"),
            "'inner' must be an adapter spec dict with a 'type' field");
  EXPECT_EQ(error_of(R"({"inner": {}})"),
            "'inner' must be an adapter spec dict with a 'type' field");
  EXPECT_EQ(error_of(R"({"inner": {"type": 1}})"),
            "'inner' adapter spec must include a string 'type'");
  for (const char* bad :
       {R"("rate": 1.5)", R"("rate": -0.1)", R"("rate": true)", R"("rate": "0.1")"}) {
    EXPECT_THAT(error_of(with(bad)), StartsWith("rate must be a number in [0, 1]")) << bad;
  }
  for (const char* bad :
       {R"("seed": 1.5)", R"("seed": true)", R"("seed": "1")", R"("seed": 2.0)"}) {
    EXPECT_THAT(error_of(with(bad)), StartsWith("seed must be an integer")) << bad;
  }
  for (const char* bad : {R"("gap_indices": [-1])", R"("gap_indices": [true])",
                          R"("gap_indices": [1.0])", R"("gap_indices": 3)"}) {
    EXPECT_THAT(error_of(with(bad)),
                StartsWith("gap_indices must be a list of non-negative integers"))
        << bad;
  }
  for (const char* bad : {R"("gap_tail_ratios": [1.5])", R"("gap_tail_ratios": [true])",
                          R"("gap_tail_ratios": 0.5)"}) {
    EXPECT_THAT(error_of(with(bad)),
                StartsWith("gap_tail_ratios must be a list of floats in [0, 1]"))
        << bad;
  }
  EXPECT_THAT(error_of(with(R"("drop_chunk_hashes": "ab")")),
              StartsWith("drop_chunk_hashes must be a list of hex strings"));
  EXPECT_THAT(error_of(with(R"("drop_chunk_hashes": [1])")),
              StartsWith("drop_chunk_hashes must be a list of hex strings"));
  EXPECT_EQ(error_of(with(R"("drop_chunk_hashes": ["zz"])")),
            "drop_chunk_hashes entry 'zz' is not hex");
  EXPECT_EQ(error_of(with(R"("drop_chunk_hashes": ["abc"])")),
            "drop_chunk_hashes entry 'abc' is not hex");
  EXPECT_THAT(error_of(with(R"("rat": 0.1)")), HasSubstr("unknown key 'rat'"));
  EXPECT_THAT(error_of(with(R"("corrupt_rate": 2)")),
              StartsWith("'corrupt_rate' must be a number in [0, 1]"));
  EXPECT_THAT(error_of(with(R"("store_fail_mode": "sometimes")")),
              StartsWith("'store_fail_mode' must be one of"));
  EXPECT_THAT(error_of(with(R"("corrupt_bits": 0)")),
              StartsWith("'corrupt_bits' must be an integer in [1, 64]"));
  EXPECT_THAT(error_of(with(R"("slow_close_ms": 1.5)")), StartsWith("'slow_close_ms' must be"));
}

TEST(FaultInjectConfig, DefaultsAndJsonForm) {
  auto parsed = parse_fault_inject_config(Json::parse(
      R"({"inner": {"type": "mock"}, "seed": -3, "gap_indices": [6, 1, 4, 1],
          "gap_tail_ratios": [0.5], "drop_chunk_hashes": ["0A 0b"]})"));
  EXPECT_EQ(parsed.inner, Json::parse(R"({"type": "mock"})"));
  const FaultInjectOptions& o = parsed.options;
  EXPECT_EQ(o.seed(), -3);
  EXPECT_EQ(o.drop.rate, 0.0);
  EXPECT_EQ(o.drop.gap_indices, (std::vector<std::size_t>{1, 4, 6}));
  EXPECT_EQ(o.drop.drop_chunk_hashes, std::vector<std::string>{std::string("\x0a\x0b", 2)});
  EXPECT_EQ(o.store_fail_rate, 0.0);
  EXPECT_EQ(o.hang_rate, 0.0);
  Json j = o.to_json();
  EXPECT_EQ(j["gap_indices"], Json::parse("[1, 4, 6]"));
  EXPECT_EQ(j["drop_chunk_hashes"], Json::parse(R"(["0a0b"])"));
  EXPECT_EQ(FaultInjectOptions::from_json(j).to_json(), j);
}

// ---------------------------------------------------------------------------------------------
// Registry.

TEST(FaultInjectRegistryConcurrency, RegistersIdempotentlyAndBuildsFromJson) {
  register_fault_injection_adapters();
  register_fault_injection_adapters();
  auto names = registered_l2_adapter_types();
  EXPECT_NE(std::find(names.begin(), names.end(), "fault_inject"), names.end());

  L2AdapterPtr a = create_registered_l2_adapter(Json::parse(
      R"({"type": "fault_inject", "rate": 0.25, "seed": 5, "gap_indices": [3, 1],
          "inner": {"type": "mock", "max_size_gb": 0.01, "mock_bandwidth_gb": 10}})"));
  auto* fi = dynamic_cast<FaultInjectL2Adapter*>(a.get());
  ASSERT_NE(fi, nullptr);
  Json status = a->report_status();
  EXPECT_EQ(status["type"], "MockL2Adapter");
  EXPECT_EQ(status["fault_inject"]["rate"], 0.25);
  EXPECT_EQ(status["fault_inject"]["seed"], 5);
  EXPECT_EQ(status["fault_inject"]["gap_indices"], Json::parse("[1, 3]"));
  EXPECT_EQ(status["fault_inject"]["gap_tail_ratios"], Json::array());
  EXPECT_TRUE(status["fault_inject"].contains("hang_rate"));
  EXPECT_TRUE(status["fault_inject"].contains("pending"));
  a->close();

  EXPECT_THROW(create_registered_l2_adapter(
                   Json::parse(R"({"type": "fault_inject", "inner": {"type": "nope"}})")),
               std::invalid_argument);
  // A bad knob is reported before any inner adapter is built.
  EXPECT_THROW(create_registered_l2_adapter(Json::parse(
                   R"({"type": "fault_inject", "rate": 3, "inner": {"type": "mock",
                       "max_size_gb": 0.01, "mock_bandwidth_gb": 10}})")),
               std::invalid_argument);
}

TEST(FaultInjectRegistryConcurrency, SerdeAboveAndBelowTheInjector) {
  register_fault_injection_adapters();
  auto l1 = std::make_shared<L1Manager>(std::size_t{16} << 20);
  AdapterContext ctx{l1};
  // The usual layout: the wrapper above, the injector faults serialized bytes.
  L2AdapterPtr above = create_l2_adapter(Json::parse(R"({"type": "fault_inject", "gap_indices": [1],
                      "inner": {"type": "mock", "max_size_gb": 0.01, "mock_bandwidth_gb": 10},
                      "serde": {"type": "fp8"}})"),
                                         ctx);
  auto* wrapper = dynamic_cast<SerdeL2AdapterWrapper*>(above.get());
  ASSERT_NE(wrapper, nullptr);
  EXPECT_NE(dynamic_cast<FaultInjectL2Adapter*>(&wrapper->inner_adapter()), nullptr);
  auto layout = MemoryLayoutDesc::single({4, 8}, DType::kFloat32);
  std::vector<MemoryObjPtr> src, dst;
  for (int i = 0; i < 3; ++i) {
    src.push_back(MemoryObj::allocate(layout));
    auto* f = reinterpret_cast<float*>(src.back()->data());
    for (int j = 0; j < 32; ++j) f[j] = 0.5f * static_cast<float>(j % 8);  // exact in e4m3
    dst.push_back(MemoryObj::allocate(layout));
  }
  auto r = wait_store(*above, above->submit_store_task(keys(3), src));
  ASSERT_TRUE(r && r->is_successful());
  auto bits = wait_load(*above, above->submit_load_task(keys(3), dst));
  ASSERT_TRUE(bits);
  EXPECT_EQ(bits->to_string(), "101");
  EXPECT_EQ(std::memcmp(src[0]->data(), dst[0]->data(), layout.total_bytes()), 0);
  Json status = above->report_status();
  EXPECT_EQ(status["serde_wrapped"], true);
  EXPECT_TRUE(status.contains("fault_inject"));
  above->close();
  EXPECT_EQ(l1->get_memory_usage().used_bytes, 0u);

  // Below: the injector wraps a serde wrapper (inner spec with "serde").
  L2AdapterPtr below = create_registered_l2_adapter(
      Json::parse(R"({"type": "fault_inject", "inner": {"type": "mock", "max_size_gb": 0.01,
                      "mock_bandwidth_gb": 10, "serde": {"type": "fp8"}}})"),
      ctx);
  auto* fi = dynamic_cast<FaultInjectL2Adapter*>(below.get());
  ASSERT_NE(fi, nullptr);
  EXPECT_NE(dynamic_cast<SerdeL2AdapterWrapper*>(&fi->inner()), nullptr);
  below->close();
}

// ---------------------------------------------------------------------------------------------
// LMCache's Python test cases, against the adapter.

TEST(FaultInjectAdapterConcurrency, RateZeroIsPassthrough) {
  Harness h(opts("{}"));
  auto k = keys(8);
  auto src = objects(8);
  auto r = wait_store(*h.adapter, h.adapter->submit_store_task(k, src));
  ASSERT_TRUE(r && r->is_successful());
  EXPECT_EQ(h.lookup(k).popcount(), 8u);
  std::vector<MemoryObjPtr> dst;
  EXPECT_EQ(h.load(k, &dst).popcount(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(std::memcmp(src[i]->data(), dst[i]->data(), 64), 0);
  h.adapter->submit_unlock(k);
  EXPECT_TRUE(h.log->drain().empty());
}

TEST(FaultInjectAdapterConcurrency, LoadGapClearedLookupIntact) {
  Harness h(opts(R"({"gap_indices": [1, 4, 6]})"));
  auto k = keys(8);
  h.seed_mock(k, objects(8));
  EXPECT_EQ(h.lookup(k).popcount(), 8u);
  EXPECT_EQ(h.load(k).to_string(), "10110101");
  auto drops = h.events(FaultKind::kLoadDrop);
  ASSERT_EQ(drops.size(), 3u);
  EXPECT_EQ(drops[0].keys, std::vector<ObjectKey>{k[1]});
  EXPECT_EQ(drops[0].effect, FaultEffect::kMiss);
}

TEST(FaultInjectAdapterConcurrency, GapTailRatioPositionScalingAndEndpoints) {
  Harness h(opts(R"({"gap_tail_ratios": [0.5]})"));
  h.seed_mock(keys(8), objects(8));
  EXPECT_EQ(h.load(keys(8)).to_string(), "11110111");
  EXPECT_EQ(h.load(keys(4)).to_string(), "1101");
  Harness ends(opts(R"({"gap_tail_ratios": [0.0, 1.0]})"));
  ends.seed_mock(keys(8), objects(8));
  EXPECT_EQ(ends.load(keys(8)).to_string(), "01111110");
}

TEST(FaultInjectAdapterConcurrency, DropChunkHashesAreContentKeyed) {
  const std::string hex3 = key(3).chunk_hash_hex();
  Harness h(opts(("{\"drop_chunk_hashes\": [\"" + hex3 + "\"]}").c_str()));
  auto k = keys(8);
  h.seed_mock(k, objects(8));
  EXPECT_EQ(h.load(k).to_string(), "11101111");
  std::swap(k[0], k[3]);
  EXPECT_EQ(h.load(k).to_string(), "01111111");
}

TEST(FaultInjectAdapterConcurrency, RateDropIsDeterministicAcrossInstances) {
  auto dropped = [](std::int64_t seed) {
    Harness h(opts(("{\"rate\": 0.3, \"seed\": " + std::to_string(seed) + "}").c_str()));
    h.seed_mock(keys(64), objects(64));
    Bitmap bits = h.load(keys(64));
    return (~bits).set_indices();
  };
  auto a = dropped(42), b = dropped(42), c = dropped(1234);
  // The set CPython's rule gives (drop_rule_test.cc).
  EXPECT_EQ(a, (std::vector<std::size_t>{2,  4,  14, 23, 26, 27, 28, 29, 30, 32, 33,
                                         34, 38, 40, 41, 46, 49, 52, 55, 59, 61, 62}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(FaultInjectAdapterConcurrency, RateDropWithinTolerance) {
  Harness h(opts(R"({"rate": 0.25})"));
  h.seed_mock(keys(200), objects(200));
  auto dropped = 200 - h.load(keys(200)).popcount();
  EXPECT_GE(dropped, 25u);
  EXPECT_LE(dropped, 75u);
  EXPECT_EQ(h.events(FaultKind::kLoadDrop).size(), dropped);
}

// ---------------------------------------------------------------------------------------------
// New fault kinds, one test each.

TEST(FaultInjectAdapterConcurrency, StoreFailNeverForwardLeavesNothingBehind) {
  Harness h(opts(R"({"store_fail_rate": 1.0, "store_fail_mode": "never_forward"})"));
  auto r = wait_store(*h.adapter, h.adapter->submit_store_task(keys(4), objects(4)));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->is_successful());
  EXPECT_EQ(r->bytes_transferred(), 0u);
  EXPECT_EQ(h.mock->stored_object_count(), 0u);
  auto ev = h.events(FaultKind::kStoreFail);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].effect, FaultEffect::kFailsTask);
  EXPECT_EQ(ev[0].keys, keys(4));
  EXPECT_EQ(h.lookup(keys(4)).popcount(), 0u);
}

TEST(FaultInjectAdapterConcurrency, StoreFailDeleteAfterRemovesTheKeysBeforeReporting) {
  Harness h(opts(R"({"store_fail_rate": 1.0, "store_fail_mode": "delete_after"})"));
  auto r = wait_store(*h.adapter, h.adapter->submit_store_task(keys(4), objects(4)));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->is_successful());
  // The failure is published only after the deletion: nothing is visible now.
  EXPECT_EQ(h.mock->stored_object_count(), 0u);
  EXPECT_EQ(h.load(keys(4)).popcount(), 0u);
  EXPECT_THAT(h.events(FaultKind::kStoreFail)[0].detail, HasSubstr("delete_after"));
}

TEST(FaultInjectAdapterConcurrency, SubmitThrowForwardsNothing) {
  Harness h(opts(R"({"submit_throw_rate": 1.0})"));
  EXPECT_THROW(h.adapter->submit_store_task(keys(2), objects(2)), InjectedFault);
  EXPECT_THROW(h.adapter->submit_load_task(keys(2), objects(2)), InjectedFault);
  EXPECT_THROW(h.adapter->submit_lookup_and_lock_task(keys(2)), InjectedFault);
  EXPECT_EQ(h.mock->stored_object_count(), 0u);
  auto ev = h.events(FaultKind::kSubmitThrow);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].keys, keys(2));
  // Argument errors still come first... or rather: the inner's contract errors still apply.
  EXPECT_THROW(h.adapter->submit_store_task(keys(2), objects(1)), std::invalid_argument);
}

TEST(FaultInjectAdapterConcurrency, LookupMissHidesTheKeyAndReleasesItsLock) {
  Harness h(opts(R"({"lookup_miss_rate": 1.0})"));
  auto k = keys(3);
  h.seed_mock(k, objects(3));
  EXPECT_EQ(h.lookup(k).popcount(), 0u);
  // The inner locked the keys; the injector unlocked them (unlock runs on the mock's worker).
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (h.mock->locked_key_count() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(h.mock->locked_key_count(), 0u);
  EXPECT_EQ(h.events(FaultKind::kLookupMiss).size(), 3u);
  EXPECT_EQ(h.load(k).popcount(), 3u);  // only lookups are affected
}

TEST(FaultInjectAdapterConcurrency, CorruptFlipsBitsAndKeepsTheBitSet) {
  Harness h(opts(R"({"corrupt_rate": 1.0, "corrupt_bits": 3})"));
  auto k = keys(4);
  auto src = objects(4);
  h.seed_mock(k, src);
  std::vector<MemoryObjPtr> dst;
  EXPECT_EQ(h.load(k, &dst).popcount(), 4u);
  auto ev = h.events(FaultKind::kCorrupt);
  ASSERT_EQ(ev.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ev[i].effect, FaultEffect::kCorruptsData);
    EXPECT_EQ(ev[i].keys, std::vector<ObjectKey>{k[i]});
    ASSERT_EQ(ev[i].objects.size(), 1u);
    EXPECT_EQ(ev[i].objects[0], dst[i].get());
    EXPECT_EQ(ev[i].effective, std::memcmp(src[i]->data(), dst[i]->data(), 64) != 0);
  }
}

TEST(FaultInjectAdapterConcurrency, TruncateNarrowShrinksTheLoadedSize) {
  Harness h(opts(R"({"truncate_rate": 1.0, "truncate_mode": "narrow"})"));
  h.seed_mock(keys(2), objects(2));
  std::vector<MemoryObjPtr> dst;
  EXPECT_EQ(h.load(keys(2), &dst).popcount(), 2u);
  EXPECT_LT(dst[0]->size(), 64u);
  EXPECT_LT(dst[1]->size(), 64u);
  auto ev = h.events(FaultKind::kTruncate);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].effect, FaultEffect::kFailsTask);  // a deserializer must reject it
  EXPECT_EQ(ev[0].keys, keys(2));
}

// Damage says which key it hit and the first byte it changed or removed, so that a consumer can
// tell damage to the bytes a deserializer reads from damage past them (FaultEvent).
TEST(FaultInjectAdapterConcurrency, DamageNamesItsKeyAndFirstDamagedByte) {
  for (const char* mode : {"narrow", "zero_tail"}) {
    SCOPED_TRACE(mode);
    const std::string knobs =
        std::string(R"({"truncate_rate": 1.0, "truncate_mode": ")") + mode + "\"}";
    Harness h(opts(knobs.c_str()));
    h.seed_mock(keys(3), objects(3, 9));  // no zero byte: every zeroed byte is changed
    std::vector<MemoryObjPtr> dst;
    EXPECT_EQ(h.load(keys(3), &dst).popcount(), 3u);
    auto ev = h.events(FaultKind::kTruncate);
    ASSERT_EQ(ev.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
      ASSERT_TRUE(ev[i].damaged_key && ev[i].first_damaged_byte) << ev[i].to_string();
      EXPECT_EQ(*ev[i].damaged_key, keys(3)[i]);
      const std::string& d = ev[i].detail;
      const std::size_t keep = std::string(mode) == "narrow"
                                   ? dst[i]->size()
                                   : std::stoul(d.substr(d.find("from byte ") + 10));
      EXPECT_EQ(*ev[i].first_damaged_byte, keep) << d;
      EXPECT_NE(ev[i].to_string().find("damaged from byte " + std::to_string(keep)),
                std::string::npos)
          << ev[i].to_string();
    }
  }
  Harness h(opts(R"({"corrupt_rate": 1.0, "corrupt_bits": 3})"));
  h.seed_mock(keys(4), objects(4));
  std::vector<MemoryObjPtr> dst;
  EXPECT_EQ(h.load(keys(4), &dst).popcount(), 4u);
  auto ev = h.events(FaultKind::kCorrupt);
  ASSERT_EQ(ev.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ev[i].damaged_key);
    EXPECT_EQ(*ev[i].damaged_key, keys(4)[i]);
    std::optional<std::size_t> first;
    for (std::size_t b = 0; b < 64 && !first; ++b) {
      if (std::to_integer<int>(dst[i]->bytes()[b]) != 1 + static_cast<int>(i)) first = b;
    }
    EXPECT_EQ(ev[i].first_damaged_byte, first) << ev[i].to_string();
    EXPECT_EQ(ev[i].effective, first.has_value());
  }
}

TEST(FaultInjectAdapterConcurrency, TruncateZeroTailKeepsTheSizeAndZeroesTheTail) {
  Harness h(opts(R"({"truncate_rate": 1.0, "truncate_mode": "zero_tail"})"));
  h.seed_mock(keys(2), objects(2, 7));
  std::vector<MemoryObjPtr> dst;
  EXPECT_EQ(h.load(keys(2), &dst).popcount(), 2u);
  EXPECT_EQ(dst[0]->size(), 64u);
  auto ev = h.events(FaultKind::kTruncate);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].effect, FaultEffect::kCorruptsData);
  for (int i = 0; i < 2; ++i) {
    const std::string& d = ev[i].detail;
    const std::size_t keep = std::stoul(d.substr(d.find("from byte ") + 10));
    for (std::size_t b = 0; b < 64; ++b) {
      EXPECT_EQ(std::to_integer<int>(dst[i]->bytes()[b]), b < keep ? 7 + i : 0)
          << d << " byte " << b;
    }
  }
}

TEST(FaultInjectAdapterConcurrency, ReportStatusAddsEveryKnob) {
  Harness h(opts(R"({"rate": 0.1, "seed": 9, "gap_indices": [5, 2], "hang_rate": 0.5})"));
  Json fi = h.adapter->report_status()["fault_inject"];
  for (const char* k : {"rate",
                        "seed",
                        "gap_indices",
                        "gap_tail_ratios",
                        "drop_chunk_hashes",
                        "store_fail_rate",
                        "store_fail_mode",
                        "submit_throw_rate",
                        "lookup_miss_rate",
                        "corrupt_rate",
                        "corrupt_bits",
                        "truncate_rate",
                        "truncate_mode",
                        "delay_rate",
                        "max_delay_ms",
                        "reorder_rate",
                        "coalesce_rate",
                        "max_hold_ms",
                        "spurious_wakeup_rate",
                        "hang_rate",
                        "slow_close_ms",
                        "pending"}) {
    EXPECT_TRUE(fi.contains(k)) << k;
  }
  EXPECT_EQ(fi["gap_indices"], Json::parse("[2, 5]"));
  EXPECT_EQ(h.adapter->report_status()["is_healthy"], true);
}

// ---------------------------------------------------------------------------------------------
// Timing faults (thread-heavy).

// Each completion is held back by its delay: seen no sooner than its recorded delay after its
// submit (a lower bound, which a slow machine only makes easier to meet). The order delays give
// (publication in due order, whatever the scheduling order) is PublicationSchedule's, checked on
// a clock of the test's own in publication_schedule_test.cc.
TEST(FaultInjectAdapterTimingConcurrency, DelaysHoldEachCompletionAtLeastItsDelay) {
  Harness h(opts(R"({"delay_rate": 1.0, "max_delay_ms": 150})"));
  const int n = 12;
  std::vector<std::vector<ObjectKey>> batch;
  std::vector<TaskId> ids;
  std::vector<std::chrono::steady_clock::time_point> submitted;
  for (int i = 0; i < n; ++i) {
    batch.push_back({key(100 + i)});
    submitted.push_back(std::chrono::steady_clock::now());
    ids.push_back(h.adapter->submit_lookup_and_lock_task(batch.back()));
  }
  std::map<int, std::chrono::steady_clock::duration> seen_after;  // task -> since its submit
  while (static_cast<int>(seen_after.size()) < n) {
    for (int i = 0; i < n; ++i) {
      if (seen_after.count(i) == 0 && h.adapter->query_lookup_and_lock_result(ids[i])) {
        seen_after[i] = std::chrono::steady_clock::now() - submitted[i];
      }
    }
    wait_readable(h.adapter->get_lookup_and_lock_event_fd(), 5ms);
    consume_fd(h.adapter->get_lookup_and_lock_event_fd());
  }
  std::map<int, long> delay_us;
  for (const auto& e : h.events(FaultKind::kDelay)) {
    int i = static_cast<int>(std::find(batch.begin(), batch.end(), e.keys) - batch.begin());
    delay_us[i] = std::stol(e.detail.substr(e.detail.find('+') + 1));
  }
  ASSERT_EQ(static_cast<int>(delay_us.size()), n) << "every completion is delayed";
  long longest = 0;
  for (const auto& [i, us] : delay_us) {
    EXPECT_GE(us, 0);
    EXPECT_LE(us, 150'000);
    EXPECT_GE(seen_after[i], std::chrono::microseconds(us)) << "task " << i;
    longest = std::max(longest, us);
  }
  EXPECT_GT(longest, 0) << "no delay drawn above 0; pick another seed";
}

// A held completion (reorder / coalesce) stays invisible until the next completion of its
// kind is published, then appears with it. Each task's fate is waited for, with no time
// assumed: its hold is recorded (held) or its result appears (published). max_hold_ms is far
// past any stall, so a held result never comes out alone on its own timer meanwhile.
void check_holds(const char* json, FaultKind kind) {
  Harness h(opts(json));
  const int n = 12;
  std::vector<std::pair<int, TaskId>> holding;  // tasks waiting for a partner
  int held_seen = 0, released = 0;
  const int fd = h.adapter->get_lookup_and_lock_event_fd();
  for (int i = 0; i < n; ++i) {
    TaskId id = h.adapter->submit_lookup_and_lock_task({key(500 + i)});
    bool is_held = false;
    bool published = false;
    while (!is_held && !published) {
      for (const auto& e : h.events(kind)) {
        is_held |= e.keys == std::vector<ObjectKey>{key(500 + i)};
      }
      // A hold is recorded before it takes effect: once recorded, the result is not out.
      if (!is_held) published = h.adapter->query_lookup_and_lock_result(id).has_value();
      if (!is_held && !published) {
        wait_readable(fd, 5ms);
        consume_fd(fd);
      }
    }
    if (is_held) {
      // Nothing was published: neither this task nor the ones already held.
      EXPECT_FALSE(h.adapter->query_lookup_and_lock_result(id))
          << "held task " << i << " was published alone";
      holding.emplace_back(i, id);
      ++held_seen;
      continue;
    }
    // The held ones come out with this one, in the same publication pass: just before it
    // (coalesce) or just after it (reorder). The pass runs under the adapter's mutex, which
    // pending_summary() takes: once it returns, the pass that published this one is over.
    h.adapter->pending_summary();
    for (auto [j, held] : holding) {
      EXPECT_TRUE(h.adapter->query_lookup_and_lock_result(held))
          << "held task " << j << " was not published with task " << i;
      ++released;
    }
    holding.clear();
  }
  EXPECT_GT(held_seen, 0);
  EXPECT_GT(released, 0);
}

TEST(FaultInjectAdapterTimingConcurrency, ReorderHoldsACompletionUntilTheNextOne) {
  check_holds(R"({"reorder_rate": 0.5, "max_hold_ms": 60000, "seed": 1})", FaultKind::kReorder);
}

TEST(FaultInjectAdapterTimingConcurrency, CoalescePublishesTwoCompletionsBackToBack) {
  check_holds(R"({"coalesce_rate": 0.5, "max_hold_ms": 60000, "seed": 2})", FaultKind::kCoalesce);
}

TEST(FaultInjectAdapterTimingConcurrency, CoalescedWakeUpsCarrySeveralResults) {
  Harness h(opts("{}"));
  std::vector<TaskId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(h.adapter->submit_lookup_and_lock_task({key(i)}));
  // Do not read the fd while they complete: take the five results first (however long they
  // take), then read. One thread publishes, each result before its notify, so by the time the
  // fifth result is out the four notifies before it are in the counter: one read carries them.
  std::vector<bool> taken(ids.size(), false);
  for (std::size_t left = ids.size(); left > 0;) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!taken[i] && h.adapter->query_lookup_and_lock_result(ids[i])) {
        taken[i] = true;
        --left;
      }
    }
    if (left > 0) std::this_thread::yield();
  }
  const int fd = h.adapter->get_lookup_and_lock_event_fd();
  const std::uint64_t first = consume_fd(fd);
  EXPECT_GE(first, 4u) << "the first read carried " << first << " result(s)";
  std::uint64_t total = first;
  while (total < 5) {
    ASSERT_TRUE(wait_readable(fd, 600000ms));
    total += consume_fd(fd);
  }
  EXPECT_EQ(total, 5u);
}

TEST(FaultInjectAdapterTimingConcurrency, SpuriousWakeUpsSignalWithoutAResult) {
  Harness h(opts(R"({"spurious_wakeup_rate": 1.0})"));
  consume_fd(h.adapter->get_store_event_fd());
  consume_fd(h.adapter->get_load_event_fd());
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(wait_lookup(*h.adapter, h.adapter->submit_lookup_and_lock_task({key(i)})));
  }
  // Each extra notify follows its lookup's result on the publishing thread: read the two fds
  // until one has carried one (no time assumed; nothing else notifies them here).
  std::uint64_t extra = 0;
  while (extra == 0) {
    extra =
        consume_fd(h.adapter->get_store_event_fd()) + consume_fd(h.adapter->get_load_event_fd());
    if (extra == 0) std::this_thread::yield();
  }
  EXPECT_TRUE(h.adapter->pop_completed_store_tasks().empty());
  EXPECT_EQ(h.events(FaultKind::kSpuriousWakeup).size(), 12u);
}

TEST(FaultInjectAdapterTimingConcurrency, HangNeverCompletesAndCloseDropsIt) {
  Harness h(opts(R"({"hang_rate": 1.0})"));
  TaskId store = h.adapter->submit_store_task(keys(2), objects(2));
  TaskId load = h.adapter->submit_load_task(keys(2), objects(2));
  TaskId lookup = h.adapter->submit_lookup_and_lock_task(keys(2));  // lookups never hang
  EXPECT_TRUE(wait_lookup(*h.adapter, lookup));
  // Wait until the inner adapter has done both tasks and the injector holds them as hung (no
  // time assumed), then check that neither was published.
  Json pending = h.adapter->pending_summary();
  while (pending["store"]["hung"] != 1 || pending["load"]["hung"] != 1) {
    std::this_thread::yield();
    pending = h.adapter->pending_summary();
  }
  EXPECT_TRUE(h.adapter->pop_completed_store_tasks().empty());
  EXPECT_FALSE(h.adapter->query_load_result(load));
  EXPECT_EQ(pending["store"]["hung"], 1);
  EXPECT_EQ(pending["load"]["hung"], 1);
  EXPECT_THAT(h.adapter->describe_task(key(0)), HasSubstr("hung on purpose"));
  EXPECT_EQ(h.events(FaultKind::kHang).size(), 2u);
  h.adapter->close();
  EXPECT_TRUE(h.adapter->pop_completed_store_tasks().empty());
  EXPECT_FALSE(h.adapter->query_load_result(load));
  (void)store;
}

// ---------------------------------------------------------------------------------------------
// close().

TEST(FaultInjectAdapterCloseConcurrency, SlowCloseSleepsFirst) {
  Harness h(opts(R"({"slow_close_ms": 150})"));
  auto t0 = std::chrono::steady_clock::now();
  h.adapter->close();
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
  EXPECT_EQ(h.events(FaultKind::kSlowClose).size(), 1u);
}

TEST(FaultInjectAdapterCloseConcurrency, IdempotentKeepsPublishedResultsAndRejectsSubmits) {
  Harness h(opts("{}"));
  TaskId id = h.adapter->submit_lookup_and_lock_task(keys(1));
  ASSERT_TRUE(wait_readable(h.adapter->get_lookup_and_lock_event_fd(), 5s));
  std::this_thread::sleep_for(20ms);
  const int fd = h.adapter->get_store_event_fd();
  EXPECT_GE(fd, 0);
  EXPECT_NE(fd, h.adapter->get_load_event_fd());
  EXPECT_NE(fd, h.mock->get_store_event_fd());
  h.adapter->close();
  h.adapter->close();
  EXPECT_EQ(h.adapter->get_store_event_fd(), -1);
  EXPECT_TRUE(h.adapter->query_lookup_and_lock_result(id));
  EXPECT_THROW(h.adapter->submit_store_task(keys(1), objects(1)), std::logic_error);
  EXPECT_THROW(h.adapter->submit_load_task(keys(1), objects(1)), std::logic_error);
  EXPECT_THROW(h.adapter->submit_lookup_and_lock_task(keys(1)), std::logic_error);
  EXPECT_THROW(h.adapter->delete_keys(keys(1)), std::logic_error);
  EXPECT_THROW(h.adapter->submit_unlock(keys(1)), std::logic_error);
  EXPECT_NO_THROW(h.adapter->report_status());
  EXPECT_NO_THROW(h.adapter->get_usage());
}

TEST(FaultInjectAdapterCloseConcurrency, ConcurrentSubmittersAndClose) {
  Harness h(opts(R"({"delay_rate": 0.5, "max_delay_ms": 5, "reorder_rate": 0.2,
                     "coalesce_rate": 0.2, "spurious_wakeup_rate": 0.3, "rate": 0.2,
                     "corrupt_rate": 0.2, "lookup_miss_rate": 0.2, "store_fail_rate": 0.2})"));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; !stop.load(); ++i) {
        auto k = keys(3, 1000 * t + (i % 50) * 3);
        try {
          switch (i % 3) {
            case 0:
              h.adapter->submit_store_task(k, objects(3));
              break;
            case 1:
              h.adapter->submit_load_task(k, objects(3));
              break;
            default:
              h.adapter->submit_lookup_and_lock_task(k);
              break;
          }
          h.adapter->pop_completed_store_tasks();
        } catch (const std::logic_error&) {
          return;  // closed
        }
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  h.adapter->close();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.adapter->report_status()["fault_inject"]["pump_errors"], 0);
}

}  // namespace
}  // namespace lmcache::fault
