// File: lmcache/fault/internal/campaign_workload.h
//
// Internal to the campaign (lmcache/fault/campaign.cc): the workload side. The campaign's keys
// (three layout classes, seeded source data, and the bytes a fault-free round trip through the
// serde gives back), the model of what the stack should hold, and the seeded choice of the
// next operation. Everything random here comes from one std::mt19937_64 seeded by the
// campaign's seed, drawn in a fixed order on the driver thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::fault_internal {

enum class OpKind : std::uint8_t { kStore, kLoad, kLookup, kDelete };

// "store", "load", "lookup", "delete".
const char* op_name(OpKind kind);

// Three layouts: one bf16 group, a mixed fp16 + fp32 pair of groups, and an odd fp32 count.
inline constexpr int kLayoutClasses = 3;
MemoryLayoutDesc layout_for_class(int layout_class);

// "[1,5,9]": key indexes as a violation message shows them.
std::string keys_text(const std::vector<std::size_t>& key_indexes);

// One campaign key and what a fault-free round trip of its source gives back.
struct KeyInfo {
  ObjectKey key;
  int layout_class = 0;
  std::vector<std::byte> source;
  std::vector<std::byte> expected;
  std::size_t serialized_bytes = 0;
};

// What the stack should hold for a key, as the campaign's model says.
struct KeyState {
  bool present = false;
  bool poisoned = false;
  bool last_store_failed = false;
  // A real storage fault may have made its object unreadable (a file damaged): a load miss is
  // explained, wrong bytes are not.
  bool may_be_lost = false;
  // A real storage fault may have removed it (a server restarted empty, a file deleted): a
  // load or lookup miss is explained, and once one misses it outside any other fault the
  // model learns that it is absent.
  bool may_be_gone = false;
};

class Workload {
 public:
  Workload(std::uint64_t seed, std::size_t key_count, std::size_t max_batch);

  // prepare_keys()
  //
  // Makes the keys and their expected bytes through a fault-free processor built from
  // `serde_config`. Throws std::runtime_error when that serde fails.
  void prepare_keys(const Json& serde_config);

  std::size_t size() const { return keys_.size(); }
  const KeyInfo& key(std::size_t i) const { return keys_.at(i); }
  // The largest temp the wrapper takes from L1 for one key (the serde's estimate of the largest
  // layout), once prepare_keys() ran.
  std::size_t largest_temp_bytes() const { return largest_temp_bytes_; }
  // The index of `key`, or nullopt for a key that is not the campaign's.
  std::optional<std::size_t> index_of(const ObjectKey& key) const;

  // below() / uniform01()
  //
  // The next draws of the workload's generator: uniform in [0, n) (0 for n == 0), in [0, 1).
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

  struct NextOp {
    OpKind kind;
    std::vector<std::size_t> key_indexes;
  };

  // next_op()
  //
  // The kind and keys of the next operation: one layout class, keys no task in flight owns
  // (`owned`), stores on absent keys, loads and deletes mostly on present ones (`model`), at
  // most max_batch keys. nullopt when the chosen pool is empty (no operation this time).
  std::optional<NextOp> next_op(const std::vector<KeyState>& model,
                                const std::function<bool(std::size_t)>& owned);

 private:
  const std::uint64_t seed_;
  const std::size_t key_count_;
  const std::size_t max_batch_;
  std::size_t largest_temp_bytes_ = 0;
  std::mt19937_64 rng_;
  std::vector<KeyInfo> keys_;
  std::vector<std::vector<std::size_t>> keys_by_class_;
  std::unordered_map<ObjectKey, std::size_t> key_index_;
};

}  // namespace lmcache::fault_internal
