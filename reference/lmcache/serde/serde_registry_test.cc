#include "lmcache/serde/serde_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_config.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;

using core_internal::expect_invalid;

// A factory registered under a unique name, removed again at the end of the test so that
// --gtest_repeat works.
class ScopedFactory {
 public:
  ScopedFactory(std::string name, SerdeFactory f) : name_(std::move(name)) {
    register_serde_factory(name_, std::move(f));
  }
  ~ScopedFactory() { unregister_serde_factory(name_); }

 private:
  std::string name_;
};

// A processor that only records that it was built.
SerdeProcessorPtr trivial_processor() {
  struct Null : Serializer, Deserializer {
    std::size_t serialize(const MemoryObj&, MemoryObj&, const ObjectKey&) override { return 0; }
    std::size_t estimate_serialized_size(const MemoryLayoutDesc&) const override { return 0; }
    void deserialize(const MemoryObj&, MemoryObj&, const ObjectKey&) override {}
  };
  auto n = std::make_shared<Null>();
  return std::make_unique<AsyncSerdeProcessor>(n, n);
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, Fp8IsRegisteredByDefault) {
  EXPECT_THAT(registered_serde_types(), Contains("fp8"));
}

TEST(SerdeRegistry, IntegritySerdesAreBuiltIns) {
  const auto names = registered_serde_types();
  for (const char* name : {"checksum", "aesgcm", "chain"}) EXPECT_THAT(names, Contains(name));
  // Their config errors name the problem.
  expect_invalid([] { create_serde_processor(Json::parse(R"({"type": "aesgcm"})")); },
                 {"master_key_path"});
  expect_invalid([] { create_serde_processor(Json::parse(R"({"type": "chain"})")); }, {"stages"});
}

TEST(SerdeRegistry, NamesAreSorted) {
  ScopedFactory a("zz_test_last", [](const Json&) { return trivial_processor(); });
  ScopedFactory b("aa_test_first", [](const Json&) { return trivial_processor(); });
  auto names = registered_serde_types();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(names, Contains("aa_test_first"));
  EXPECT_THAT(names, Contains("zz_test_last"));
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, CreateFp8ReturnsAsyncProcessorWithDistinctFds) {
  SerdeProcessorPtr p = create_serde_processor(Json{{"type", "fp8"}});
  auto* async = dynamic_cast<AsyncSerdeProcessor*>(p.get());
  ASSERT_NE(async, nullptr);
  EXPECT_EQ(async->max_workers(), 1u);
  EXPECT_NE(p->get_serialize_event_fd(), p->get_deserialize_event_fd());
  EXPECT_EQ(p->estimate_serialized_size(MemoryLayoutDesc::single({10}, DType::kBFloat16)), 15u);
}

TEST(SerdeRegistry, EachCreateBuildsAnIndependentProcessor) {
  SerdeProcessorPtr a = create_serde_processor(Json{{"type", "fp8"}});
  SerdeProcessorPtr b = create_serde_processor(Json{{"type", "fp8"}});
  EXPECT_NE(a.get(), b.get());
  EXPECT_NE(a->get_serialize_event_fd(), b->get_serialize_event_fd());
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, MissingTypeRaises) {
  expect_invalid(
      [] {
        create_serde_processor(Json{{"fp8_dtype", "float8_e5m2"}});
      },
      {"missing 'type'"});
  expect_invalid([] { create_serde_processor(Json{{"type", 3}}); }, {"'type'", "3"});
  expect_invalid([] { create_serde_processor(Json::array()); }, {"JSON object", "array"});
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, UnknownTypeRaisesAndListsRegisteredNames) {
  expect_invalid(
      [] {
        create_serde_processor(Json{{"type", "nope"}});
      },
      {"Unknown serde type 'nope'", "Registered: ", "fp8"});
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, Fp8AcceptsIntegralFloatMaxWorkers) {
  SerdeProcessorPtr p = create_serde_processor(Json{{"type", "fp8"}, {"max_workers", 2.0}});
  EXPECT_EQ(dynamic_cast<AsyncSerdeProcessor&>(*p).max_workers(), 2u);
}

// Ported from LMCache's Python tests (SerdeConfig variant: the factory sees the kwargs only).
TEST(SerdeRegistry, CustomFactoryIsCalledWithKwargsWithoutType) {
  std::atomic<int> calls{0};
  Json seen;
  ScopedFactory scoped("custom_test_serde", [&](const Json& kwargs) {
    ++calls;
    seen = kwargs;
    return trivial_processor();
  });
  SerdeProcessorPtr p = create_serde_processor(Json{{"type", "custom_test_serde"}, {"foo", "bar"}});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(seen, (Json{{"foo", "bar"}}));

  create_serde_processor(SerdeConfig{"custom_test_serde", Json::object()});
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(seen, Json::object());
}

// Ported from LMCache's Python tests.
TEST(SerdeRegistry, DuplicateRegistrationRaises) {
  expect_invalid(
      [] { register_serde_factory("fp8", [](const Json&) { return trivial_processor(); }); },
      {"Serde type already registered: 'fp8'"});
  ScopedFactory scoped("dup_test_serde", [](const Json&) { return trivial_processor(); });
  expect_invalid(
      [] {
        register_serde_factory("dup_test_serde", [](const Json&) { return trivial_processor(); });
      },
      {"already registered", "dup_test_serde"});
}

