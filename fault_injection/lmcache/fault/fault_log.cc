#include "lmcache/fault/fault_log.h"

#include <array>
#include <iterator>
#include <utility>

namespace lmcache::fault {
namespace {

constexpr std::array<FaultKindInfo, kFaultKindCount> kKinds{{
    {FaultKind::kLoadDrop, "load_drop", "l2", FaultEffect::kMiss,
     "visible: the load bit is clear (Python FaultInjectL2Adapter rule); lookup still hits"},
    {FaultKind::kStoreFail, "store_fail", "l2", FaultEffect::kFailsTask,
     "visible: the store reports failure and its keys are absent afterwards"},
    {FaultKind::kSubmitThrow, "submit_throw", "l2", FaultEffect::kFailsTask,
     "visible: submit throws InjectedFault (the serde wrapper turns it into a failed task)"},
    {FaultKind::kLookupMiss, "lookup_miss", "l2", FaultEffect::kMiss,
     "visible: lookup reports a stored key absent; its lock is released by the injector"},
    {FaultKind::kCorrupt, "corrupt", "l2", FaultEffect::kCorruptsData,
     "NOT detectable by the stack (fp8 has no checksum): the bit stays set; only a data "
     "comparison against the expected bytes catches it"},
    {FaultKind::kTruncate, "truncate", "l2", FaultEffect::kFailsTask,
     "mode narrow: detectable, a conforming deserializer rejects the short source and the "
     "whole load fails; mode zero_tail: NOT detectable by the stack, like corrupt"},
    {FaultKind::kDelay, "delay", "l2", FaultEffect::kNone, "timing only: a late completion"},
    {FaultKind::kReorder, "reorder", "l2", FaultEffect::kNone,
     "timing only: completions published out of submission order"},
    {FaultKind::kCoalesce, "coalesce", "l2", FaultEffect::kNone,
     "timing only: several completions behind one wake-up"},
    {FaultKind::kSpuriousWakeup, "spurious_wakeup", "l2", FaultEffect::kNone,
     "timing only: a wake-up with no result behind it"},
    {FaultKind::kHang, "hang", "l2", FaultEffect::kHang,
     "visible at close(): the task never completes until close() fails it"},
    {FaultKind::kSlowClose, "slow_close", "l2", FaultEffect::kNone,
     "timing only: close() takes longer"},
    {FaultKind::kL1AllocFail, "l1_alloc_fail", "l1", FaultEffect::kFailsTask,
     "visible: the wrapper cannot reserve temps and fails the task"},
    {FaultKind::kSerializeThrow, "serialize_throw", "serde", FaultEffect::kFailsTask,
     "visible: the serialize task fails, so the store fails"},
    {FaultKind::kSerializeWrongCount, "serialize_wrong_count", "serde", FaultEffect::kPoisonsStored,
     "too large beyond the buffer: the store fails; slightly too large: harmless; too small: "
     "the store SUCCEEDS with a short payload that the deserializer rejects at load time"},
    {FaultKind::kEstimateUnderReport, "estimate_under_report", "serde", FaultEffect::kMayFail,
     "visible: temps too small, so serialize or the inner load fails"},
    {FaultKind::kDeserializeThrow, "deserialize_throw", "serde", FaultEffect::kFailsTask,
     "visible: the deserialize task fails, so the whole load reports no key"},
    {FaultKind::kSerdeSubmitThrow, "serde_submit_throw", "serde", FaultEffect::kFailsTask,
     "visible: the wrapper fails the task whose serde submit threw"},
}};

thread_local std::uint64_t t_scope_tag = 0;

}  // namespace

const FaultKindInfo& fault_kind_info(FaultKind kind) {
  return kKinds[static_cast<std::size_t>(kind)];
}

std::span<const FaultKindInfo> all_fault_kinds() { return kKinds; }

std::string_view fault_kind_name(FaultKind kind) { return fault_kind_info(kind).name; }

std::optional<FaultKind> parse_fault_kind(std::string_view name) {
  for (const auto& info : kKinds) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

std::string_view fault_effect_name(FaultEffect effect) {
  switch (effect) {
    case FaultEffect::kNone:
      return "none";
    case FaultEffect::kFailsTask:
      return "fails_task";
    case FaultEffect::kMayFail:
      return "may_fail";
    case FaultEffect::kMiss:
      return "miss";
    case FaultEffect::kCorruptsData:
      return "corrupts_data";
    case FaultEffect::kPoisonsStored:
      return "poisons_stored";
    case FaultEffect::kHang:
      return "hang";
  }
  return "?";
}

std::string FaultEvent::to_string() const {
  std::string out =
      std::string(fault_kind_name(kind)) + "(" + std::string(fault_effect_name(effect)) + ")";
  if (!keys.empty()) {
    out += " keys=[";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out += (i ? "," : "") + keys[i].chunk_hash_hex();
    }
    out += "]";
  }
  if (!objects.empty()) out += " objects=" + std::to_string(objects.size());
  if (scope_tag) out += " scope=" + std::to_string(scope_tag);
  if (!effective) out += " (no effect)";
  if (!detail.empty()) out += " " + detail;
  if (damaged_key && first_damaged_byte) {
    out += " (key " + damaged_key->chunk_hash_hex() + " damaged from byte " +
           std::to_string(*first_damaged_byte) + ")";
  }
  return out;
}

void FaultLog::record(FaultEvent event) {
  if (event.scope_tag == 0) event.scope_tag = AttributionScope::current();
  std::lock_guard lock(mu_);
  event.seq = next_seq_++;
  ++counts_[static_cast<std::size_t>(event.kind)];
  pending_.push_back(std::move(event));
  if (pending_.size() > kMaxPendingEvents) {
    pending_.pop_front();
    ++dropped_;
  }
}

std::vector<FaultEvent> FaultLog::drain() {
  std::lock_guard lock(mu_);
  std::vector<FaultEvent> out(std::make_move_iterator(pending_.begin()),
                              std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

std::uint64_t FaultLog::next_seq() const {
  std::lock_guard lock(mu_);
  return next_seq_;
}

std::uint64_t FaultLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::uint64_t FaultLog::count(FaultKind kind) const {
  std::lock_guard lock(mu_);
  return counts_[static_cast<std::size_t>(kind)];
}

std::array<std::uint64_t, kFaultKindCount> FaultLog::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

Json FaultLog::counts_json() const {
  auto c = counts();
  Json out = Json::object();
  for (const auto& info : kKinds)
    out[std::string(info.name)] = c[static_cast<std::size_t>(info.kind)];
  return out;
}

AttributionScope::AttributionScope(std::uint64_t tag) : previous_(t_scope_tag) {
  t_scope_tag = tag;
}

AttributionScope::~AttributionScope() { t_scope_tag = previous_; }

std::uint64_t AttributionScope::current() { return t_scope_tag; }

}  // namespace lmcache::fault
