// File: lmcache/fault/drop_rule.h
//
// LoadDropRule is the load-drop rule of LMCache's Python FaultInjectL2Adapter, reproduced
// exactly so that one fault plan drops the same keys in both implementations
// (docs/fault-inject.md). Position i of an n-key load is dropped when any of:
//   1. n > 0 and i == round_half_even((1 - r) * (n - 1)) for some r in gap_tail_ratios
//      (Python's round(): banker's rounding; n=8, r=0.5 -> 3.5 -> 4; n=4 -> 1.5 -> 2);
//   2. i is in gap_indices (indices >= n have no effect);
//   3. keys[i].chunk_hash() is in drop_chunk_hashes (the earlier Python version's knob);
//   4. rate > 0 and bucket(key) < int(rate * 1,000,000), where bucket(key) is BLAKE2b with an
//      8-byte digest of the UTF-8 text
//        "{seed}:{chunk_hash hex, lower
//        case}:{model_name}:{kv_rank}:{object_group_id}:{cache_salt}"
//      read as a big-endian u64, mod 1,000,000. The decision depends on (seed, key) only, so it
//      is the same across instances, positions and processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "lmcache/core/object_key.h"

namespace lmcache::fault {

// round_half_even()
//
// Python 3's round() for a finite double, as an integer: ties go to the even neighbour.
std::int64_t round_half_even(double x);

struct LoadDropRule {
  double rate = 0.0;
  std::int64_t seed = 0;
  std::vector<std::size_t> gap_indices;
  std::vector<double> gap_tail_ratios;
  std::vector<std::string> drop_chunk_hashes;  // raw chunk_hash bytes (decoded from hex)

  // rate_text()
  //
  // The text the rate hash covers, e.g. "42:00000003:test_model:0:0:".
  static std::string rate_text(std::int64_t seed, const ObjectKey& key);

  // rate_digest()
  //
  // BLAKE2b-64 of rate_text() as a big-endian unsigned integer (Python
  // int.from_bytes(blake2b(text, digest_size=8).digest(), "big")).
  static std::uint64_t rate_digest(std::int64_t seed, const ObjectKey& key);

  // rate_bucket()
  //
  // rate_digest() % 1,000,000.
  static std::uint64_t rate_bucket(std::int64_t seed, const ObjectKey& key);

  // rate_threshold()
  //
  // int(rate * 1,000,000), truncated as Python's int().
  std::int64_t rate_threshold() const;

  // drops_by_rate()
  //
  // Rule 4 alone.
  bool drops_by_rate(const ObjectKey& key) const;

  // ratio_positions()
  //
  // Rule 1's positions for an n-key load; empty when n is 0.
  std::set<std::size_t> ratio_positions(std::size_t n) const;

  // drops()
  //
  // Whether position i of `keys` is dropped (rules 1-4). False for i >= keys.size().
  bool drops(const std::vector<ObjectKey>& keys, std::size_t i) const;

  // dropped_positions()
  //
  // Every dropped position of `keys`, ascending.
  std::vector<std::size_t> dropped_positions(const std::vector<ObjectKey>& keys) const;

  // active()
  //
  // Whether any rule can drop anything.
  bool active() const;
};

}  // namespace lmcache::fault