TEST(SerdeRegistry, RejectsEmptyNameAndEmptyFactory) {
  expect_invalid(
      [] { register_serde_factory("", [](const Json&) { return trivial_processor(); }); },
      {"empty"});
  expect_invalid([] { register_serde_factory("empty_factory_test", SerdeFactory()); },
                 {"empty_factory_test"});
  EXPECT_THAT(registered_serde_types(), ::testing::Not(Contains("empty_factory_test")));
}

TEST(SerdeRegistry, UnregisterRemovesOnlyKnownNames) {
  register_serde_factory("unregister_test", [](const Json&) { return trivial_processor(); });
  EXPECT_TRUE(unregister_serde_factory("unregister_test"));
  EXPECT_FALSE(unregister_serde_factory("unregister_test"));
  expect_invalid(
      [] {
        create_serde_processor(Json{{"type", "unregister_test"}});
      },
      {"Unknown serde type"});
}

TEST(SerdeRegistry, FactoryErrorsPropagateAndNullResultIsRejected) {
  ScopedFactory bad("throwing_test_serde", [](const Json&) -> SerdeProcessorPtr {
    throw std::invalid_argument("bad kwarg 'x'");
  });
  expect_invalid(
      [] {
        create_serde_processor(Json{{"type", "throwing_test_serde"}});
      },
      {"bad kwarg 'x'"});
  ScopedFactory null("null_test_serde", [](const Json&) { return SerdeProcessorPtr(); });
  EXPECT_THROW(create_serde_processor(Json{{"type", "null_test_serde"}}), std::logic_error);
}

TEST(SerdeRegistry, AFactoryMayUseTheRegistry) {
  ScopedFactory outer("outer_test_serde", [](const Json& kwargs) {
    EXPECT_THAT(registered_serde_types(), Contains("outer_test_serde"));
    return create_serde_processor(Json{{"type", "fp8"}, {"fp8_dtype", kwargs.at("inner")}});
  });
  EXPECT_NE(create_serde_processor(Json{{"type", "outer_test_serde"}, {"inner", "float8_e5m2"}}),
            nullptr);
}

TEST(SerdeRegistryConcurrency, ConcurrentRegisterAndCreate) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::atomic<int> created{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string name = "concurrent_test_" + std::to_string(t);
      register_serde_factory(name, [](const Json&) { return trivial_processor(); });
      for (int i = 0; i < 5; ++i) {
        if (create_serde_processor(Json{{"type", name}})) created.fetch_add(1);
        if (create_serde_processor(Json{{"type", "fp8"}})) created.fetch_add(1);
        registered_serde_types();
      }
      EXPECT_TRUE(unregister_serde_factory(name));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(created.load(), kThreads * 10);
}

// The issue's Done-when scenario: by name, an e5m2 processor with two workers serializes a
// bfloat16 object, signals once, answers true once, and the temp holds one byte per element.
TEST(SerdeRegistryConcurrency, ConcurrentDoneWhenScenarioFp8E5m2ByName) {
  SerdeProcessorPtr p = create_serde_processor(
      Json{{"type", "fp8"}, {"fp8_dtype", "float8_e5m2"}, {"max_workers", 2}});
  const auto layout = MemoryLayoutDesc::single({4, 33}, DType::kBFloat16);
  auto src = MemoryObj::allocate(layout);
  auto* bits = reinterpret_cast<std::uint16_t*>(src->data());
  for (std::size_t i = 0; i < layout.total_elements(); ++i) bits[i] = 0x3F80;  // 1.0
  const std::size_t numel = layout.total_elements();
  auto temp = MemoryObj::allocate(MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(p->estimate_serialized_size(layout))}, DType::kUInt8));
  ASSERT_EQ(temp->size(), numel + numel / 2);

  TaskId id = p->submit_serialize({src}, {temp}, test_keys(1));
  const int fd = p->get_serialize_event_fd();
  ASSERT_TRUE(wait_readable(fd, 5000ms));
  EXPECT_EQ(consume_fd(fd), 1u) << "one notify for the task";
  EXPECT_EQ(p->query_serialize_result(id), std::optional<bool>(true));
  EXPECT_EQ(p->query_serialize_result(id), std::nullopt);
  EXPECT_EQ(temp->size(), numel) << "narrowed to one byte per element";
  for (std::byte b : temp->bytes()) ASSERT_EQ(b, std::byte{0x3C}) << "e5m2 code of 1.0";
  p->close();
  EXPECT_FALSE(wait_readable(fd, 0ms));
  EXPECT_EQ(p->query_serialize_result(id), std::nullopt) << "nothing after";
}

