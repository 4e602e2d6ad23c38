#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <fcntl.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "lmcache/core/handoff_probe.h"
#include "lmcache/core/testing/thread_state.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/wrapper/adapter_factory.h"
#include "lmcache/wrapper/testing/alloc_failure.h"
#include "lmcache/wrapper/testing/wrapper_test_support.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using wrapper_internal::ControlledDeserializer;
using wrapper_internal::ControlledSerializer;
using wrapper_internal::FlakyAdapter;
using wrapper_internal::FlakySerdeProcessor;
using wrapper_internal::Gate;
using wrapper_internal::open_once_the_loop_stopped;
using wrapper_internal::wait_load;
using wrapper_internal::wait_store;

constexpr std::size_t kL1Capacity = 512u << 20;

ObjectKey key(std::uint32_t i, std::string salt = "") {
  return ObjectKey(int_hash_to_bytes(i), "model", 0, 0, std::move(salt));
}

std::vector<ObjectKey> keys(std::uint32_t first, std::size_t n) {
  std::vector<ObjectKey> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(key(first + static_cast<std::uint32_t>(i)));
  return out;
}

// Fills `obj` with values that are exact in both fp8 formats, so round trips are bit-exact.
void fill_fp8_exact(MemoryObj& obj, std::uint32_t seed) {
  static const float kValues[] = {0.0f,  0.5f,  1.0f,  1.5f, 2.0f,   3.0f,  4.0f,   -0.5f,
                                  -1.0f, -2.0f, 0.25f, 8.0f, -16.0f, 96.0f, 0.125f, -3.0f};
  std::mt19937 rng(seed);
  const auto& layout = obj.layout();
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    auto bytes = obj.group_bytes(g);
    DType dt = layout.dtypes()[g];
    for (std::size_t i = 0; i < layout.group_elements(g); ++i) {
      float v = kValues[rng() % 16];
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      if (dt == DType::kFloat32) {
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      } else if (dt == DType::kBFloat16) {
        auto h = static_cast<std::uint16_t>(bits >> 16);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      } else if (dt == DType::kFloat16) {
        // These values are exact in fp16; convert through the fp8 codec's exact decode.
        std::uint8_t code = fp8_encode_f32(v, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating);
        std::uint16_t h = fp8_decode_to_f16_bits(code, Fp8Format::kE5M2);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      } else {
        bytes[i] = static_cast<std::byte>(rng());
      }
    }
  }
}

std::vector<MemoryObjPtr> make_objects(const MemoryLayoutDesc& layout, std::size_t n,
                                       std::uint32_t seed, bool fill = true) {
  std::vector<MemoryObjPtr> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(MemoryObj::allocate(layout));
    if (fill) fill_fp8_exact(*out.back(), seed + static_cast<std::uint32_t>(i));
  }
  return out;
}

bool same_bytes(const MemoryObj& a, const MemoryObj& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// A wrapper over a FlakyAdapter(mock) and a FlakySerdeProcessor(Async(controlled fp8)),
// with raw pointers kept to flip the faults.
struct Stack {
  explicit Stack(std::string fp8_dtype = "float8_e4m3fn", std::size_t l1_capacity = kL1Capacity,
                 MockL2AdapterOptions mock = MockL2AdapterOptions::from_gb(1.0, 100.0),
                 std::size_t workers = 2) {
    Fp8SerdeOptions opts;
    opts.format = fp8_dtype == "float8_e5m2" ? Fp8Format::kE5M2 : Fp8Format::kE4M3FN;
    auto ser = std::make_shared<ControlledSerializer>(opts);
    auto de = std::make_shared<ControlledDeserializer>(opts);
    serializer = ser.get();
    deserializer = de.get();
    auto processor = std::make_unique<FlakySerdeProcessor>(
        std::make_unique<AsyncSerdeProcessor>(ser, de, workers));
    serde = processor.get();
    auto inner_adapter = std::make_unique<FlakyAdapter>(std::make_unique<MockL2Adapter>(mock));
    inner = inner_adapter.get();
    l1 = std::make_shared<L1Manager>(l1_capacity);
    wrapper =
        std::make_unique<SerdeL2AdapterWrapper>(std::move(inner_adapter), std::move(processor), l1);
  }
  std::size_t l1_used() const { return l1->get_memory_usage().used_bytes; }

  std::shared_ptr<L1Manager> l1;
  ControlledSerializer* serializer;
  ControlledDeserializer* deserializer;
  FlakySerdeProcessor* serde;
  FlakyAdapter* inner;
  std::unique_ptr<SerdeL2AdapterWrapper> wrapper;
};

// ---------------------------------------------------------------------------------------------
// Round trips.

struct RoundTripCase {
  std::string name;
  MemoryLayoutDesc layout;
  std::size_t batch;
};

class WrapperRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(WrapperRoundTrip, StoreThenLoadIsExactAndLeavesNoTemps) {
  const auto& c = GetParam();
  Stack s;
  const std::size_t baseline = s.l1_used();
  auto ks = keys(100, c.batch);
  auto src = make_objects(c.layout, c.batch, 7);

  TaskId sid = s.wrapper->submit_store_task(ks, src);
  auto stored = wait_store(*s.wrapper, sid);
  ASSERT_TRUE(stored.has_value());
  ASSERT_TRUE(stored->is_successful());
  const std::size_t numel = c.layout.total_elements();
  EXPECT_EQ(stored->bytes_transferred(), numel * c.batch) << "one byte per element reaches L2";
  EXPECT_EQ(s.wrapper->get_usage().total_bytes_used, numel * c.batch);
  EXPECT_EQ(s.l1_used(), baseline) << "temps released after the store";

  auto dst = make_objects(c.layout, c.batch, 0, /*fill=*/false);
  TaskId lid = s.wrapper->submit_load_task(ks, dst);
  auto loaded = wait_load(*s.wrapper, lid);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(*loaded, Bitmap(c.batch, c.batch));
  for (std::size_t i = 0; i < c.batch; ++i) EXPECT_TRUE(same_bytes(*src[i], *dst[i])) << i;
  EXPECT_EQ(s.l1_used(), baseline) << "temps released after the load";
  EXPECT_FALSE(s.wrapper->query_load_result(lid).has_value()) << "one-shot";
  EXPECT_TRUE(s.wrapper->pop_completed_store_tasks().empty());
  EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, WrapperRoundTrip,
    ::testing::Values(
        RoundTripCase{"bfloat16_one_element", MemoryLayoutDesc::single({1}, DType::kBFloat16), 1},
        RoundTripCase{"float16_273", MemoryLayoutDesc::single({273}, DType::kFloat16), 3},
        RoundTripCase{"float32_273", MemoryLayoutDesc::single({3, 91}, DType::kFloat32), 2},
        RoundTripCase{"bfloat16_kv_chunk",
                      MemoryLayoutDesc::single({2, 16, 8, 64}, DType::kBFloat16), 5},
        RoundTripCase{"float16_multi_megabyte",
                      MemoryLayoutDesc::single({2, 1024, 1024}, DType::kFloat16), 2},
        RoundTripCase{"multi_group",
                      MemoryLayoutDesc({{4, 33}, {7}, {2, 5}},
                                       {DType::kBFloat16, DType::kFloat16, DType::kFloat32}),
                      4}),
    [](const auto& info) { return info.param.name; });

// Builds the adapter `config` describes through the factory (with an L1 for its temps), stores
// 3 fp8-exact objects, expects `stored_bytes` to reach L2 and loads them back bit-exact; then
// hands the adapter's report_status() to `more` and expects every temp given back to L1.
void expect_factory_round_trip(const Json& config, std::size_t stored_bytes,
                               const std::string& why = "",
                               const std::function<void(const Json&)>& more = {}) {
  auto l1 = std::make_shared<L1Manager>(kL1Capacity);
  AdapterContext ctx;
  ctx.l1_manager = l1;
  auto adapter = create_l2_adapter(config, ctx);
  auto layout = MemoryLayoutDesc::single({64, 16}, DType::kBFloat16);
  auto src = make_objects(layout, 3, 11);
  auto ks = keys(1, 3);
  auto r = wait_store(*adapter, adapter->submit_store_task(ks, src));
  ASSERT_TRUE(r && r->is_successful());
  EXPECT_EQ(r->bytes_transferred(), stored_bytes) << why;
  auto dst = make_objects(layout, 3, 0, false);
  auto bits = wait_load(*adapter, adapter->submit_load_task(ks, dst));
  ASSERT_TRUE(bits.has_value());
  EXPECT_TRUE(bits->all());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(*src[i], *dst[i]));
  if (more) more(adapter->report_status());
  EXPECT_EQ(l1->get_memory_usage().used_bytes, 0u);
}

