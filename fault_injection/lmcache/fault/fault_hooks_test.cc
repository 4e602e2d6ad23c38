#include "lmcache/fault/fault_hooks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "lmcache/core/testing/test_keys.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_utils.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"
#include "lmcache/wrapper/testing/wrapper_test_support.h"

namespace lmcache::fault {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const MemoryLayoutDesc kLayout = MemoryLayoutDesc::single({4, 8}, DType::kFloat32);

MemoryObjPtr kv(float base) {
  auto obj = MemoryObj::allocate(kLayout);
  auto* f = reinterpret_cast<float*>(obj->data());
  for (int i = 0; i < 32; ++i) f[i] = base + 0.25f * static_cast<float>(i % 8);  // exact in e4m3
  return obj;
}

MemoryObjPtr bytes_for(const Serializer& s) {
  return MemoryObj::allocate(MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(s.estimate_serialized_size(kLayout))}, DType::kUInt8));
}

std::vector<FaultEvent> of_kind(FaultLog& log, FaultKind kind) {
  std::vector<FaultEvent> out;
  for (auto& e : log.drain()) {
    if (e.kind == kind) out.push_back(std::move(e));
  }
  return out;
}

ObjectKey key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "test_model", 0); }

// ---------------------------------------------------------------------------------------------
// L1.

TEST(FaultHooks, L1HookFailsTheNthCallAndTheWholeBatch) {
  auto log = std::make_shared<FaultLog>();
  L1AllocFaultHook hook(L1FaultOptions{0.0, {2}}, 0, log);
  L1Manager l1(1 << 20, hook.factory());
  const auto layout = MemoryLayoutDesc::single({128}, DType::kUInt8);
  auto ok = l1.reserve_write({key(0), key(1)}, {false, false}, layout);  // calls 0, 1
  EXPECT_EQ(ok[0].error, L1Error::kSuccess);
  EXPECT_EQ(ok[1].error, L1Error::kSuccess);
  std::vector<L1Result> failed;
  {
    AttributionScope scope(77);
    failed = l1.reserve_write({key(2), key(3)}, {false, false}, layout);  // call 2 fails
  }
  EXPECT_EQ(failed[0].error, L1Error::kOutOfMemory);
  EXPECT_EQ(failed[1].error, L1Error::kOutOfMemory);
  EXPECT_EQ(l1.get_memory_usage().used_bytes, 256u);  // nothing of the failed batch stays
  EXPECT_EQ(hook.failures(), 1u);
  auto ev = of_kind(*log, FaultKind::kL1AllocFail);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].scope_tag, 77u);
  EXPECT_EQ(ev[0].effect, FaultEffect::kFailsTask);
  EXPECT_EQ(l1.reserve_write({key(2)}, {false}, layout)[0].error, L1Error::kSuccess);
}

TEST(FaultHooks, L1HookRateIsSeeded) {
  auto pattern = [](std::int64_t seed) {
    L1AllocFaultHook hook(L1FaultOptions{0.3, {}}, seed);
    auto f = hook.factory();
    std::string out;
    for (int i = 0; i < 64; ++i) {
      try {
        f(MemoryLayoutDesc::single({8}, DType::kUInt8));
        out += '.';
      } catch (const std::bad_alloc&) {
        out += 'x';
      }
    }
    return out;
  };
  EXPECT_EQ(pattern(4), pattern(4));
  EXPECT_NE(pattern(4), pattern(5));
  EXPECT_NE(pattern(4).find('x'), std::string::npos);
  EXPECT_NE(pattern(4).find('.'), std::string::npos);
}

TEST(FaultHooks, OptionsJson) {
  auto l1 =
      L1FaultOptions::from_json(Json::parse(R"({"alloc_fail_rate": 0.5, "alloc_fail_nth": [3]})"));
  EXPECT_EQ(L1FaultOptions::from_json(l1.to_json()).to_json(), l1.to_json());
  EXPECT_THROW(L1FaultOptions::from_json(Json::parse(R"({"alloc_fail_nth": [-1]})")),
               std::invalid_argument);
  auto s = SerdeFaultOptions::from_json(Json::parse(R"({"deserialize_throw_rate": 1})"));
  EXPECT_EQ(s.deserialize_throw_rate, 1.0);
  EXPECT_THROW(SerdeFaultOptions::from_json(Json::parse(R"({"deserialise_throw_rate": 1})")),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Serializer / deserializer / processor.

TEST(FaultHooks, SerializerThrowsBeforeWriting) {
  auto log = std::make_shared<FaultLog>();
  SerdeFaultOptions o;
  o.serialize_throw_rate = 1.0;
  FaultySerializer s(std::make_shared<Fp8Serializer>(), o, 1, log);
  auto src = kv(1.0f);
  auto dst = bytes_for(s);
  EXPECT_THROW(s.serialize(*src, *dst, test_key()), InjectedFault);
  for (std::byte b : dst->bytes()) EXPECT_EQ(std::to_integer<int>(b), 0);
  auto ev = of_kind(*log, FaultKind::kSerializeThrow);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].objects, std::vector<const MemoryObj*>{src.get()});
}

