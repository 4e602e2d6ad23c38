#include "lmcache/fault/drop_rule.h"

#include <blake2.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lmcache::fault {

std::int64_t round_half_even(double x) {
  double f = std::floor(x);
  double diff = x - f;  // exact for the magnitudes involved
  if (diff < 0.5) return static_cast<std::int64_t>(f);
  if (diff > 0.5) return static_cast<std::int64_t>(f) + 1;
  auto lo = static_cast<std::int64_t>(f);
  return (lo % 2 == 0) ? lo : lo + 1;
}

std::string LoadDropRule::rate_text(std::int64_t seed, const ObjectKey& key) {
  return std::to_string(seed) + ":" + key.chunk_hash_hex() + ":" + key.model_name() + ":" +
         std::to_string(key.kv_rank()) + ":" + std::to_string(key.object_group_id()) + ":" +
         key.cache_salt();
}

std::uint64_t LoadDropRule::rate_digest(std::int64_t seed, const ObjectKey& key) {
  const std::string text = rate_text(seed, key);
  std::uint8_t out[8];
  // Debian's libb2 orders the arguments (out, in, key, outlen, inlen, keylen); an 8-byte
  // digest length is BLAKE2b-64 (digest_size=8 in hashlib), not a truncated BLAKE2b-512.
  if (blake2b(out, text.data(), nullptr, sizeof out, text.size(), 0) != 0) {
    throw std::runtime_error("blake2b failed for '" + text + "'");
  }
  std::uint64_t v = 0;
  for (std::uint8_t b : out) v = (v << 8) | b;  // big-endian
  return v;
}

std::uint64_t LoadDropRule::rate_bucket(std::int64_t seed, const ObjectKey& key) {
  return rate_digest(seed, key) % 1'000'000ULL;
}

std::int64_t LoadDropRule::rate_threshold() const {
  return static_cast<std::int64_t>(rate * 1'000'000);  // truncation, as Python's int()
}

bool LoadDropRule::drops_by_rate(const ObjectKey& key) const {
  if (!(rate > 0.0)) return false;
  return static_cast<std::int64_t>(rate_bucket(seed, key)) < rate_threshold();
}

std::set<std::size_t> LoadDropRule::ratio_positions(std::size_t n) const {
  std::set<std::size_t> out;
  if (n == 0) return out;
  for (double r : gap_tail_ratios) {
    std::int64_t pos = round_half_even((1.0 - r) * static_cast<double>(n - 1));
    if (pos >= 0) out.insert(static_cast<std::size_t>(pos));
  }
  return out;
}

bool LoadDropRule::drops(const std::vector<ObjectKey>& keys, std::size_t i) const {
  if (i >= keys.size()) return false;
  if (ratio_positions(keys.size()).count(i)) return true;
  if (std::find(gap_indices.begin(), gap_indices.end(), i) != gap_indices.end()) return true;
  if (std::find(drop_chunk_hashes.begin(), drop_chunk_hashes.end(), keys[i].chunk_hash()) !=
      drop_chunk_hashes.end()) {
    return true;
  }
  return drops_by_rate(keys[i]);
}

std::vector<std::size_t> LoadDropRule::dropped_positions(const std::vector<ObjectKey>& keys) const {
  std::vector<std::size_t> out;
  if (!active()) return out;
  const std::set<std::size_t> ratios = ratio_positions(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    bool dropped = ratios.count(i) ||
                   std::find(gap_indices.begin(), gap_indices.end(), i) != gap_indices.end() ||
                   std::find(drop_chunk_hashes.begin(), drop_chunk_hashes.end(),
                             keys[i].chunk_hash()) != drop_chunk_hashes.end() ||
                   drops_by_rate(keys[i]);
    if (dropped) out.push_back(i);
  }
  return out;
}

bool LoadDropRule::active() const {
  return rate > 0.0 || !gap_indices.empty() || !gap_tail_ratios.empty() ||
         !drop_chunk_hashes.empty();
}

}  // namespace lmcache::fault
