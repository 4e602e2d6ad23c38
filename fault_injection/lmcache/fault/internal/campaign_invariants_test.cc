// The campaign's judgement of a damaged load (campaign_invariants.h): damage obliges the stack to
// fail or detect it only when it reaches into the bytes the deserializer reads (the frame).
// A stored object can be one byte longer than its frame (serialize_wrong_count's "one byte
// long"); a narrowing truncate to the frame's length, or a corrupt or zeroed byte after it,
// then leaves the frame intact and the load may succeed with the right bytes. The end-to-end
// case is the campaign that found it (fault_injection/README.md, "Damage past the frame").
#include "lmcache/fault/internal/campaign_invariants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/fault/campaign.h"
#include "lmcache/fault/fault_plan.h"

namespace lmcache::fault_internal {
namespace {

using fault::CampaignSummary;
using fault::FaultEffect;
using fault::FaultEvent;
using fault::FaultKind;
namespace invariant = fault::invariant;

// Key 1 of the campaign's workload: layout class 1 (fp16 4x16 + fp32 2x16), a 96-byte fp8
// frame.
constexpr std::size_t kKey = 1;

class DamagedLoad : public ::testing::Test {
 protected:
  DamagedLoad() : ledger_(out_), workload_(7, 8, 4) {
    workload_.prepare_keys({{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}});
    model_.assign(workload_.size(), KeyState{});
    model_[kKey].present = true;
  }

  std::size_t frame() const { return workload_.key(kKey).serialized_bytes; }

  // A completed load of key kKey whose bit is set and whose bytes are the expected round trip
  // (or have byte `wrong_byte` changed), with `events` attributed to it.
  CampaignTask load(std::vector<FaultEvent> events, std::optional<std::size_t> wrong_byte = {}) {
    const KeyInfo& k = workload_.key(kKey);
    CampaignTask t;
    t.serial = 1;
    t.kind = OpKind::kLoad;
    t.submitted = true;
    t.completed = true;
    t.key_idx = {kKey};
    t.keys = {k.key};
    t.frame_bytes = {k.serialized_bytes};
    MemoryObjPtr obj = MemoryObj::allocate(layout_for_class(k.layout_class));
    std::memcpy(obj->data(), k.expected.data(), k.expected.size());
    if (wrong_byte) obj->bytes()[*wrong_byte] ^= std::byte{0x40};
    t.objects = {std::move(obj)};
    Bitmap bits(1);
    bits.set(0);
    t.bitmap = bits;
    for (FaultEvent& e : events) e.objects = {t.objects[0].get()};
    t.events = std::move(events);
    return t;
  }

  // Damage of kKey's loaded object from byte `first` on, as the injector records it.
  FaultEvent damage(FaultKind kind, std::size_t first) const {
    FaultEvent e;
    e.seq = 1;
    e.kind = kind;
    e.effect = kind == FaultKind::kTruncate ? FaultEffect::kFailsTask : FaultEffect::kCorruptsData;
    e.keys = {workload_.key(kKey).key};
    e.damaged_key = workload_.key(kKey).key;
    e.first_damaged_byte = first;
    e.detail = "test damage";
    return e;
  }

  // Judges `t` as the campaign does and returns the summary.
  CampaignSummary judge(CampaignTask& t, bool serde_detects_corruption = false) {
    Judge judge(
        ledger_, workload_, model_, [] { return AdapterUsage{}; }, /*serde_injective=*/true,
        serde_detects_corruption);
    judge.load(t, attribute(t));
    return ledger_.summary();
  }

  static std::uint64_t violations(const CampaignSummary& s, const char* inv) {
    auto it = s.violations_by_invariant.find(inv);
    return it == s.violations_by_invariant.end() ? 0 : it->second;
  }

