// The conformance kit tested against itself: every mutant is caught under the property it
// breaks (and with the expected status), the reference implementations and the mutants'
// conformant bases pass every property (instantiated here exactly as a vendor would), and the
// catalogue, the mustpass list, the registry, the plugin ABI helpers and the RapidCheck replay
// behave as documented.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/serde_conformance.h"
#include "lmcache/conformance/verify.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "mutants.h"

namespace lmcache::conformance::selftest {

void PrintTo(const Mutant& m, std::ostream* os) {
  *os << m.name << " (" << KindName(m.kind) << ", caught by " << m.property << ")";
}

namespace {

Verdict RunMutant(const Mutant& m) {
  switch (m.kind) {
    case ImplementationKind::kSerde:
      return RunSerdeProperty(m.property, m.serde);
    case ImplementationKind::kProcessor:
      return RunProcessorProperty(m.property, m.processor);
    case ImplementationKind::kAdapter:
      return RunAdapterProperty(m.property, m.adapter);
    case ImplementationKind::kWrapper:
      return RunWrapperProperty(m.property, m.wrapper);
  }
  return Verdict::Fail("unknown kind");
}

// ---------------------------------------------------------------------------------------------
// Every mutant is caught, under the right property.

class MutantIsCaught : public ::testing::TestWithParam<Mutant> {};

TEST_P(MutantIsCaught, UnderItsProperty) {
  const Mutant& m = GetParam();
  Verdict v = RunMutant(m);
  EXPECT_EQ(v.status, m.expected) << m.name << " under " << SuiteName(m.kind) << "." << m.property
                                  << " ended " << StatusName(v.status) << " instead of "
                                  << StatusName(m.expected) << ":\n"
                                  << v.message;
  if (m.expected == Status::kFail && v.status == Status::kFail) {
    EXPECT_FALSE(v.message.empty()) << "a failure must say what broke";
  }
  // Show why, so that a reader of the log can check it is caught for its bug.
  const std::string& why = v.message;
  std::cout << "  [caught] " << m.name << ": " << why.substr(0, why.find('\n')) << "\n";
}

INSTANTIATE_TEST_SUITE_P(SelftestConcurrency, MutantIsCaught, ::testing::ValuesIn(AllMutants()),
                         [](const auto& info) { return info.param.name; });

TEST(Catalogue, EveryPropertyHasAMutant) {
  std::set<std::pair<ImplementationKind, std::string>> covered;
  for (const Mutant& m : AllMutants()) covered.insert({m.kind, m.property});
  for (auto kind : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                    ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
    for (const auto& p : PropertiesOf(kind)) {
      EXPECT_TRUE(covered.count({kind, std::string(p.name)}))
          << SuiteName(kind) << "." << p.name << " has no self-test mutant";
    }
  }
}

TEST(Catalogue, MutantsNameExistingPropertiesAndAreUnique) {
  std::set<std::string> names;
  for (const Mutant& m : AllMutants()) {
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate mutant " << m.name;
    EXPECT_TRUE(IsValidImplementationName(m.name)) << m.name;
    bool found = false;
    for (const auto& p : PropertiesOf(m.kind)) found |= p.name == m.property;
    EXPECT_TRUE(found) << m.name << " names unknown property " << m.property;
  }
}

TEST(Catalogue, MustpassListMatchesTheSuites) {
  std::ifstream in(LMCACHE_CONFORMANCE_MUSTPASS_FILE);
  ASSERT_TRUE(in) << LMCACHE_CONFORMANCE_MUSTPASS_FILE;
  std::vector<std::string> listed;
  std::string line;
  bool versioned = false;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) {
      versioned |= line.find(std::string("version ") + LMCACHE_CONFORMANCE_MUSTPASS_VERSION) !=
                   std::string::npos;
      continue;
    }
    if (!line.empty()) listed.push_back(line);
  }
  EXPECT_TRUE(versioned) << "mustpass.txt must carry version " LMCACHE_CONFORMANCE_MUSTPASS_VERSION;
  std::vector<std::string> expected;
  for (auto kind : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                    ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
    for (const auto& p : PropertiesOf(kind)) {
      expected.push_back(std::string(p.suite) + "." + std::string(p.name));
    }
  }
  EXPECT_EQ(listed, expected);
}

