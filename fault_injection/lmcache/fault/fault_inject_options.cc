// File: lmcache/fault/fault_inject_options.cc
//
// The fault_inject adapter's config: reading, checking and writing back every knob
// (fault_inject_options.h).
#include "lmcache/fault/fault_inject_options.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "lmcache/core/hex.h"
#include "lmcache/fault/internal/knobs.h"

namespace lmcache::fault {
namespace {

using namespace fault_internal;

constexpr const char* kContext = "fault_inject adapter config";

const char* store_fail_mode_name(StoreFailMode m) {
  switch (m) {
    case StoreFailMode::kDeleteAfter:
      return "delete_after";
    case StoreFailMode::kNeverForward:
      return "never_forward";
    case StoreFailMode::kMixed:
      return "mixed";
  }
  return "?";
}

const char* truncate_mode_name(TruncateMode m) {
  switch (m) {
    case TruncateMode::kNarrow:
      return "narrow";
    case TruncateMode::kZeroTail:
      return "zero_tail";
    case TruncateMode::kMixed:
      return "mixed";
  }
  return "?";
}

}  // namespace

FaultInjectOptions FaultInjectOptions::from_json(const Json& config) {
  ConfigReader reader(config, kContext);
  reader.allow("inner");
  FaultInjectOptions o;
  // Python knobs, with Python's messages.
  o.drop.rate = read_probability(reader, "rate", 0.0, "rate must be a number in [0, 1]");
  if (const Json* v = reader.raw("seed")) {
    if (!v->is_number_integer() ||
        (v->is_number_unsigned() &&
         v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))) {
      fail("seed must be an integer", *v);
    }
    o.drop.seed = v->get<std::int64_t>();
  }
  for (std::uint64_t i : read_index_list(reader, "gap_indices",
                                         "gap_indices must be a list of non-negative integers")) {
    o.drop.gap_indices.push_back(static_cast<std::size_t>(i));
  }
  std::sort(o.drop.gap_indices.begin(), o.drop.gap_indices.end());
  o.drop.gap_indices.erase(std::unique(o.drop.gap_indices.begin(), o.drop.gap_indices.end()),
                           o.drop.gap_indices.end());
  if (const Json* v = reader.raw("gap_tail_ratios")) {
    if (!v->is_array()) fail("gap_tail_ratios must be a list of floats in [0, 1]", *v);
    for (const Json& e : *v) {
      if (!e.is_number() || !(e.get<double>() >= 0.0 && e.get<double>() <= 1.0)) {
        fail("gap_tail_ratios must be a list of floats in [0, 1]", *v);
      }
      o.drop.gap_tail_ratios.push_back(e.get<double>());
    }
  }
  if (const Json* v = reader.raw("drop_chunk_hashes")) {
    if (!v->is_array()) fail("drop_chunk_hashes must be a list of hex strings", *v);
    for (const Json& e : *v) {
      if (!e.is_string()) fail("drop_chunk_hashes must be a list of hex strings", *v);
      auto raw = bytes_from_hex(e.get<std::string>());
      if (!raw) {
        throw std::invalid_argument("drop_chunk_hashes entry '" + e.get<std::string>() +
                                    "' is not hex");
      }
      o.drop.drop_chunk_hashes.push_back(*raw);
    }
  }
  // New knobs.
  o.store_fail_rate = read_probability(reader, "store_fail_rate", 0.0);
  o.store_fail_mode = read_mode(reader, "store_fail_mode", StoreFailMode::kMixed,
                                {{"delete_after", StoreFailMode::kDeleteAfter},
                                 {"never_forward", StoreFailMode::kNeverForward},
                                 {"mixed", StoreFailMode::kMixed}});
  o.submit_throw_rate = read_probability(reader, "submit_throw_rate", 0.0);
  o.lookup_miss_rate = read_probability(reader, "lookup_miss_rate", 0.0);
  o.corrupt_rate = read_probability(reader, "corrupt_rate", 0.0);
  o.corrupt_bits = read_integer(reader, "corrupt_bits", 1, 1, 64);
  o.truncate_rate = read_probability(reader, "truncate_rate", 0.0);
  o.truncate_mode = read_mode(reader, "truncate_mode", TruncateMode::kMixed,
                              {{"narrow", TruncateMode::kNarrow},
                               {"zero_tail", TruncateMode::kZeroTail},
                               {"mixed", TruncateMode::kMixed}});
  o.delay_rate = read_probability(reader, "delay_rate", 0.0);
  o.max_delay_ms = read_non_negative(reader, "max_delay_ms", 10.0, 60'000.0);
  o.reorder_rate = read_probability(reader, "reorder_rate", 0.0);
  o.coalesce_rate = read_probability(reader, "coalesce_rate", 0.0);
  o.max_hold_ms = read_non_negative(reader, "max_hold_ms", 20.0, 60'000.0);
  o.spurious_wakeup_rate = read_probability(reader, "spurious_wakeup_rate", 0.0);
  o.hang_rate = read_probability(reader, "hang_rate", 0.0);
  o.slow_close_ms = read_integer(reader, "slow_close_ms", 0, 0, 60'000);
  reader.finish();
  return o;
}

Json FaultInjectOptions::to_json() const {
  Json hashes = Json::array();
  for (const auto& h : drop.drop_chunk_hashes) hashes.push_back(hex_from_bytes(h));
  std::vector<std::size_t> gaps = drop.gap_indices;
  std::sort(gaps.begin(), gaps.end());
  return {{"rate", drop.rate},
          {"seed", drop.seed},
          {"gap_indices", gaps},
          {"gap_tail_ratios", drop.gap_tail_ratios},
          {"drop_chunk_hashes", hashes},
          {"store_fail_rate", store_fail_rate},
          {"store_fail_mode", store_fail_mode_name(store_fail_mode)},
          {"submit_throw_rate", submit_throw_rate},
          {"lookup_miss_rate", lookup_miss_rate},
          {"corrupt_rate", corrupt_rate},
          {"corrupt_bits", corrupt_bits},
          {"truncate_rate", truncate_rate},
          {"truncate_mode", truncate_mode_name(truncate_mode)},
          {"delay_rate", delay_rate},
          {"max_delay_ms", max_delay_ms},
          {"reorder_rate", reorder_rate},
          {"coalesce_rate", coalesce_rate},
          {"max_hold_ms", max_hold_ms},
          {"spurious_wakeup_rate", spurious_wakeup_rate},
          {"hang_rate", hang_rate},
          {"slow_close_ms", slow_close_ms}};
}

FaultInjectConfig parse_fault_inject_config(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string(kContext) + ": expected a JSON object, got " +
                                std::string(config.type_name()));
  }
  auto it = config.find("inner");
  if (it == config.end() || !it->is_object() || !it->contains("type")) {
    throw std::invalid_argument("'inner' must be an adapter spec dict with a 'type' field");
  }
  if (!it->at("type").is_string()) {
    throw std::invalid_argument("'inner' adapter spec must include a string 'type'");
  }
  FaultInjectConfig out;
  out.options = FaultInjectOptions::from_json(config);
  out.inner = *it;
  return out;
}

}  // namespace lmcache::fault
