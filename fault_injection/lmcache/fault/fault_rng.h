// File: lmcache/fault/fault_rng.h
//
// FaultRng is the single seeded source of randomness behind every fault decision. It is a
// counter-based generator (splitmix64 over (seed, site, index)), not a sequential one: a
// decision is a pure function of the seed, the name of the decision site and an index that the
// site derives from what it is deciding about. Decisions made on different threads (the
// wrapper's loop, a serde worker, an adapter's pump) therefore do not depend on how those
// threads interleave, and one seed reproduces the same fault plan run after run.
//
// Sites derive their index from content, not from call order, wherever the call order is
// timing-dependent: OccurrenceCounter turns "the n-th time this batch of keys (or these bytes)
// was seen by this site" into an index, which is deterministic as long as the same content is
// never in flight twice at once (the campaign driver guarantees that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::fault {

// splitmix64()
//
// The splitmix64 finaliser: a bijective 64-bit mixer.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Fnv1a64
//
// Incremental 64-bit FNV-1a, used for stable digests of names, keys and bytes (std::hash is
// not guaranteed stable across builds).
class Fnv1a64 {
 public:
  Fnv1a64& add(std::span<const std::byte> bytes);
  Fnv1a64& add(std::string_view text);
  Fnv1a64& add_u64(std::uint64_t v);
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0xcbf29ce484222325ULL;
};

// digest_keys()
//
// A stable digest of every field of every key, in order.
std::uint64_t digest_keys(const std::vector<ObjectKey>& keys);

// digest_objects()
//
// A stable digest of the logical bytes (obj->bytes()) of every object, in order; null objects
// count as empty.
std::uint64_t digest_objects(const std::vector<MemoryObjPtr>& objects);

class FaultRng {
 public:
  explicit FaultRng(std::uint64_t seed) : seed_(seed) {}

  std::uint64_t seed() const { return seed_; }

  // draw()
  //
  // 64 random bits that depend only on (seed, site, a, b).
  std::uint64_t draw(std::string_view site, std::uint64_t a, std::uint64_t b = 0) const;

  // uniform()
  //
  // A double in [0, 1) from draw(site, a, b).
  double uniform(std::string_view site, std::uint64_t a, std::uint64_t b = 0) const;

  // chance()
  //
  // True with probability p (p <= 0: never; p >= 1: always).
  bool chance(double p, std::string_view site, std::uint64_t a, std::uint64_t b = 0) const;

  // below()
  //
  // An integer in [0, n); 0 when n is 0.
  std::uint64_t below(std::uint64_t n, std::string_view site, std::uint64_t a,
                      std::uint64_t b = 0) const;

 private:
  std::uint64_t seed_;
};

// OccurrenceCounter
//
// Turns content into a deterministic decision index: next(stream, digest) returns
// splitmix64(digest) mixed with how many times (stream, digest) was seen before. Thread-safe.
class OccurrenceCounter {
 public:
  std::uint64_t next(std::uint64_t stream, std::uint64_t digest);

 private:
  std::mutex mu_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> seen_;  // guarded by mu_
};

}  // namespace lmcache::fault