TEST(Wrapper, E5m2RoundTripThroughTheFactory) {
  expect_factory_round_trip(
      {{"type", "mock"},
       {"max_size_gb", 0.5},
       {"mock_bandwidth_gb", 50},
       {"serde", {{"type", "fp8"}, {"fp8_dtype", "float8_e5m2"}, {"max_workers", 2}}}},
      3u * 1024u, "", [](const Json& status) {
        EXPECT_EQ(status.value("serde_wrapped", false), true);
        EXPECT_EQ(status.value("type", ""), "MockL2Adapter") << "inner status is kept";
      });
}

// Key-aware serdes through the wrapper: the checksum frame carries the fingerprint of the key
// it was serialized under, so a load verifies only if the wrapper hands the ORIGINAL key to
// both directions (its temp keys are random per task). A frame loaded under another key's slot
// fails the load.
TEST(Wrapper, IntegrityChainRoundTripsUnderTheOriginalKeys) {
  expect_factory_round_trip(Json::parse(R"({
        "type": "mock", "max_size_gb": 0.5, "mock_bandwidth_gb": 50,
        "serde": {"type": "chain", "max_workers": 2,
                  "stages": [{"type": "fp8"}, {"type": "checksum"}]}})"),
                            3u * (1024u + 17u), "fp8 bytes plus the checksum header");
}

// ---------------------------------------------------------------------------------------------
// Failure points: exactly one failed completion, the documented result, no leaked temp.

class WrapperFailureConcurrency : public ::testing::Test {
 protected:
  MemoryLayoutDesc layout_ = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);

  // Stores `n` keys successfully first (for load tests).
  void prestore(Stack& s, std::size_t n) {
    auto r = wait_store(*s.wrapper,
                        s.wrapper->submit_store_task(keys(0, n), make_objects(layout_, n, 3)));
    ASSERT_TRUE(r && r->is_successful());
  }

  void expect_store_fails_once(Stack& s, std::size_t n = 3) {
    const std::size_t baseline = s.l1_used();
    std::map<TaskId, L2StoreResult> seen;
    TaskId id = s.wrapper->submit_store_task(keys(50, n), make_objects(layout_, n, 1));
    auto r = wait_store(*s.wrapper, id, &seen);
    ASSERT_TRUE(r.has_value()) << "the task must complete";
    EXPECT_FALSE(r->is_successful());
    EXPECT_EQ(r->bytes_transferred(), 0u);
    // No second completion arrives.
    EXPECT_FALSE(wait_readable(s.wrapper->get_store_event_fd(), 100ms) &&
                 !s.wrapper->pop_completed_store_tasks().empty());
    EXPECT_EQ(s.l1_used(), baseline) << "no temp leaked";
    EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
  }

  void expect_load_fails_once(Stack& s, std::size_t n = 3) {
    const std::size_t baseline = s.l1_used();
    auto dst = make_objects(layout_, n, 0, false);
    TaskId id = s.wrapper->submit_load_task(keys(0, n), dst);
    auto bits = wait_load(*s.wrapper, id);
    ASSERT_TRUE(bits.has_value()) << "the task must complete";
    EXPECT_EQ(*bits, Bitmap(n)) << "all-zero bitmap of keys.size()";
    EXPECT_FALSE(s.wrapper->query_load_result(id).has_value());
    EXPECT_EQ(s.l1_used(), baseline) << "no temp leaked";
  }
};

TEST_F(WrapperFailureConcurrency, TempOutOfMemoryOnAnyKeyFailsTheWholeStoreAtOnce) {
  // Room for two temps of 384 bytes (1.5 x 256 elements) but not three.
  Stack s("float8_e4m3fn", /*l1_capacity=*/800);
  TaskId id = s.wrapper->submit_store_task(keys(1, 3), make_objects(layout_, 3, 1));
  auto now = s.wrapper->pop_completed_store_tasks();
  ASSERT_EQ(now.size(), 1u) << "completed inside submit";
  EXPECT_FALSE(now.at(id).is_successful());
  EXPECT_EQ(s.l1_used(), 0u);
  EXPECT_FALSE(s.inner->inner().report_status().value("stored_object_count", 0) > 0);
}

TEST_F(WrapperFailureConcurrency, TempOutOfMemoryFailsALoadWithZeros) {
  Stack s("float8_e4m3fn", 800);
  TaskId id = s.wrapper->submit_load_task(keys(1, 3), make_objects(layout_, 3, 0, false));
  auto bits = s.wrapper->query_load_result(id);
  ASSERT_TRUE(bits.has_value()) << "completed inside submit";
  EXPECT_EQ(*bits, Bitmap(3));
  EXPECT_EQ(s.l1_used(), 0u);
}

