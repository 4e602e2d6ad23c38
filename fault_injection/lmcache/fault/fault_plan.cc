#include "lmcache/fault/fault_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lmcache::fault {
namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

std::string valid_kind_names() {
  std::string out = "all, none";
  for (const auto& info : all_fault_kinds()) out += ", " + std::string(info.name);
  return out;
}

}  // namespace

std::vector<FaultKind> FaultPlan::parse_kinds(std::string_view spec) {
  const std::string whole = trim(spec);
  std::vector<FaultKind> out;
  if (whole == "none") return out;
  if (whole == "all") {
    for (const auto& info : all_fault_kinds()) out.push_back(info.kind);
    return out;
  }
  std::size_t start = 0;
  while (start <= whole.size()) {
    std::size_t comma = whole.find(',', start);
    std::string name = trim(std::string_view(whole).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    auto kind = parse_fault_kind(name);
    if (!kind) {
      throw std::invalid_argument("unknown fault kind '" + name +
                                  "' (valid: " + valid_kind_names() + ")");
    }
    if (std::find(out.begin(), out.end(), *kind) == out.end()) out.push_back(*kind);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

FaultPlan FaultPlan::for_kinds(const std::vector<FaultKind>& kinds, double rate,
                               std::int64_t seed) {
  if (!(rate >= 0.0 && rate <= 1.0)) {
    throw std::invalid_argument("fault rate must be a number in [0, 1], got " +
                                std::to_string(rate));
  }
  const double timing = std::min(1.0, 10 * rate);
  FaultPlan p;
  p.seed = seed;
  p.adapter.drop.seed = seed;
  p.adapter.max_delay_ms = 5.0;
  p.adapter.max_hold_ms = 10.0;
  for (FaultKind k : kinds) {
    switch (k) {
      case FaultKind::kLoadDrop:
        p.adapter.drop.rate = rate;
        break;
      case FaultKind::kStoreFail:
        p.adapter.store_fail_rate = rate;
        break;
      case FaultKind::kSubmitThrow:
        p.adapter.submit_throw_rate = rate;
        break;
      case FaultKind::kLookupMiss:
        p.adapter.lookup_miss_rate = rate;
        break;
      case FaultKind::kCorrupt:
        p.adapter.corrupt_rate = rate;
        break;
      case FaultKind::kTruncate:
        p.adapter.truncate_rate = rate;
        break;
      case FaultKind::kDelay:
        p.adapter.delay_rate = timing;
        break;
      case FaultKind::kReorder:
        p.adapter.reorder_rate = timing;
        break;
      case FaultKind::kCoalesce:
        p.adapter.coalesce_rate = timing;
        break;
      case FaultKind::kSpuriousWakeup:
        p.adapter.spurious_wakeup_rate = timing;
        break;
      case FaultKind::kHang:
        p.adapter.hang_rate = rate / 10;
        break;
      case FaultKind::kSlowClose:
        p.adapter.slow_close_ms = 25;
        break;
      case FaultKind::kL1AllocFail:
        p.l1.alloc_fail_rate = rate / 4;
        break;
      case FaultKind::kSerializeThrow:
        p.serde.serialize_throw_rate = rate / 4;
        break;
      case FaultKind::kSerializeWrongCount:
        p.serde.serialize_wrong_count_rate = rate / 4;
        break;
      case FaultKind::kEstimateUnderReport:
        p.serde.estimate_under_report_rate = rate / 2;
        break;
      case FaultKind::kDeserializeThrow:
        p.serde.deserialize_throw_rate = rate / 4;
        break;
      case FaultKind::kSerdeSubmitThrow:
        p.serde.submit_throw_rate = rate / 2;
        break;
    }
  }
  return p;
}

FaultPlan FaultPlan::from_json(const Json& config) {
  ConfigReader reader(config, "fault plan");
  FaultPlan p;
  p.seed = reader.get_int("seed", 0);
  Json adapter = reader.has("adapter") ? *reader.raw("adapter") : Json::object();
  if (!adapter.is_object()) reader.error("'adapter' must be an object, got " + adapter.dump());
  if (adapter.contains("seed") && adapter["seed"] != Json(p.seed)) {
    reader.error("'adapter.seed' must equal the plan's 'seed' (one seed drives every fault)");
  }
  adapter["seed"] = p.seed;
  p.adapter = FaultInjectOptions::from_json(adapter);
  if (const Json* l1 = reader.raw("l1")) p.l1 = L1FaultOptions::from_json(*l1);
  if (const Json* serde = reader.raw("serde")) p.serde = SerdeFaultOptions::from_json(*serde);
  reader.finish();
  return p;
}

Json FaultPlan::to_json() const {
  Json adapter_json = adapter.to_json();
  adapter_json.erase("seed");
  return {
      {"seed", seed}, {"adapter", adapter_json}, {"l1", l1.to_json()}, {"serde", serde.to_json()}};
}

FaultPlan FaultPlan::merged(const Json& overrides) const {
  Json j = to_json();
  j.merge_patch(overrides);
  return from_json(j);
}

bool FaultPlan::enabled(FaultKind kind) const {
  const auto& a = adapter;
  switch (kind) {
    case FaultKind::kLoadDrop:
      return a.drop.active();
    case FaultKind::kStoreFail:
      return a.store_fail_rate > 0;
    case FaultKind::kSubmitThrow:
      return a.submit_throw_rate > 0;
    case FaultKind::kLookupMiss:
      return a.lookup_miss_rate > 0;
    case FaultKind::kCorrupt:
      return a.corrupt_rate > 0;
    case FaultKind::kTruncate:
      return a.truncate_rate > 0;
    case FaultKind::kDelay:
      return a.delay_rate > 0;
    case FaultKind::kReorder:
      return a.reorder_rate > 0;
    case FaultKind::kCoalesce:
      return a.coalesce_rate > 0;
    case FaultKind::kSpuriousWakeup:
      return a.spurious_wakeup_rate > 0;
    case FaultKind::kHang:
      return a.hang_rate > 0;
    case FaultKind::kSlowClose:
      return a.slow_close_ms > 0;
    case FaultKind::kL1AllocFail:
      return l1.alloc_fail_rate > 0 || !l1.alloc_fail_nth.empty();
    case FaultKind::kSerializeThrow:
      return serde.serialize_throw_rate > 0;
    case FaultKind::kSerializeWrongCount:
      return serde.serialize_wrong_count_rate > 0;
    case FaultKind::kEstimateUnderReport:
      return serde.estimate_under_report_rate > 0;
    case FaultKind::kDeserializeThrow:
      return serde.deserialize_throw_rate > 0;
    case FaultKind::kSerdeSubmitThrow:
      return serde.submit_throw_rate > 0;
  }
  return false;
}

std::vector<FaultKind> FaultPlan::enabled_kinds() const {
  std::vector<FaultKind> out;
  for (const auto& info : all_fault_kinds()) {
    if (enabled(info.kind)) out.push_back(info.kind);
  }
  return out;
}

}  // namespace lmcache::fault
