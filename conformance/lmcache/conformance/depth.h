// File: lmcache/conformance/depth.h
//
// How hard the conformance kit looks: a run chooses one depth, and every property scales its
// number of generated cases and the size of what it generates from it.
//
//   quick       seconds per property: small inputs, few cases. For a first try or a sanitizer
//               build; it can miss bugs that only show on large inputs or long sequences.
//   standard    the default of lmcache-conform and of CI: groups up to ~2 M elements (rarely),
//               batches up to 80 keys, hundreds of tasks for the resource checks.
//   exhaustive  three times standard's cases, groups up to ~8 M elements, over a thousand tasks.
//
// The depth comes from `lmcache-conform --depth`, which passes it to its child processes as
// LMCACHE_CONFORMANCE_DEPTH; a link-time gtest binary reads the same variable
// (LMCACHE_CONFORMANCE_DEPTH=exhaustive ./my_conformance_test). RC_PARAMS keys (max_success,
// max_size, ...) still override what the depth chose for a property.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace lmcache::conformance {

enum class Depth { kQuick, kStandard, kExhaustive };

// depth_name()
//
// "quick", "standard" or "exhaustive".
std::string_view depth_name(Depth depth);

// parse_depth()
//
// Inverse of depth_name(); nullopt for any other text.
std::optional<Depth> parse_depth(std::string_view text);

// current_depth()
//
// The depth of this process: LMCACHE_CONFORMANCE_DEPTH, or kStandard when it is unset or
// empty. Throws std::invalid_argument naming the value when it is set to anything else (a
// property then fails with that message instead of silently running at another depth).
Depth current_depth();

// DepthProfile
//
// What a depth means in numbers; the properties read these instead of hard-coding sizes.
struct DepthProfile {
  // Multiplies each property's own case count (RcOptions::max_success), at least 1 case.
  double case_factor = 1.0;
  // The largest group a layout generator may draw, in elements; large groups are drawn
  // rarely, with most of the weight on small and boundary sizes.
  std::size_t max_group_elements = 0;
  // The largest KV-chunk-sized group a layout may draw, in bytes (rarely; gen_chunk_bytes()):
  // chunks of 256 KiB and more as a serving engine stores them.
  std::size_t max_chunk_bytes = 0;
  // The largest batch (keys of one task, pairs of one serde task).
  std::size_t max_batch = 0;
  // Tasks a resource-accounting property runs on one instance.
  std::size_t resource_tasks = 0;
  // Commands of one stateful sequence (RapidCheck max_size for the state machines).
  int max_commands = 0;
};

// depth_profile()
//
// The numbers of `depth` (see the table in conformance/README.md).
const DepthProfile& depth_profile(Depth depth);

// current_profile()
//
// depth_profile(current_depth()).
const DepthProfile& current_profile();

}  // namespace lmcache::conformance