TEST_F(WrapperFailureConcurrency, SerializeFails) {
  Stack s;
  s.serializer->throw_on_call = 1;  // the second object of the batch
  expect_store_fails_once(s);
  EXPECT_EQ(s.inner->get_usage().total_bytes_used, 0u) << "nothing reached L2";
}

// One failing step of a store, or of a load over stored keys: the task fails once and leaks no
// temp (expect_store_fails_once / expect_load_fails_once). A result query that throws is a
// failure of that task, not a task left pending forever.
struct FailingStep {
  const char* name;
  bool load;            // a load of 3 stored keys, else a store
  void (*arm)(Stack&);  // makes the step fail
};

void PrintTo(const FailingStep& step, std::ostream* os) { *os << step.name; }

class WrapperFailureConcurrencyStep : public WrapperFailureConcurrency,
                                      public ::testing::WithParamInterface<FailingStep> {};

TEST_P(WrapperFailureConcurrencyStep, FailsTheTaskOnce) {
  Stack s;
  if (GetParam().load) prestore(s, 3);
  GetParam().arm(s);
  if (GetParam().load) {
    expect_load_fails_once(s);
  } else {
    expect_store_fails_once(s);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Steps, WrapperFailureConcurrencyStep,
    ::testing::Values(FailingStep{"SubmitSerializeThrows", false,
                                  [](Stack& s) { s.serde->throw_on_submit_serialize = true; }},
                      FailingStep{"InnerSubmitStoreThrows", false,
                                  [](Stack& s) { s.inner->throw_on_submit_store = true; }},
                      FailingStep{"InnerStoreFails", false,
                                  [](Stack& s) { s.inner->fail_stores = true; }},
                      FailingStep{"SerializeQueryThrows", false,
                                  [](Stack& s) { s.serde->throw_on_query = true; }},
                      FailingStep{"InnerSubmitLoadThrows", true,
                                  [](Stack& s) { s.inner->throw_on_submit_load = true; }},
                      FailingStep{"SubmitDeserializeThrows", true,
                                  [](Stack& s) { s.serde->throw_on_submit_deserialize = true; }},
                      FailingStep{"DeserializeFails", true,
                                  [](Stack& s) { s.deserializer->throw_always = true; }},
                      FailingStep{"InnerLoadQueryThrows", true,
                                  [](Stack& s) { s.inner->throw_on_query_load = true; }},
                      FailingStep{"DeserializeQueryThrows", true,
                                  [](Stack& s) { s.serde->throw_on_query = true; }}),
    [](const ::testing::TestParamInfo<FailingStep>& info) { return std::string(info.param.name); });

// Every phase gauge reads zero (a negative one means a phase was left twice).
void expect_no_task_in_any_phase(const SerdeL2AdapterWrapper& w, const std::string& when) {
  for (std::size_t i = 0; i < kWrapperStepCount; ++i) {
    auto step = static_cast<WrapperStep>(i);
    EXPECT_EQ(w.metrics().in_flight(step), 0) << wrapper_step_name(step) << " " << when;
  }
}

TEST_F(WrapperFailureConcurrency, L1ClosedDuringSerializeCompletesTheStoreAsFailedAtOnce) {
  Gate gate;
  Stack s;
  s.serializer->gate = &gate;
  TaskId id = s.wrapper->submit_store_task(keys(10, 2), make_objects(layout_, 2, 1));
  ASSERT_TRUE(gate.wait_entered());
  s.l1->close();  // the serialize drain's next L1 call throws
  gate.open();
  auto r = wait_store(*s.wrapper, id);
  ASSERT_TRUE(r.has_value()) << "the store must complete without waiting for close()";
  EXPECT_FALSE(r->is_successful());
  expect_no_task_in_any_phase(*s.wrapper, "after the failed store");
  EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
  s.wrapper->close();
  expect_no_task_in_any_phase(*s.wrapper, "after close()");
  EXPECT_TRUE(s.wrapper->pop_completed_store_tasks().empty()) << "completed once";
}

TEST_F(WrapperFailureConcurrency, AllocationFailureInTheInnerLoadDrainFailsTheLoadOnce) {
  Stack s;
  prestore(s, 3);
  const std::size_t baseline = s.l1_used();
  int k = 0;
  for (;; ++k) {
    ASSERT_LT(k, 200) << "the drain never got past its allocations";
    const int fired = wrapper_internal::injected_allocation_failures();
    s.inner->fail_allocation_after_query_load = k;  // the k-th allocation of the drain throws
    auto dst = make_objects(layout_, 3, 0, false);
    auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(keys(0, 3), dst));
    s.inner->fail_allocation_after_query_load = -1;
    ASSERT_TRUE(bits.has_value()) << "allocation " << k << ": the load never completed";
    expect_no_task_in_any_phase(*s.wrapper, "allocation " + std::to_string(k));
    EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u) << k;
    EXPECT_EQ(s.l1_used(), baseline) << "allocation " << k << ": a temp leaked";
    if (wrapper_internal::injected_allocation_failures() == fired) {
      EXPECT_TRUE(bits->all()) << "no failure injected: the load succeeds";
      break;
    }
    EXPECT_EQ(*bits, Bitmap(3)) << "allocation " << k << " failed: all-zero bitmap";
  }
  EXPECT_GT(k, 0) << "the drain allocates, so some failure must have been injected";
  EXPECT_EQ(s.wrapper->metrics().summary()["tasks"]["load_failure"].get<std::uint64_t>(),
            static_cast<std::uint64_t>(k));
}

TEST_F(WrapperFailureConcurrency, AllocationFailureAnywhereInASubmitReleasesItsTemps) {
  Stack s;
  prestore(s, 3);
  const std::size_t baseline = s.l1_used();
  for (bool store : {true, false}) {
    int k = 0;
    for (;; ++k) {
      ASSERT_LT(k, 500) << "the submit never got past its allocations";
      auto objs = make_objects(layout_, 3, 5, /*fill=*/store);
      auto ks = keys(store ? 20 : 0, 3);
      const int fired = wrapper_internal::injected_allocation_failures();
      std::optional<TaskId> id;
      wrapper_internal::fail_allocation_on_this_thread(k);
      try {
        id = store ? s.wrapper->submit_store_task(ks, objs) : s.wrapper->submit_load_task(ks, objs);
      } catch (const std::bad_alloc&) {
        // Allowed only while the task holds nothing: checked below.
      }
      wrapper_internal::fail_allocation_on_this_thread(-1);
      const bool injected = wrapper_internal::injected_allocation_failures() != fired;
      const std::string what =
          (store ? "store" : "load") + std::string(", allocation ") + std::to_string(k);
      if (id && store) {
        ASSERT_TRUE(wait_store(*s.wrapper, *id).has_value()) << what;
      } else if (id) {
        ASSERT_TRUE(wait_load(*s.wrapper, *id).has_value()) << what;
      }
      EXPECT_EQ(s.l1_used(), baseline) << what << ": a temp leaked";
      EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u) << what;
      expect_no_task_in_any_phase(*s.wrapper, what);
      if (!injected) break;
    }
    EXPECT_GT(k, 0) << (store ? "store" : "load");
  }
}