TEST(Catalogue, UnknownPropertyIsAFail) {
  EXPECT_EQ(RunSerdeProperty("NoSuchProperty", CopySerde()).status, Status::kFail);
  EXPECT_EQ(RunAdapterProperty("NoSuchProperty", DecoratedMockAdapter()).status, Status::kFail);
}

// ---------------------------------------------------------------------------------------------
// Registry and plugin ABI.

TEST(Registry, RejectsDuplicateAndInvalidNames) {
  Registry r;
  r.add_serde(CopySerde());
  EXPECT_THROW(r.add_serde(CopySerde()), std::invalid_argument);
  SerdeUnderTest bad = CopySerde();
  bad.name = "has space";
  EXPECT_THROW(r.add_serde(bad), std::invalid_argument);
  bad.name = "no_factory";
  bad.make_serializer = nullptr;
  EXPECT_THROW(r.add_serde(bad), std::invalid_argument);
  r.add_adapter(ReferenceMockAdapter());
  EXPECT_EQ(r.size(), 2u);
  EXPECT_TRUE(r.retain_only(ImplementationKind::kAdapter, "mock"));
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(r.retain_only(ImplementationKind::kSerde, "copy_serde"));
  EXPECT_EQ(r.size(), 0u);
}

void RegisterOne(Registry& r) { r.add_serde(CopySerde()); }
void RegisterThrows(Registry&) { throw std::runtime_error("boom"); }

TEST(PluginAbi, EntryChecksVersionsAndReportsErrors) {
  Registry r;
  char error[256] = {0};
  LmcacheConformanceHostV1 host{LMCACHE_CONFORMANCE_ABI_VERSION,
                                sizeof(LmcacheConformanceHostV1),
                                LMCACHE_CONFORMANCE_PROJECT_VERSION,
                                &r,
                                error,
                                sizeof(error)};
  EXPECT_EQ(internal::RunPluginEntry(&host, &RegisterOne), LMCACHE_CONFORMANCE_OK);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(internal::RunPluginEntry(&host, &RegisterThrows), LMCACHE_CONFORMANCE_E_REGISTER);
  EXPECT_STREQ(error, "boom");
  host.project_version = "999.0.0";
  EXPECT_EQ(internal::RunPluginEntry(&host, &RegisterOne), LMCACHE_CONFORMANCE_E_VERSION);
  host.project_version = LMCACHE_CONFORMANCE_PROJECT_VERSION;
  host.abi_version = LMCACHE_CONFORMANCE_ABI_VERSION + 1;
  EXPECT_EQ(internal::RunPluginEntry(&host, &RegisterOne), LMCACHE_CONFORMANCE_E_VERSION);
  EXPECT_TRUE(internal::SameMajorMinor("1.2.3", "1.2.9"));
  EXPECT_FALSE(internal::SameMajorMinor("1.2.3", "1.3.0"));
}

// ---------------------------------------------------------------------------------------------
// Tools the properties are built from.