TEST(FaultHooks, SerializerWrongCountRecordsItsConsequence) {
  auto log = std::make_shared<FaultLog>();
  SerdeFaultOptions o;
  o.serialize_wrong_count_rate = 1.0;
  FaultySerializer s(std::make_shared<Fp8Serializer>(), o, 3, log);
  std::set<FaultEffect> effects;
  for (int i = 0; i < 40; ++i) {
    auto src = kv(static_cast<float>(i % 4));  // repeated content: occurrence counts differ
    auto dst = bytes_for(s);
    std::size_t n = s.serialize(*src, *dst, test_key());
    auto ev = of_kind(*log, FaultKind::kSerializeWrongCount);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_NE(n, 32u);
    FaultEffect want = n < 32                      ? FaultEffect::kPoisonsStored
                       : n <= dst->physical_size() ? FaultEffect::kNone
                                                   : FaultEffect::kFailsTask;
    EXPECT_EQ(ev[0].effect, want) << ev[0].detail;
    if (want == FaultEffect::kNone) {
      // The extra byte reported as written has a seeded value, not what the buffer held.
      EXPECT_NE(std::to_integer<int>(dst->data()[32]), 0) << ev[0].detail;
    }
    effects.insert(ev[0].effect);
  }
  EXPECT_EQ(effects.size(), 3u);  // all three lies show up
}

TEST(FaultHooks, EstimateUnderReportsInsideTheCallersScope) {
  auto log = std::make_shared<FaultLog>();
  SerdeFaultOptions o;
  o.estimate_under_report_rate = 1.0;
  FaultySerializer s(std::make_shared<Fp8Serializer>(), o, 1, log);
  std::size_t est;
  {
    AttributionScope scope(5);
    est = s.estimate_serialized_size(kLayout);
  }
  EXPECT_EQ(est, Fp8Serializer().estimate_serialized_size(kLayout) / 3);
  auto ev = of_kind(*log, FaultKind::kEstimateUnderReport);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].scope_tag, 5u);
  EXPECT_EQ(ev[0].effect, FaultEffect::kMayFail);
}

TEST(FaultHooks, DeserializerThrowsWithoutWriting) {
  auto log = std::make_shared<FaultLog>();
  SerdeFaultOptions o;
  o.deserialize_throw_rate = 1.0;
  FaultyDeserializer d(std::make_shared<Fp8Deserializer>(), o, 1, log);
  Fp8Serializer ser;
  auto src = kv(1.0f);
  auto wire = bytes_for(ser);
  wire->set_used_size(ser.serialize(*src, *wire, test_key()));
  auto dst = MemoryObj::allocate(kLayout);
  EXPECT_THROW(d.deserialize(*wire, *dst, test_key()), InjectedFault);
  for (std::byte b : dst->bytes()) EXPECT_EQ(std::to_integer<int>(b), 0);
  auto ev = of_kind(*log, FaultKind::kDeserializeThrow);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].objects[0], dst.get());
}