// A broken inner adapter reports keys loaded without writing the temps: the deserializer must
// then see zeros, never the bytes an earlier task (of another cache_salt) left in a recycled
// temp.
TEST_F(WrapperFailureConcurrency, RecycledTempsNeverCarryAnotherTenantsBytesToTheDeserializer) {
  Stack s;
  auto tenant_a = std::vector<ObjectKey>{key(1, "tenant-a"), key(2, "tenant-a")};
  auto a_src = make_objects(layout_, 2, 17);
  for (auto& obj : a_src) {
    for (auto& b : obj->bytes()) b = std::byte{0x3c};  // bf16 1.46875 -> fp8 nonzero
  }
  auto stored = wait_store(*s.wrapper, s.wrapper->submit_store_task(tenant_a, a_src));
  ASSERT_TRUE(stored && stored->is_successful());
  auto a_dst = make_objects(layout_, 2, 0, false);
  auto a_bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(tenant_a, a_dst));
  ASSERT_TRUE(a_bits && a_bits->all());

  s.inner->claim_loads = true;
  auto tenant_b = std::vector<ObjectKey>{key(1, "tenant-b"), key(2, "tenant-b")};
  auto b_dst = make_objects(layout_, 2, 0, false);
  auto b_bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(tenant_b, b_dst));
  ASSERT_TRUE(b_bits.has_value());
  for (std::size_t i = 0; i < b_dst.size(); ++i) {
    for (std::byte b : b_dst[i]->bytes()) {
      ASSERT_EQ(b, std::byte{0}) << "object " << i << " decoded bytes left by tenant-a's temps";
    }
  }
}

TEST_F(WrapperFailureConcurrency, LoadsThatFindNoKeyAreMissesNotFailures) {
  Stack s;
  auto dst = make_objects(layout_, 3, 0, false);
  auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(keys(900, 3), dst));
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(*bits, Bitmap(3));
  Json tasks = s.wrapper->metrics().summary()["tasks"];
  EXPECT_EQ(tasks["load_failure"].get<std::uint64_t>(), 0u) << tasks.dump();
  EXPECT_EQ(tasks["load_miss"].get<std::uint64_t>(), 1u) << tasks.dump();
  s.inner->throw_on_submit_load = true;
  expect_load_fails_once(s);
  EXPECT_EQ(s.wrapper->metrics().summary()["tasks"]["load_failure"].get<std::uint64_t>(), 1u)
      << "a real failure still counts";
}

TEST_F(WrapperFailureConcurrency, MissingKeysCompleteWithZerosWithoutDeserializing) {
  Stack s;
  expect_load_fails_once(s);
  EXPECT_EQ(s.deserializer->calls.load(), 0);
}

TEST_F(WrapperFailureConcurrency, PartialInnerLoadKeepsItsBitmapAndDeserializesOnlySetBits) {
  Stack s;
  auto src = make_objects(layout_, 3, 3);
  ASSERT_TRUE(
      wait_store(*s.wrapper, s.wrapper->submit_store_task(keys(0, 3), src))->is_successful());
  s.inner->drop_load_indices = {1};
  const std::size_t baseline = s.l1_used();
  auto dst = make_objects(layout_, 3, 0, false);
  auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(keys(0, 3), dst));
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->to_string(), "101");
  EXPECT_TRUE(same_bytes(*src[0], *dst[0]));
  EXPECT_TRUE(same_bytes(*src[2], *dst[2]));
  auto untouched = make_objects(layout_, 1, 0, false);
  EXPECT_TRUE(same_bytes(*untouched[0], *dst[1])) << "a dropped key's destination is untouched";
  EXPECT_EQ(s.deserializer->calls.load(), 2);
  EXPECT_EQ(s.l1_used(), baseline);
}

// ---------------------------------------------------------------------------------------------
// Submit-time validation.

// ---------------------------------------------------------------------------------------------
// Lent store buffers: the serializer writes the inner's own buffers, no L1 temp is used.

// The inner's lent bytes outstanding once nothing holds them any more: the processor's workers
// may drop their last references just after a failed store completed, and the buffers go back
// then (a bounded wait for that, not a timing assertion).
std::uint64_t lent_bytes_once_released(const L2AdapterInterface& inner) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (inner.lent_bytes_outstanding() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  return inner.lent_bytes_outstanding();
}

TEST(WrapperLentBuffersConcurrency, StoreSerializesIntoLentBuffersWithoutTemps) {
  Gate gate;
  Stack s;
  s.inner->lend = true;
  const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
  auto ks = keys(300, 3);
  auto src = make_objects(layout, 3, 9);
  s.serializer->gate = &gate;
  TaskId id = s.wrapper->submit_store_task(ks, src);
  ASSERT_TRUE(gate.wait_entered());
  EXPECT_EQ(s.l1_used(), 0u) << "no L1 temp while serializing into lent buffers";
  EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
  EXPECT_EQ(s.wrapper->metrics().lent_bytes(), 3u * 384u) << "three buffers of 1.5 x 256 bytes";
  EXPECT_GT(s.inner->lent_bytes_outstanding(), 0u);
  gate.open();
  auto r = wait_store(*s.wrapper, id);
  ASSERT_TRUE(r && r->is_successful());
  EXPECT_EQ(r->bytes_transferred(), 3u * 256u) << "the narrowed size, one byte per element";
  EXPECT_EQ(s.wrapper->metrics().lent_bytes(), 0u);
  EXPECT_EQ(s.inner->lent_bytes_outstanding(), 0u) << "every lent buffer was adopted";
  auto dst = make_objects(layout, 3, 0, false);
  auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(ks, dst));
  ASSERT_TRUE(bits && bits->all());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(*src[i], *dst[i])) << i;
  EXPECT_EQ(s.l1_used(), 0u);
}

