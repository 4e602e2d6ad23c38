// The keys the conformance kit stores its probe objects under (part of lmcache::conformance_api,
// which the reference descriptors need too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lmcache/core/object_key.h"

namespace lmcache::conformance {

// probe_key() / probe_keys()
//
// The keys the kit stores its probe objects under: probe_key(i)'s chunk hash is the 8-byte
// big-endian `i` (model "conformance-probe", rank 0, group 0, no cache_salt); probe_keys(n) is
// probe_key(0) .. probe_key(n - 1). Serdes get the same key in both directions unless a property
// deliberately moves a frame to another key.
ObjectKey probe_key(std::uint64_t i = 0);
std::vector<ObjectKey> probe_keys(std::size_t n);

}  // namespace lmcache::conformance
