// In-process campaigns (the ctest entries run the real binary; these check the library API).
#include "lmcache/fault/campaign.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace lmcache::fault {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

CampaignOptions options(const char* faults, double rate, std::uint64_t ops, std::uint64_t seed) {
  CampaignOptions o;
  o.seed = seed;
  o.operations = ops;
  o.faults = faults;
  o.rate = rate;
  o.plan =
      FaultPlan::for_kinds(FaultPlan::parse_kinds(faults), rate, static_cast<std::int64_t>(seed));
  o.epoch_ops = 300;
  return o;
}

TEST(CampaignInProcessConcurrency, NoFaultsPasses) {
  std::ostringstream out;
  CampaignSummary s = run_campaign(options("none", 0.0, 500, 3), out);
  EXPECT_TRUE(s.passed()) << out.str();
  EXPECT_THAT(out.str(), StartsWith("seed=3\n"));
  EXPECT_EQ(s.operations, 500u);
  EXPECT_GE(s.epochs, 2u);
  EXPECT_GT(s.checks_passed[invariant::kLoadedDataMatches], 0u);
  EXPECT_GT(s.checks_passed[invariant::kNoFdLeak], 0u);
  EXPECT_EQ(s.exit_code(), 0);
  Json j = s.to_json();
  EXPECT_EQ(j["result"], "pass");
  EXPECT_EQ(j["seed"], 3);
  EXPECT_TRUE(j["violations"].empty());
}

TEST(CampaignInProcessConcurrency, AllFaultsPassAndTheSameSeedReproduces) {
  std::ostringstream out1, out2;
  CampaignSummary a = run_campaign(options("all", 0.05, 600, 8), out1);
  CampaignSummary b = run_campaign(options("all", 0.05, 600, 8), out2);
  EXPECT_TRUE(a.passed()) << out1.str();
  EXPECT_TRUE(b.passed()) << out2.str();
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.faults_injected, b.faults_injected);
  EXPECT_EQ(a.operations_by_kind, b.operations_by_kind);
  int kinds = 0;
  for (auto it = a.faults_injected.begin(); it != a.faults_injected.end(); ++it) {
    kinds += it.value().get<std::uint64_t>() > 0;
  }
  EXPECT_GE(kinds, 10);
  CampaignSummary c = run_campaign(options("all", 0.05, 600, 9), out2);
  EXPECT_NE(a.fingerprint, c.fingerprint);
}

TEST(CampaignInProcessConcurrency, AMutantIsCaughtAndNamed) {
  std::ostringstream out;
  CampaignOptions o = options("none", 0.0, 300, 1);
  o.key_count = 48;
  o.mutant = StackMutant::kWrongBytes;
  CampaignSummary s = run_campaign(o, out);
  EXPECT_FALSE(s.passed());
  EXPECT_EQ(s.exit_code(), 1);
  EXPECT_GT(s.violations_by_invariant[invariant::kLoadedDataMatches], 0u);
  EXPECT_THAT(out.str(), HasSubstr("VIOLATION [loaded_data_matches]"));
  EXPECT_EQ(s.to_json()["result"], "fail");
}

TEST(CampaignInProcessConcurrency, ExpectInjectionsFlagsAKindThatNeverFired) {
  std::ostringstream out;
  CampaignOptions o = options("hang", 1e-9, 50, 1);
  o.expect_injections = true;
  CampaignSummary s = run_campaign(o, out);
  EXPECT_EQ(s.violations_by_invariant[invariant::kFaultInjected], 1u);
}

TEST(CampaignInProcessConcurrency, RejectsABadConfiguration) {
  std::ostringstream out;
  CampaignOptions o = options("none", 0.0, 10, 1);
  o.inner = Json::parse(R"({"type": "no_such_adapter"})");
  EXPECT_THROW(run_campaign(o, out), std::invalid_argument);
  o = options("none", 0.0, 0, 1);
  EXPECT_THROW(run_campaign(o, out), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache::fault