TEST(WrapperLentBuffersConcurrency, FailedSerializeGivesEveryLentBufferBackAndStoresNothing) {
  Stack s;
  s.inner->lend = true;
  s.serializer->throw_on_call = 1;
  const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
  auto ks = keys(400, 3);
  auto r = wait_store(*s.wrapper, s.wrapper->submit_store_task(ks, make_objects(layout, 3, 2)));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->is_successful());
  EXPECT_EQ(s.wrapper->metrics().lent_bytes(), 0u);
  EXPECT_EQ(lent_bytes_once_released(*s.inner), 0u) << "the buffers went back to the inner";
  EXPECT_EQ(s.wrapper->get_usage().total_bytes_used, 0u) << "nothing became visible";
  expect_no_task_in_any_phase(*s.wrapper, "after the failed store");
}

TEST(WrapperLentBuffersConcurrency, ClosingWithAStoreInSerializeGivesTheLentBuffersBack) {
  Gate gate;
  Stack s;
  s.inner->lend = true;
  s.serializer->gate = &gate;
  const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
  TaskId id = s.wrapper->submit_store_task(keys(500, 2), make_objects(layout, 2, 4));
  ASSERT_TRUE(gate.wait_entered());
  std::thread opener = open_once_the_loop_stopped(gate);
  s.wrapper->close();
  opener.join();
  auto done = s.wrapper->pop_completed_store_tasks();
  ASSERT_EQ(done.count(id), 1u);
  EXPECT_FALSE(done.at(id).is_successful());
  EXPECT_EQ(s.wrapper->metrics().lent_bytes(), 0u);
  expect_no_task_in_any_phase(*s.wrapper, "after close()");
}

// ---------------------------------------------------------------------------------------------
// Inline serde steps: the AsyncSerdeProcessor runs them on the submitting / loop thread.

struct InlineStack {
  explicit InlineStack(SerdeWrapperOptions options) {
    auto ser = std::make_shared<ControlledSerializer>();
    serializer = ser.get();
    auto inner_adapter = std::make_unique<FlakyAdapter>(
        std::make_unique<MockL2Adapter>(MockL2AdapterOptions::from_gb(1.0, 100.0)));
    inner = inner_adapter.get();
    l1 = std::make_shared<L1Manager>(kL1Capacity);
    wrapper = std::make_unique<SerdeL2AdapterWrapper>(
        std::move(inner_adapter),
        std::make_unique<AsyncSerdeProcessor>(ser, std::make_shared<Fp8Deserializer>(), 2), l1,
        std::move(options));
  }
  std::shared_ptr<L1Manager> l1;
  ControlledSerializer* serializer;
  FlakyAdapter* inner;
  std::unique_ptr<SerdeL2AdapterWrapper> wrapper;
};

TEST(WrapperInlineConcurrency, SmallTasksRunTheirSerdeStepsInlineAndRoundTripExactly) {
  for (bool lend : {false, true}) {
    SerdeWrapperOptions options;
    options.inline_serialize_max_bytes = 1 << 20;
    options.inline_deserialize_max_bytes = 1 << 20;
    InlineStack s(options);
    s.inner->lend = lend;
    const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
    auto ks = keys(600, 3);
    auto src = make_objects(layout, 3, 21);
    auto r = wait_store(*s.wrapper, s.wrapper->submit_store_task(ks, src));
    ASSERT_TRUE(r && r->is_successful()) << "lend " << lend;
    EXPECT_EQ(r->bytes_transferred(), 3u * 256u);
    auto dst = make_objects(layout, 3, 0, false);
    auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(ks, dst));
    ASSERT_TRUE(bits && bits->all());
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bytes(*src[i], *dst[i])) << i;
    EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kSerialize), 1u);
    EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kDeserialize), 1u);
    EXPECT_EQ(s.l1->get_memory_usage().used_bytes, 0u) << "temps released";
    EXPECT_EQ(s.wrapper->metrics().lent_bytes(), 0u);
    expect_no_task_in_any_phase(*s.wrapper, "after the round trip");
  }
}

TEST(WrapperInlineConcurrency, AFailedInlineSerializeFailsTheStoreOnceAndReleasesItsBuffers) {
  for (bool lend : {false, true}) {
    SerdeWrapperOptions options;
    options.inline_serialize_max_bytes = 1 << 20;
    InlineStack s(options);
    s.inner->lend = lend;
    s.serializer->throw_on_call = 1;
    const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
    TaskId id = s.wrapper->submit_store_task(keys(700, 3), make_objects(layout, 3, 1));
    auto now = s.wrapper->pop_completed_store_tasks();
    ASSERT_EQ(now.count(id), 1u) << "an inline failure completes inside submit";
    EXPECT_FALSE(now.at(id).is_successful());
    EXPECT_EQ(s.l1->get_memory_usage().used_bytes, 0u);
    EXPECT_EQ(lent_bytes_once_released(*s.inner), 0u);
    EXPECT_EQ(s.wrapper->get_usage().total_bytes_used, 0u) << "nothing stored";
    expect_no_task_in_any_phase(*s.wrapper, "after the failed store");
  }
}

// One store and one load of `n` objects of `layout` through `w`; true when both round-tripped
// exactly.
bool round_trips(SerdeL2AdapterWrapper& w, const MemoryLayoutDesc& layout, std::uint32_t first_key,
                 std::size_t n) {
  auto ks = keys(first_key, n);
  auto src = make_objects(layout, n, first_key);
  auto r = wait_store(w, w.submit_store_task(ks, src));
  if (!r || !r->is_successful()) return false;
  auto dst = make_objects(layout, n, 0, false);
  auto bits = wait_load(w, w.submit_load_task(ks, dst));
  if (!bits || !bits->all()) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (!same_bytes(*src[i], *dst[i])) return false;
  }
  return true;
}

// A hand-off cost of 0 puts both adaptive thresholds at their floor (kMinAdaptiveBytes): a task
// above it goes to the workers, one below runs inline.
TEST(WrapperInlineConcurrency, AdaptiveThresholdsSendLargeTasksToTheWorkers) {
  SerdeWrapperOptions options;
  options.handoff_cost = std::chrono::nanoseconds(0);
  InlineStack s(options);
  ASSERT_EQ(s.wrapper->inline_policy().max_bytes(InlinePolicy::Step::kSerialize),
            InlinePolicy::kMinAdaptiveBytes);
  ASSERT_TRUE(
      round_trips(*s.wrapper, MemoryLayoutDesc::single({1024, 1025}, DType::kBFloat16), 800, 1));
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kSerialize), 0u);
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kDeserialize), 0u);
  ASSERT_TRUE(round_trips(*s.wrapper, MemoryLayoutDesc::single({4, 64}, DType::kBFloat16), 810, 2));
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kSerialize), 1u);
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kDeserialize), 1u);
}