// SerdeConfig: the "serde" sub-object of an adapter config (LMCache's Python cases, at this level).
TEST(SerdeConfig, SplitsTypeFromKwargs) {
  SerdeConfig c = SerdeConfig::from_json(
      Json{{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}, {"max_workers", 1}});
  EXPECT_EQ(c.type, "fp8");
  EXPECT_EQ(c.kwargs, (Json{{"fp8_dtype", "float8_e4m3fn"}, {"max_workers", 1}}));
  EXPECT_EQ(SerdeConfig::from_json(c.to_json()), c);
  EXPECT_EQ(SerdeConfig::from_json(Json{{"type", "fp8"}}).kwargs, Json::object());
}

TEST(SerdeConfig, RejectsNonObject) {
  expect_invalid([] { SerdeConfig::from_json(Json::array({1})); },
                 {"'serde' must be a JSON object, got array"});
  expect_invalid([] { SerdeConfig::from_json(Json("fp8")); },
                 {"'serde' must be a JSON object, got string"});
  expect_invalid([] { SerdeConfig::from_json(Json()); }, {"got null"});
}

TEST(SerdeConfig, RejectsMissingOrNonStringType) {
  expect_invalid([] { SerdeConfig::from_json(Json::object()); },
                 {"'serde' config must include a string 'type' field"});
  expect_invalid(
      [] {
        SerdeConfig::from_json(Json{{"type", 1}});
      },
      {"'serde' config must include a string 'type' field"});
}

// The fp8 kwargs.
TEST(Fp8SerdeConfig, DefaultsAndAcceptedValues) {
  Fp8SerdeConfig d = Fp8SerdeConfig::from_json(Json::object());
  EXPECT_EQ(d.options.format, Fp8Format::kE4M3FN);
  EXPECT_EQ(d.options.overflow, Fp8Overflow::kNonSaturating);
  EXPECT_EQ(d.max_workers, 1u);
  Fp8SerdeConfig c = Fp8SerdeConfig::from_json(
      Json{{"fp8_dtype", "float8_e5m2"}, {"max_workers", 4}, {"overflow", "saturating"}});
  EXPECT_EQ(c.options.format, Fp8Format::kE5M2);
  EXPECT_EQ(c.options.overflow, Fp8Overflow::kSaturating);
  EXPECT_EQ(c.max_workers, 4u);
  EXPECT_EQ(Fp8SerdeConfig::from_json(Json{{"max_workers", 2.0}}).max_workers, 2u);
}

TEST(Fp8SerdeConfig, BadValuesNameTheKey) {
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"fp8_dtype", "float16"}});
      },
      {"'fp8_dtype'", "'float16'", "float8_e4m3fn", "float8_e5m2"});
  expect_invalid([] { Fp8SerdeConfig::from_json(Json{{"fp8_dtype", 8}}); }, {"'fp8_dtype'"});
  for (const Json& bad : {Json(0), Json(-1), Json(1.5), Json("2"), Json(true), Json(100000)}) {
    expect_invalid(
        [&] {
          Fp8SerdeConfig::from_json(Json{{"max_workers", bad}});
        },
        {"'max_workers'"});
  }
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"overflow", "wrap"}});
      },
      {"'overflow'", "'wrap'", "nonsaturating", "saturating"});
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"fp8_dtyp", "float8_e5m2"}});
      },
      {"unknown key 'fp8_dtyp'"});
  expect_invalid([] { Fp8SerdeConfig::from_json(Json::array()); }, {"fp8 serde config"});
}

TEST(Fp8SerdeConfig, KernelAndSimdTarget) {
  const Fp8SerdeConfig d = Fp8SerdeConfig::from_json(Json::object());
  EXPECT_EQ(d.options.kernel, Fp8SerdeKernel::kAuto);
  EXPECT_EQ(d.options.simd_target, "");
  for (const char* k : {"auto", "scalar", "simd", "cuda"}) {
    EXPECT_EQ(fp8_serde_kernel_name(Fp8SerdeConfig::from_json(Json{{"kernel", k}}).options.kernel),
              k);
  }
  // SCALAR is compiled into every Highway build.
  const Fp8SerdeConfig pinned =
      Fp8SerdeConfig::from_json(Json{{"kernel", "simd"}, {"simd_target", "SCALAR"}});
  EXPECT_EQ(pinned.options.kernel, Fp8SerdeKernel::kSimd);
  EXPECT_EQ(pinned.options.simd_target, "SCALAR");
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"kernel", "gpu"}});
      },
      {"'kernel'", "'gpu'", "auto, scalar, simd, cuda"});
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"simd_target", "NOT_A_TARGET"}});
      },
      {"'simd_target'", "'NOT_A_TARGET'", "available: "});
  expect_invalid(
      [] {
        Fp8SerdeConfig::from_json(Json{{"kernel", "scalar"}, {"simd_target", "SCALAR"}});
      },
      {"'simd_target'", "kernel is scalar"});
}

TEST(Fp8SerdeConfig, CreateByNameRejectsBadKwargs) {
  expect_invalid(
      [] {
        create_serde_processor(Json{{"type", "fp8"}, {"typo", 1}});
      },
      {"unknown key 'typo'"});
  expect_invalid(
      [] {
        create_serde_processor(Json{{"type", "fp8"}, {"max_workers", 0}});
      },
      {"'max_workers'"});
}

}  // namespace
}  // namespace lmcache