TEST(Buffers, HalfAndBfloatConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7C00);  // rounds to inf
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(HalfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(Bf16BitsToFloat(0x3F80), 1.0f);
  EXPECT_EQ(FloatToBf16Bits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie to even
  EXPECT_EQ(FloatToBf16Bits(std::bit_cast<float>(0x3F818000u)), 0x3F82);
}

TEST(Buffers, GuardedObjectSeesWritesOutside) {
  GuardedObject g = GuardedObject::Bytes(16);
  EXPECT_EQ(g.CheckGuards(), "");
  auto before = g.snapshot();
  g->data()[16] = ~g->data()[16];
  EXPECT_NE(g.CheckGuards(), "");
  g->data()[3] = ~g->data()[3];
  EXPECT_NE(g.CheckPayloadUnchanged(before, 0, 16), "");
  EXPECT_EQ(g.CheckPayloadUnchanged(before, 4, 16), "");
}

TEST(Verify, HelpersWorkOnTheirOwn) {
  MemoryObjPtr src = MakeObject(MemoryLayoutDesc::single({3, 5}, DType::kFloat16));
  FillValues(*src, ValueSpec{448.0, true, false}, 7);
  SerdeUnderTest fp8 = ReferenceFp8Serde(Fp8Format::kE4M3FN);
  EXPECT_TRUE(VerifySerdeRoundTrip(fp8, *src));
  EXPECT_TRUE(VerifyShortBufferRejected(fp8, *src, 1));
  EXPECT_TRUE(VerifyBridgeEquivalence(fp8, *src));
  // fp8 is lossy: claiming it lossless must fail with a message naming an element.
  SerdeUnderTest claimed = fp8;
  claimed.lossiness = Lossiness::Lossless();
  ::testing::AssertionResult r = VerifySerdeRoundTrip(claimed, *src);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("element"), std::string::npos) << r.message();
}

TEST(RapidCheck, AFailureCarriesAReplayableSeed) {
  Mutant under;
  for (const Mutant& m : AllMutants()) {
    if (m.name == "under_estimate") under = m;
  }
  Verdict first = RunMutant(under);
  ASSERT_EQ(first.status, Status::kFail);
  ASSERT_TRUE(first.rc_seed.has_value());
  ASSERT_NE(first.rc_params.find("reproduce="), std::string::npos) << first.rc_params;
  const char* old = std::getenv("RC_PARAMS");
  std::string saved = old ? old : "";
  setenv("RC_PARAMS", first.rc_params.c_str(), 1);
  Verdict replay = RunMutant(under);
  if (old) {
    setenv("RC_PARAMS", saved.c_str(), 1);
  } else {
    unsetenv("RC_PARAMS");
  }
  EXPECT_EQ(replay.status, Status::kFail);
  // The replay reaches the same minimal counterexample.
  auto verdict_line = [](const std::string& m) {
    auto at = m.find("is not an upper bound");
    return at == std::string::npos ? std::string() : m.substr(m.rfind('\n', at) + 1);
  };
  EXPECT_NE(verdict_line(first.message), "");
  EXPECT_EQ(verdict_line(replay.message), verdict_line(first.message));
}

}  // namespace
}  // namespace lmcache::conformance::selftest

// ---------------------------------------------------------------------------------------------
// The reference implementations and the mutants' conformant bases pass every property:
// instantiated exactly as a vendor instantiates the suites.

using lmcache::Fp8Format;
namespace conf = lmcache::conformance;

INSTANTIATE_TEST_SUITE_P(ReferenceConcurrency, SerdeConformance,
                         ::testing::Values(conf::ReferenceFp8Serde(Fp8Format::kE4M3FN),
                                           conf::ReferenceFp8Serde(Fp8Format::kE5M2),
                                           conf::selftest::CopySerde()),
                         conf::ParamName());
INSTANTIATE_TEST_SUITE_P(ReferenceConcurrency, ProcessorConformance,
                         ::testing::Values(conf::ReferenceAsyncFp8Processor(Fp8Format::kE4M3FN, 1),
                                           conf::ReferenceAsyncFp8Processor(Fp8Format::kE5M2, 3),
                                           conf::selftest::QueueProcessor()),
                         conf::ParamName());
INSTANTIATE_TEST_SUITE_P(ReferenceConcurrency, AdapterConformance,
                         ::testing::Values(conf::ReferenceMockAdapter(),
                                           conf::ReferenceWrappedMockAdapter(),
                                           conf::selftest::DecoratedMockAdapter()),
                         conf::ParamName());
INSTANTIATE_TEST_SUITE_P(ReferenceConcurrency, WrapperConformance,
                         ::testing::Values(conf::ReferenceSerdeWrapper()), conf::ParamName());