TEST(WrapperInlineConcurrency, ThresholdsOfZeroHandEveryStepToTheWorkers) {
  SerdeWrapperOptions options;
  options.inline_serialize_max_bytes = 0;
  options.inline_deserialize_max_bytes = 0;
  options.finish_on_submit = false;
  InlineStack s(options);
  ASSERT_TRUE(round_trips(*s.wrapper, MemoryLayoutDesc::single({4, 64}, DType::kBFloat16), 820, 3));
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kSerialize), 0u);
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kDeserialize), 0u);
  EXPECT_FALSE(s.wrapper->inline_policy().adaptive(InlinePolicy::Step::kSerialize));
}

// The default options: both thresholds adaptive, weighed against the machine's measured
// hand-off cost; a task below the floor runs its steps inline, and each inline step of at least
// kMinObservedBytes teaches its direction the serde's rate. report_status() shows the policy.
TEST(WrapperInlineConcurrency, TheDefaultsWeighTheMachinesHandoffCostAndLearnTheSerdesRate) {
  InlineStack s(SerdeWrapperOptions{});
  const InlinePolicy& policy = s.wrapper->inline_policy();
  ASSERT_TRUE(policy.adaptive(InlinePolicy::Step::kSerialize));
  ASSERT_TRUE(policy.adaptive(InlinePolicy::Step::kDeserialize));
  EXPECT_EQ(policy.handoff_cost(), machine_handoff_cost());
  // 32 KiB of bfloat16 (16 KiB stored): above kMinObservedBytes both ways, below every
  // adaptive threshold.
  const auto layout = MemoryLayoutDesc::single({32, 512}, DType::kBFloat16);
  static_assert(32 * 512 * 2 <= InlinePolicy::kMinAdaptiveBytes);
  static_assert(32 * 512 >= InlinePolicy::kMinObservedBytes);
  ASSERT_TRUE(round_trips(*s.wrapper, layout, 830, 1));
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kSerialize), 1u);
  EXPECT_EQ(s.wrapper->metrics().inline_steps(WrapperStep::kDeserialize), 1u);
  EXPECT_NE(policy.bytes_per_second(InlinePolicy::Step::kSerialize),
            InlinePolicy::kPriorBytesPerSecond);
  EXPECT_NE(policy.bytes_per_second(InlinePolicy::Step::kDeserialize),
            InlinePolicy::kPriorBytesPerSecond);
  const Json inline_status = s.wrapper->report_status().at("serde_wrapper").at("inline");
  EXPECT_EQ(inline_status.at("serialize").at("max_bytes").get<std::size_t>(),
            policy.max_bytes(InlinePolicy::Step::kSerialize));
  EXPECT_TRUE(inline_status.at("deserialize").at("adaptive").get<bool>());
  EXPECT_TRUE(s.wrapper->report_status().at("serde_wrapper").at("finish_on_submit").get<bool>());
}

// finish_on_submit over an inner that runs idle tasks on the submitter (the mock's
// run_when_idle): the submit that reached the inner drains its result itself, so a task with
// inline serde steps completes before its submit returns, through stored copies and through
// load views alike. Between tasks the test waits until every other thread sleeps, so the loop
// has finished the scan the inner's signal woke it for (a submit finding the loop draining
// leaves the result to it) -- waited for, not guessed with a pause -- and nearly every task must
// complete inside its submit; without the drain on submit none would.
TEST(WrapperInlineConcurrency, FinishOnSubmitCompletesTasksBeforeTheirSubmitReturns) {
  for (bool views : {false, true}) {
    MockL2AdapterOptions mock = MockL2AdapterOptions::from_gb(1.0, 1e6);
    mock.run_when_idle = true;
    mock.lend_load_views = views;
    SerdeWrapperOptions options;
    options.inline_serialize_max_bytes = 1 << 20;
    options.inline_deserialize_max_bytes = 1 << 20;
    options.finish_on_submit = true;
    auto l1 = std::make_shared<L1Manager>(kL1Capacity);
    SerdeL2AdapterWrapper w(
        std::make_unique<MockL2Adapter>(mock),
        std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                              std::make_shared<Fp8Deserializer>()),
        l1, options);
    const auto layout = MemoryLayoutDesc::single({4, 64}, DType::kBFloat16);
    constexpr int kRounds = 20;
    int stores_at_once = 0, loads_at_once = 0;
    for (int round = 0; round < kRounds; ++round) {
      auto ks = keys(900 + 10 * static_cast<std::uint32_t>(round), 2);
      auto src = make_objects(layout, 2, static_cast<std::uint32_t>(round) + 1);
      const TaskId s = w.submit_store_task(ks, src);
      auto done = w.pop_completed_store_tasks();
      std::optional<L2StoreResult> r;
      if (done.count(s)) {
        ++stores_at_once;
        r = done.at(s);
      } else {
        r = wait_store(w, s);
      }
      ASSERT_TRUE(r && r->is_successful()) << "views " << views << " round " << round;
      core_internal::wait_until_other_threads_asleep();  // the loop's scan is over
      auto dst = make_objects(layout, 2, 0, false);
      const TaskId l = w.submit_load_task(ks, dst);
      std::optional<Bitmap> bits = w.query_load_result(l);
      if (bits) {
        ++loads_at_once;
      } else {
        bits = wait_load(w, l);
      }
      ASSERT_TRUE(bits && bits->all()) << "views " << views << " round " << round;
      for (int i = 0; i < 2; ++i) EXPECT_TRUE(same_bytes(*src[i], *dst[i])) << round << "/" << i;
      core_internal::wait_until_other_threads_asleep();
    }
    EXPECT_GE(stores_at_once, kRounds * 3 / 4) << "views " << views;
    EXPECT_GE(loads_at_once, kRounds * 3 / 4) << "views " << views;
    EXPECT_TRUE(w.pop_completed_store_tasks().empty()) << "nothing completes twice";
    w.close();
    EXPECT_EQ(l1->get_memory_usage().used_bytes, 0u) << "temps released";
    expect_no_task_in_any_phase(w, "after the rounds");
  }
}

TEST(WrapperValidation, HomogeneityAndLengthsThrowNamingTheIndex) {
  Stack s;
  auto a = MemoryObj::allocate(MemoryLayoutDesc::single({8}, DType::kFloat16));
  auto b = MemoryObj::allocate(MemoryLayoutDesc::single({8}, DType::kFloat16));
  auto c = MemoryObj::allocate(MemoryLayoutDesc::single({9}, DType::kFloat16));
  try {
    s.wrapper->submit_store_task(keys(0, 3), {a, b, c});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("object 2"));
  }
  EXPECT_THROW(s.wrapper->submit_load_task(keys(0, 3), {a, c, b}), std::invalid_argument);
  EXPECT_THROW(s.wrapper->submit_store_task(keys(0, 2), {a}), std::invalid_argument);
  EXPECT_THROW(s.wrapper->submit_load_task(keys(0, 2), {a, nullptr}), std::invalid_argument);
  EXPECT_TRUE(s.wrapper->pop_completed_store_tasks().empty())
      << "a rejected submit completes nothing";
  EXPECT_EQ(s.l1_used(), 0u);
}

