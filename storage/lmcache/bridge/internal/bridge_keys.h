// File: lmcache/bridge/internal/bridge_keys.h
//
// BridgeKeys: what the bridge remembers per key, client-side: the keys it stored (their size
// and the store epoch that published them; the usage is made of these), the keys it hides
// (tombstones, counted: one per failed store or unconfirmed delete), and the lookup locks
// (counted per hit). Plain bookkeeping with no lock of its own: the bridge holds its mutex
// around every call, and turns the returned changes into usage records and listener calls.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "lmcache/core/object_key.h"

namespace lmcache::bridge_internal {

class BridgeKeys {
 public:
  // Keys with their sizes, as the UsageTracker and the listeners take them.
  struct Sized {
    std::vector<ObjectKey> keys;
    std::vector<std::uint64_t> sizes;
    void add(const ObjectKey& key, std::uint64_t size) {
      keys.push_back(key);
      sizes.push_back(size);
    }
    bool empty() const { return keys.empty(); }
  };

  // The number of stores published so far; a probe remembers it at submit.
  std::uint64_t epoch() const { return epoch_; }

  // publish_store()
  //
  // A store of keys[i] with sizes[i] succeeded (keys distinct): a new epoch; the keys are known
  // with their sizes and no longer tombstoned. *stored gets the keys new to the usage (or
  // stored with another size), *replaced the old sizes of the resized ones.
  void publish_store(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes,
                     Sized* stored, Sized* replaced);

  // forget()
  //
  // Drops `keys` from the known set; returns the ones that were known, with their sizes.
  Sized forget(const std::vector<ObjectKey>& keys);

  // forget_if_stale()
  //
  // A probe submitted at `probe_epoch` found `key` missing. If the key's store was published at
  // or before that epoch, the probe must have seen it: the key is gone from the store (server
  // restart, eviction, another client), and is forgotten. Returns what was forgotten.
  Sized forget_if_stale(const ObjectKey& key, std::uint64_t probe_epoch);

  std::optional<std::uint64_t> known_size(const ObjectKey& key) const;
  bool is_known(const ObjectKey& key) const { return known_.count(key) != 0; }
  std::size_t known_count() const { return known_.size(); }

  // Tombstones: tombstone() adds one count; untombstone() takes one off (absent: ignored).
  void tombstone(const ObjectKey& key) { ++tombstones_[key]; }
  void untombstone(const ObjectKey& key);
  bool tombstoned(const ObjectKey& key) const { return tombstones_.count(key) != 0; }
  std::size_t tombstoned_count() const { return tombstones_.size(); }

  // Locks: lock() adds one count; unlock() takes one off (absent: ignored).
  void lock(const ObjectKey& key) { ++locks_[key]; }
  void unlock(const ObjectKey& key);
  std::uint64_t lock_count(const ObjectKey& key) const;
  std::size_t locked_count() const { return locks_.size(); }

 private:
  struct Known {
    std::uint64_t size = 0;
    std::uint64_t epoch = 0;
  };
  std::unordered_map<ObjectKey, Known> known_;
  std::unordered_map<ObjectKey, std::uint64_t> tombstones_;
  std::unordered_map<ObjectKey, std::uint64_t> locks_;
  std::uint64_t epoch_ = 0;
};

}  // namespace lmcache::bridge_internal
