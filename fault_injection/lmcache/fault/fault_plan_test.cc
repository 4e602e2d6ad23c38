#include "lmcache/fault/fault_plan.h"

#include <gtest/gtest.h>

#include "lmcache/fault/mutants.h"

namespace lmcache::fault {
namespace {

TEST(FaultPlan, ParseKinds) {
  EXPECT_EQ(FaultPlan::parse_kinds("all").size(), kFaultKindCount);
  EXPECT_TRUE(FaultPlan::parse_kinds("none").empty());
  EXPECT_EQ(FaultPlan::parse_kinds(" corrupt, hang ,corrupt"),
            (std::vector<FaultKind>{FaultKind::kCorrupt, FaultKind::kHang}));
  try {
    FaultPlan::parse_kinds("corrupt,bogus");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'bogus'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("load_drop"), std::string::npos);
  }
}

TEST(FaultPlan, ForKindsEnablesExactlyThoseKinds) {
  for (const auto& info : all_fault_kinds()) {
    FaultPlan p = FaultPlan::for_kinds({info.kind}, 0.1, 3);
    EXPECT_EQ(p.enabled_kinds(), std::vector<FaultKind>{info.kind}) << info.name;
    EXPECT_EQ(p.adapter.seed(), 3);
  }
  EXPECT_TRUE(FaultPlan::for_kinds({}, 0.1, 3).enabled_kinds().empty());
  EXPECT_EQ(FaultPlan::for_kinds(FaultPlan::parse_kinds("all"), 0.1, 3).enabled_kinds().size(),
            kFaultKindCount);
  EXPECT_THROW(FaultPlan::for_kinds({}, 1.5, 0), std::invalid_argument);
}

TEST(FaultPlan, JsonRoundTripAndMerge) {
  FaultPlan p = FaultPlan::for_kinds(FaultPlan::parse_kinds("all"), 0.04, 9);
  FaultPlan q = FaultPlan::from_json(p.to_json());
  EXPECT_EQ(q.to_json(), p.to_json());
  FaultPlan r = p.merged(Json::parse(R"({"adapter": {"corrupt_rate": 0.5, "gap_indices": [2]},
                                         "l1": {"alloc_fail_nth": [0, 3]}})"));
  EXPECT_DOUBLE_EQ(r.adapter.corrupt_rate, 0.5);
  EXPECT_EQ(r.adapter.drop.gap_indices, std::vector<std::size_t>{2});
  EXPECT_EQ(r.l1.alloc_fail_nth, (std::vector<std::uint64_t>{0, 3}));
  EXPECT_EQ(r.seed, 9);
  EXPECT_THROW(p.merged(Json::parse(R"({"adapter": {"corupt_rate": 0.5}})")),
               std::invalid_argument);
  EXPECT_THROW(p.merged(Json::parse(R"({"serde": {"serialize_throw_rate": 2}})")),
               std::invalid_argument);
  EXPECT_THROW(FaultPlan::from_json(Json::parse(R"({"seed": 1, "adapter": {"seed": 2}})")),
               std::invalid_argument);
  EXPECT_THROW(FaultPlan::from_json(Json::parse(R"({"sed": 1})")), std::invalid_argument);
}

TEST(Mutants, TableNamesEveryMutantOnce) {
  for (const auto& m : all_mutants()) {
    EXPECT_EQ(parse_mutant(m.name), m.mutant);
    EXPECT_EQ(mutant_info(m.mutant).name, m.name);
    if (m.mutant != StackMutant::kNone) {
      EXPECT_FALSE(m.invariant.empty()) << m.name;
    }
  }
  EXPECT_FALSE(parse_mutant("bogus"));
}

}  // namespace
}  // namespace lmcache::fault