TEST(FaultHooks, ProcessorSubmitsThrowAndOtherwiseForward) {
  auto log = std::make_shared<FaultLog>();
  SerdeFaultOptions throwing;
  throwing.submit_throw_rate = 1.0;
  FaultySerde faulty =
      make_faulty_serde_processor(Json::parse(R"({"type": "fp8"})"), throwing, 1, log);
  EXPECT_TRUE(faulty.sync_hooks);
  auto src = kv(1.0f);
  auto wire = MemoryObj::allocate(serialized_layout_desc(kLayout, *faulty.processor));
  EXPECT_THROW(faulty.processor->submit_serialize({src}, {wire}, test_keys(1)), InjectedFault);
  EXPECT_THROW(faulty.processor->submit_deserialize({wire}, {src}, test_keys(1)), InjectedFault);
  auto ev = of_kind(*log, FaultKind::kSerdeSubmitThrow);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].objects[0], src.get());  // serialize: the caller's srcs
  EXPECT_EQ(ev[1].objects[0], src.get());  // deserialize: the caller's dsts
  faulty.processor->close();

  FaultySerde clean = make_faulty_serde_processor(Json::parse(R"({"type": "fp8"})"), {}, 1, log);
  TaskId id = clean.processor->submit_serialize({src}, {wire}, test_keys(1));
  ASSERT_TRUE(wait_readable(clean.processor->get_serialize_event_fd(), 5s));
  std::optional<bool> ok;
  for (int i = 0; i < 500 && !ok; ++i) {
    ok = clean.processor->query_serialize_result(id);
    if (!ok) std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(ok, std::optional<bool>(true));
  clean.processor->close();
  EXPECT_THROW(make_faulty_serde_processor(Json::parse(R"({"type": "nope"})"), {}, 1, log),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Through the wrapper: each hook's fault surfaces as the wrapper's all-or-nothing failure.

struct WrappedStack {
  WrappedStack(L1FaultOptions l1_faults, SerdeFaultOptions serde_faults) {
    log = std::make_shared<FaultLog>();
    hook = std::make_unique<L1AllocFaultHook>(l1_faults, 1, log);
    l1 = std::make_shared<L1Manager>(std::size_t{4} << 20, hook->factory());
    // A FlakyAdapter lends no store buffers, so stores take their temps from L1 (the hook's
    // target) instead of serializing into the mock's lent buffers.
    auto inner = std::make_unique<lmcache::wrapper_internal::FlakyAdapter>(
        std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(0.01, 10)));
    auto serde =
        make_faulty_serde_processor(Json::parse(R"({"type": "fp8"})"), serde_faults, 1, log);
    wrapper =
        std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(serde.processor), l1);
  }
  ~WrappedStack() { wrapper->close(); }
  std::shared_ptr<FaultLog> log;
  std::unique_ptr<L1AllocFaultHook> hook;
  std::shared_ptr<L1Manager> l1;
  std::unique_ptr<SerdeL2AdapterWrapper> wrapper;
};

TEST(FaultHooksConcurrency, L1FailureFailsTheWrappedStoreAndReleasesEverything) {
  WrappedStack s(L1FaultOptions{1.0, {}}, {});
  auto r = lmcache::wrapper_internal::wait_store(
      *s.wrapper, s.wrapper->submit_store_task({key(0), key(1)}, {kv(0), kv(1)}));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->is_successful());
  EXPECT_EQ(s.l1->get_memory_usage().used_bytes, 0u);
  EXPECT_EQ(s.log->count(FaultKind::kL1AllocFail), 1u);  // one batch, one failed call
}

TEST(FaultHooksConcurrency, SerdeFaultsFailTheWrappedTasks) {
  SerdeFaultOptions ser;
  ser.serialize_throw_rate = 1.0;
  WrappedStack store_side({}, ser);
  auto r = lmcache::wrapper_internal::wait_store(
      *store_side.wrapper, store_side.wrapper->submit_store_task({key(0)}, {kv(0)}));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->is_successful());

  SerdeFaultOptions deser;
  deser.deserialize_throw_rate = 1.0;
  WrappedStack load_side({}, deser);
  auto ok = lmcache::wrapper_internal::wait_store(
      *load_side.wrapper, load_side.wrapper->submit_store_task({key(0), key(1)}, {kv(0), kv(1)}));
  ASSERT_TRUE(ok && ok->is_successful());
  auto bits = lmcache::wrapper_internal::wait_load(
      *load_side.wrapper,
      load_side.wrapper->submit_load_task(
          {key(0), key(1)}, {MemoryObj::allocate(kLayout), MemoryObj::allocate(kLayout)}));
  ASSERT_TRUE(bits);
  EXPECT_EQ(bits->to_string(), "00");
  EXPECT_EQ(load_side.log->count(FaultKind::kDeserializeThrow), 1u);
  EXPECT_EQ(load_side.l1->get_memory_usage().used_bytes, 0u);
}

}  // namespace
}  // namespace lmcache::fault
