// File: lmcache/fault/fault_inject_options.h
//
// The knobs of the "fault_inject" adapter (fault_inject_adapter.h) and how its JSON config is
// read: LMCache's Python keys (docs/fault-inject.md) plus this project's fault kinds.
#pragma once

#include <cstdint>

#include "lmcache/core/config.h"
#include "lmcache/fault/drop_rule.h"

namespace lmcache::fault {

enum class StoreFailMode : std::uint8_t { kDeleteAfter, kNeverForward, kMixed };
enum class TruncateMode : std::uint8_t { kNarrow, kZeroTail, kMixed };

// FaultInjectOptions
//
// Every knob of the adapter except "inner". The Python knobs live in `drop` (drop.seed is
// "seed", the one seed of every decision).
struct FaultInjectOptions {
  LoadDropRule drop;
  double store_fail_rate = 0.0;
  StoreFailMode store_fail_mode = StoreFailMode::kMixed;
  double submit_throw_rate = 0.0;
  double lookup_miss_rate = 0.0;
  double corrupt_rate = 0.0;
  std::int64_t corrupt_bits = 1;
  double truncate_rate = 0.0;
  TruncateMode truncate_mode = TruncateMode::kMixed;
  double delay_rate = 0.0;
  double max_delay_ms = 10.0;
  double reorder_rate = 0.0;
  double coalesce_rate = 0.0;
  double max_hold_ms = 20.0;
  double spurious_wakeup_rate = 0.0;
  double hang_rate = 0.0;
  std::int64_t slow_close_ms = 0;

  std::int64_t seed() const { return drop.seed; }

  // from_json()
  //
  // Reads the knobs from `config` (the adapter config without "type"; an "inner" key is
  // allowed and ignored here). Throws std::invalid_argument whose message starts with the
  // Python ValueError text where Python has one -- "rate must be a number in [0, 1]", "seed
  // must be an integer", "gap_indices must be a list of non-negative integers",
  // "gap_tail_ratios must be a list of floats in [0, 1]", "drop_chunk_hashes must be a list of
  // hex strings", "drop_chunk_hashes entry 'x' is not hex" -- followed by " (got <value>)";
  // for the new knobs "'<key>' must be a number in [0, 1] (got <value>)" or similar; and
  // "fault_inject adapter config: unknown key 'k' (known keys: ...)" for an unknown key.
  // Booleans are rejected wherever a number is expected.
  static FaultInjectOptions from_json(const Json& config);

  // to_json()
  //
  // Every knob, in the JSON form from_json() reads (gap_indices sorted, drop_chunk_hashes as
  // lower-case hex).
  Json to_json() const;
};

// FaultInjectConfig / parse_fault_inject_config()
//
// The factory's view: the inner adapter spec plus the options. Throws std::invalid_argument
// "'inner' must be an adapter spec dict with a 'type' field" when "inner" is missing, not an
// object or has no "type", and "'inner' adapter spec must include a string 'type'" when its
// "type" is not a string; then as FaultInjectOptions::from_json().
struct FaultInjectConfig {
  Json inner;
  FaultInjectOptions options;
};
FaultInjectConfig parse_fault_inject_config(const Json& config_without_type);

}  // namespace lmcache::fault
