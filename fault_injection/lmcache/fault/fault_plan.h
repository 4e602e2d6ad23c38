// File: lmcache/fault/fault_plan.h
//
// FaultPlan gathers every fault knob of every layer under one seed: the fault_inject adapter's
// options, the L1 allocation hook's and the serde hooks'. The campaign builds one from a list
// of kinds and a base rate (for_kinds), optionally patched with explicit knobs (merged), and
// prints it in its summary so that a run can be reproduced exactly.
//
// JSON form:
//   {"seed": 7,
//    "adapter": {...FaultInjectOptions knobs, without "inner" and "seed"...},
//    "l1":      {"alloc_fail_rate": 0.0, "alloc_fail_nth": []},
//    "serde":   {...SerdeFaultOptions knobs...}}
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/fault/fault_hooks.h"
#include "lmcache/fault/fault_inject_adapter.h"
#include "lmcache/fault/fault_log.h"

namespace lmcache::fault {

struct FaultPlan {
  std::int64_t seed = 0;
  FaultInjectOptions adapter;  // adapter.drop.seed is kept equal to `seed`
  L1FaultOptions l1;
  SerdeFaultOptions serde;

  // parse_kinds()
  //
  // "all" (every kind), "none" (no kind) or a comma-separated list of kind names (spaces
  // allowed, duplicates ignored). Throws std::invalid_argument naming an unknown kind and
  // listing the valid ones.
  static std::vector<FaultKind> parse_kinds(std::string_view spec);

  // for_kinds()
  //
  // A plan in which each kind of `kinds` fires at a rate derived from `rate` (the README
  // lists the factors: timing faults 10x, hang 1/10, the per-object serde and L1 faults 1/4,
  // slow_close a fixed 25 ms) and every other kind is off. Throws std::invalid_argument when
  // rate is not in [0, 1].
  static FaultPlan for_kinds(const std::vector<FaultKind>& kinds, double rate, std::int64_t seed);

  // from_json() / to_json()
  //
  // Strict keys at every level; from_json() of to_json() gives the same plan.
  static FaultPlan from_json(const Json& config);
  Json to_json() const;

  // merged()
  //
  // This plan's JSON merge-patched (RFC 7386) with `overrides`, parsed again. Throws as
  // from_json() for a bad result.
  FaultPlan merged(const Json& overrides) const;

  // enabled()
  //
  // Whether the plan can inject `kind` at all.
  bool enabled(FaultKind kind) const;

  // enabled_kinds()
  //
  // Every kind enabled() accepts, in enum order.
  std::vector<FaultKind> enabled_kinds() const;
};

}  // namespace lmcache::fault
