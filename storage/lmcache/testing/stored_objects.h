// Objects the storage tests store, and the check that one loads back.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::storage_testing {

// fp8_exact_bf16_object()
//
// A bfloat16 object of `elements` values that fp8 e4m3fn holds exactly, so that a store through
// the fp8 serde loads back bit for bit; `seed` rotates the pattern (seeds 0 to 5 give distinct
// objects).
MemoryObjPtr fp8_exact_bf16_object(std::size_t elements, std::size_t seed = 0);

// store_fp8_exact_sample()
//
// Stores fp8_exact_bf16_object(elements) through `a` under a key with every field set, and waits
// for its result (nullopt: none within 20 s).
struct StoredSample {
  MemoryObjPtr object;
  ObjectKey key;
  std::optional<L2StoreResult> stored;
};
StoredSample store_fp8_exact_sample(L2AdapterInterface& a, std::size_t elements);

// loads_back()
//
// Loads `key` from `a` into an object of `want`'s layout. Empty when it is a hit holding
// exactly `want`'s bytes; otherwise what went wrong (no result within 20 s, a miss, other bytes).
std::string loads_back(L2AdapterInterface& a, const ObjectKey& key, const MemoryObj& want);

}  // namespace lmcache::storage_testing