TEST(WrapperValidation, EmptyBatchCompletesAtOnce) {
  Stack s;
  TaskId st = s.wrapper->submit_store_task({}, {});
  auto popped = s.wrapper->pop_completed_store_tasks();
  ASSERT_EQ(popped.count(st), 1u);
  EXPECT_TRUE(popped.at(st).is_successful());
  EXPECT_EQ(popped.at(st).bytes_transferred(), 0u);
  TaskId ld = s.wrapper->submit_load_task({}, {});
  EXPECT_NE(ld, st) << "one id counter for stores and loads";
  auto bits = s.wrapper->query_load_result(ld);
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->size(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Pass-through, status and metrics.

TEST(WrapperPassThrough, LookupUnlockDeleteAndUsageReachTheInner) {
  Stack s;
  EXPECT_EQ(s.wrapper->get_lookup_and_lock_event_fd(), s.inner->get_lookup_and_lock_event_fd());
  std::set<int> fds = {s.wrapper->get_store_event_fd(), s.wrapper->get_load_event_fd(),
                       s.wrapper->get_lookup_and_lock_event_fd(), s.inner->get_store_event_fd(),
                       s.inner->get_load_event_fd()};
  EXPECT_EQ(fds.size(), 5u) << "wrapper fds are its own";
  auto layout = MemoryLayoutDesc::single({100}, DType::kFloat32);
  ASSERT_TRUE(
      wait_store(*s.wrapper, s.wrapper->submit_store_task(keys(0, 2), make_objects(layout, 2, 1)))
          ->is_successful());
  TaskId lk = s.wrapper->submit_lookup_and_lock_task({key(0), key(1), key(7)});
  std::optional<Bitmap> hit;
  for (int i = 0; i < 200 && !hit; ++i) {
    wait_readable(s.wrapper->get_lookup_and_lock_event_fd(), 50ms);
    hit = s.wrapper->query_lookup_and_lock_result(lk);
  }
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->to_string(), "110");
  s.wrapper->submit_unlock({key(0), key(1)});
  EXPECT_EQ(s.wrapper->get_usage().total_bytes_used, 200u) << "the inner's serialized bytes";
  EXPECT_EQ(s.wrapper->supports_global_eviction(), s.inner->supports_global_eviction());
  s.wrapper->delete_keys({key(0)});
  EXPECT_EQ(s.wrapper->get_usage().total_bytes_used, 100u);
}

TEST(WrapperMetricsTest, StatusAndPrometheusSeriesDescribeTheSteps) {
  Stack s;
  auto layout = MemoryLayoutDesc::single({256}, DType::kBFloat16);
  auto src = make_objects(layout, 2, 1);
  ASSERT_TRUE(
      wait_store(*s.wrapper, s.wrapper->submit_store_task(keys(0, 2), src))->is_successful());
  ASSERT_TRUE(wait_load(*s.wrapper,
                        s.wrapper->submit_load_task(keys(0, 2), make_objects(layout, 2, 0, false)))
                  ->all());
  Json status = s.wrapper->report_status();
  EXPECT_TRUE(status.at("serde_wrapped").get<bool>());
  EXPECT_TRUE(status.at("is_healthy").get<bool>());
  const Json& w = status.at("serde_wrapper");
  for (const char* step : {"serialize", "inner_store", "inner_load", "deserialize"}) {
    EXPECT_EQ(w.at("step_latency_seconds").at(step).at("count").get<int>(), 1) << step;
    EXPECT_EQ(w.at("tasks_in_flight").at(step).get<int>(), 0) << step;
  }
  EXPECT_EQ(w.at("temp_bytes_held").get<int>(), 0);
  EXPECT_EQ(w.at("tasks").at("store_success").get<int>(), 1);
  EXPECT_EQ(w.at("tasks").at("load_success").get<int>(), 1);

  std::string text =
      prometheus::TextSerializer().Serialize(s.wrapper->metrics().registry()->Collect());
  EXPECT_THAT(text,
              HasSubstr("lmcache_serde_wrapper_step_duration_seconds_count{step=\"serialize\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("lmcache_serde_wrapper_tasks_total{op=\"store\",outcome=\"success\"} 1"));
  EXPECT_THAT(text, HasSubstr("lmcache_serde_wrapper_temp_bytes 0"));
}

TEST(WrapperFactory, BadConfigsAreRejectedByName) {
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(1u << 20);
  Json base = {{"type", "mock"}, {"max_size_gb", 0.01}, {"mock_bandwidth_gb", 1}};
  auto error_of = [&](Json serde, const AdapterContext& c) -> std::string {
    Json cfg = base;
    cfg["serde"] = std::move(serde);
    try {
      create_l2_adapter(cfg, c);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "<no exception>";
  };
  EXPECT_THAT(error_of("fp8", ctx), HasSubstr("'serde'"));
  EXPECT_THAT(error_of(Json::object(), ctx), HasSubstr("type"));
  EXPECT_THAT(error_of({{"type", "nope"}}, ctx), HasSubstr("fp8"));
  EXPECT_THAT(error_of({{"type", "fp8"}, {"fp8_dtyp", "x"}}, ctx), HasSubstr("fp8_dtyp"));
  EXPECT_THAT(error_of({{"type", "fp8"}}, AdapterContext{}), HasSubstr("L1Manager"));
  // Without "serde" the plain adapter comes back.
  auto plain = create_l2_adapter(base, ctx);
  EXPECT_FALSE(plain->report_status().contains("serde_wrapped"));
  plain->close();
  // "serde_wrapper" configures the wrapper, and needs a "serde".
  Json orphan = base;
  orphan["serde_wrapper"] = Json::object();
  try {
    create_l2_adapter(orphan, ctx);
    ADD_FAILURE() << "a serde_wrapper without a serde was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("'serde_wrapper'"));
  }
  Json wrapped = base;
  wrapped["serde"] = {{"type", "fp8"}};
  wrapped["serde_wrapper"] = {{"inline_serialize_max_bytes", "big"}};
  try {
    create_l2_adapter(wrapped, ctx);
    ADD_FAILURE() << "a bad serde_wrapper was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("inline_serialize_max_bytes"));
  }
  wrapped["serde_wrapper"] = {{"inline_serialize_max_bytes", 0},
                              {"inline_deserialize_max_bytes", 4096},
                              {"finish_on_submit", false}};
  auto configured = create_l2_adapter(wrapped, ctx);
  const Json status = configured->report_status().at("serde_wrapper");
  EXPECT_EQ(status.at("inline").at("serialize").at("max_bytes").get<std::size_t>(), 0u);
  EXPECT_EQ(status.at("inline").at("deserialize").at("max_bytes").get<std::size_t>(), 4096u);
  EXPECT_FALSE(status.at("finish_on_submit").get<bool>());
  configured->close();
}

// ---------------------------------------------------------------------------------------------
// close().

TEST(WrapperCloseConcurrency, TasksInEveryPhaseFailOnceAndNothingLeaks) {
  // Slow inner stores keep a task in the inner-store phase; gates hold the serde phases.
  Stack s("float8_e4m3fn", kL1Capacity, MockL2AdapterOptions{1u << 30, 1024}, /*workers=*/2);
  auto layout = MemoryLayoutDesc::single({1024}, DType::kBFloat16);
  const std::size_t baseline = s.l1_used();

  // inner-store phase: serialize runs, then the 1 KiB/s inner store keeps it pending.
  TaskId in_store = s.wrapper->submit_store_task({key(1)}, make_objects(layout, 1, 1));
  while (s.wrapper->metrics().in_flight(WrapperStep::kInnerStore) == 0) {
    std::this_thread::yield();  // as long as serializing takes here: no time assumed
  }
  EXPECT_EQ(s.wrapper->metrics().in_flight(WrapperStep::kInnerStore), 1);
  // serialize phase: held by a gate.
  Gate ser_gate;
  s.serializer->gate = &ser_gate;
  TaskId in_serialize = s.wrapper->submit_store_task({key(2)}, make_objects(layout, 1, 2));
  ASSERT_TRUE(ser_gate.wait_entered());
  // inner-load phase: held back by the inner.
  s.inner->hold_loads = true;
  TaskId in_load = s.wrapper->submit_load_task({key(900)}, make_objects(layout, 1, 0, false));
  EXPECT_GT(s.l1_used(), baseline);

  // close() waits for queued serde work: let it finish once the loop is stopped.
  std::thread opener = open_once_the_loop_stopped(ser_gate);
  s.wrapper->close();
  opener.join();

  EXPECT_EQ(s.l1_used(), baseline) << "every temp released";
  EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
  auto stores = s.wrapper->pop_completed_store_tasks();
  ASSERT_EQ(stores.size(), 2u);
  EXPECT_FALSE(stores.at(in_store).is_successful());
  EXPECT_FALSE(stores.at(in_serialize).is_successful());
  auto load = s.wrapper->query_load_result(in_load);
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(*load, Bitmap(1));
  EXPECT_TRUE(s.wrapper->pop_completed_store_tasks().empty()) << "exactly once";
  EXPECT_FALSE(s.wrapper->query_load_result(in_load).has_value());

  s.wrapper->close();  // idempotent
  EXPECT_THROW(s.wrapper->submit_store_task({key(3)}, make_objects(layout, 1, 3)),
               std::logic_error);
  EXPECT_THROW(s.wrapper->submit_load_task({key(3)}, make_objects(layout, 1, 3)), std::logic_error);
  EXPECT_THROW(s.wrapper->get_store_event_fd(), std::logic_error);
  EXPECT_THROW(s.wrapper->report_status(), std::logic_error);
  EXPECT_THROW(s.wrapper->submit_lookup_and_lock_task({key(3)}), std::logic_error);
}

TEST(WrapperCloseConcurrency, DeserializePhaseTaskFailsOnClose) {
  Stack s;
  auto layout = MemoryLayoutDesc::single({64}, DType::kFloat32);
  ASSERT_TRUE(
      wait_store(*s.wrapper, s.wrapper->submit_store_task({key(5)}, make_objects(layout, 1, 5)))
          ->is_successful());
  Gate gate;
  s.deserializer->gate = &gate;
  TaskId id = s.wrapper->submit_load_task({key(5)}, make_objects(layout, 1, 0, false));
  ASSERT_TRUE(gate.wait_entered());
  std::thread opener = open_once_the_loop_stopped(gate);
  s.wrapper->close();
  opener.join();
  auto bits = s.wrapper->query_load_result(id);
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(*bits, Bitmap(1)) << "in flight at close: failed";
  EXPECT_EQ(s.l1_used(), 0u);
}

TEST(WrapperCloseConcurrency, IdleCloseIsPromptAndDestructorCloses) {
  auto s = std::make_unique<Stack>();
  int fd = s->wrapper->get_store_event_fd();
  s->wrapper->close();
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the wrapper's fd is closed";
  s.reset();  // destructor after close: no double close problems
  Stack t;    // destructor without close must not hang or leak
  SUCCEED();
}

// ---------------------------------------------------------------------------------------------
// Stress: many threads, out-of-order inner completions.

TEST(WrapperStressConcurrency, ConcurrentStoresAndLoadsCompleteExactlyOnce) {
  // Bandwidth makes completion time proportional to size: mixed sizes finish out of order.
  Stack s("float8_e5m2", kL1Capacity, MockL2AdapterOptions{1u << 30, 64u << 20}, 2);
  constexpr int kThreads = 4, kOpsPerThread = 30;
  std::vector<MemoryLayoutDesc> layouts = {MemoryLayoutDesc::single({16}, DType::kBFloat16),
                                           MemoryLayoutDesc::single({4096}, DType::kBFloat16),
                                           MemoryLayoutDesc::single({64, 256}, DType::kBFloat16)};
  std::atomic<int> failures{0};
  wrapper_internal::StoreResults results(*s.wrapper);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int op = 0; op < kOpsPerThread; ++op) {
        const auto& layout = layouts[rng() % layouts.size()];
        std::uint32_t base = static_cast<std::uint32_t>(10000 * (t + 1) + 10 * op);
        std::size_t n = 1 + rng() % 3;
        auto src = make_objects(layout, n, base);
        auto ks = keys(base, n);
        TaskId sid = s.wrapper->submit_store_task(ks, src);
        auto r = results.wait(sid);
        if (!r || !r->is_successful()) {
          failures++;
          continue;
        }
        auto dst = make_objects(layout, n, 0, false);
        auto bits = wait_load(*s.wrapper, s.wrapper->submit_load_task(ks, dst));
        if (!bits || !bits->all()) {
          failures++;
          continue;
        }
        for (std::size_t i = 0; i < n; ++i) {
          if (!same_bytes(*src[i], *dst[i])) failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(s.l1_used(), 0u);
  EXPECT_EQ(s.wrapper->metrics().temp_bytes(), 0u);
  s.wrapper->close();
}

}  // namespace
}  // namespace lmcache