  std::ostringstream out_;
  Ledger ledger_;
  Workload workload_;
  std::vector<KeyState> model_;
};

TEST_F(DamagedLoad, DamageFromTheFramesEndOnIsPastIt) {
  ASSERT_EQ(frame(), 96u);
  CampaignTask t = load({});
  EXPECT_TRUE(damage_past_frame(t, damage(FaultKind::kTruncate, frame())));
  EXPECT_TRUE(damage_past_frame(t, damage(FaultKind::kCorrupt, frame() + 5)));
  EXPECT_FALSE(damage_past_frame(t, damage(FaultKind::kTruncate, frame() - 1)));
  EXPECT_FALSE(damage_past_frame(t, damage(FaultKind::kCorrupt, 0)));
  // Unknown key, offset or frame length: the damage counts as reaching the frame.
  FaultEvent no_offset = damage(FaultKind::kCorrupt, frame());
  no_offset.first_damaged_byte.reset();
  EXPECT_FALSE(damage_past_frame(t, no_offset));
  FaultEvent other_key = damage(FaultKind::kCorrupt, frame());
  other_key.damaged_key = workload_.key(kKey + 3).key;
  EXPECT_FALSE(damage_past_frame(t, other_key));
  CampaignTask no_frames = load({});
  no_frames.frame_bytes.clear();
  EXPECT_FALSE(damage_past_frame(no_frames, damage(FaultKind::kCorrupt, frame())));
}

// The finding: a 97-byte object narrowed to its 96-byte frame loads, as it may.
TEST_F(DamagedLoad, NarrowedToTheFramesLengthMayLoad) {
  CampaignTask t = load({damage(FaultKind::kTruncate, frame())});
  const Attribution a = attribute(t);
  EXPECT_FALSE(a.fails_task);
  EXPECT_EQ(a.damage_past_frame, 1u);
  EXPECT_NE(a.describe().find("past the frame"), std::string::npos) << a.describe();
  CampaignSummary s = judge(t);
  EXPECT_EQ(s.violation_count, 0u) << out_.str();
  EXPECT_EQ(s.damage_past_frame, 1u);
  EXPECT_GT(s.checks_passed[invariant::kLoadedDataMatches], 0u);
}

// One byte shorter reaches into the frame: the load must fail, and a set bit is a violation.
TEST_F(DamagedLoad, NarrowedIntoTheFrameMustFailTheLoad) {
  CampaignTask t = load({damage(FaultKind::kTruncate, frame() - 1)});
  EXPECT_TRUE(attribute(t).fails_task);
  CampaignSummary s = judge(t);
  EXPECT_EQ(violations(s, invariant::kInjectedFaultNeverSuccess), 1u) << out_.str();
  EXPECT_EQ(s.damage_past_frame, 0u);
}

// A corrupt byte past the frame is not a corruption the data check must see.
TEST_F(DamagedLoad, CorruptPastTheFrameNeedNotShow) {
  CampaignTask t = load({damage(FaultKind::kCorrupt, frame())});
  EXPECT_TRUE(attribute(t).corrupt_effective.empty());
  CampaignSummary s = judge(t);
  EXPECT_EQ(s.violation_count, 0u) << out_.str();
  EXPECT_EQ(s.damage_past_frame, 1u);
}

// ... but it excuses nothing: wrong bytes after damage past the frame are a violation.
TEST_F(DamagedLoad, DamagePastTheFrameExcusesNoWrongBytes) {
  CampaignTask t = load({damage(FaultKind::kCorrupt, frame())}, /*wrong_byte=*/3);
  CampaignSummary s = judge(t);
  EXPECT_EQ(violations(s, invariant::kLoadedDataMatches), 1u) << out_.str();
}

// A corrupt byte inside the frame must still show in the data (the check is not blind).
TEST_F(DamagedLoad, CorruptInTheFrameMustShow) {
  CampaignTask t = load({damage(FaultKind::kCorrupt, frame() - 1)});
  EXPECT_EQ(attribute(t).corrupt_effective.size(), 1u);
  CampaignSummary s = judge(t);
  EXPECT_EQ(violations(s, invariant::kCorruptionDetected), 1u) << out_.str();
}

// An integrity serde need not refuse damage past its frame, and must refuse damage in it.
TEST_F(DamagedLoad, AnIntegritySerdeIsHeldToTheFrameOnly) {
  CampaignTask past = load({damage(FaultKind::kCorrupt, frame())});
  EXPECT_EQ(judge(past, /*serde_detects_corruption=*/true).violation_count, 0u) << out_.str();
  CampaignTask in = load({damage(FaultKind::kCorrupt, 0)});
  EXPECT_EQ(
      violations(judge(in, /*serde_detects_corruption=*/true), invariant::kCorruptionNeverLoads),
      1u);
}

// The campaign that found it, in process, over the mock: with these faults and this seed an
// object stored one byte long (serialize_wrong_count) is loaded and narrowed to its frame's
// length (truncate), which the deserializer accepts. It used to be reported as an
// injected_fault_never_success violation; now it passes and is counted.
TEST(DamagedLoadCampaign, OneByteLongObjectsNarrowedToTheirFramePass) {
  fault::CampaignOptions o;
  o.seed = 10;
  o.operations = 2000;
  o.faults = "serialize_wrong_count,truncate,corrupt";
  o.rate = 0.3;
  o.plan = fault::FaultPlan::for_kinds(fault::FaultPlan::parse_kinds(o.faults), o.rate, 10);
  std::ostringstream out;
  CampaignSummary s = fault::run_campaign(o, out);
  EXPECT_TRUE(s.passed()) << out.str();
  EXPECT_GE(s.damage_past_frame, 1u) << out.str();
}

}  // namespace
}  // namespace lmcache::fault_internal
