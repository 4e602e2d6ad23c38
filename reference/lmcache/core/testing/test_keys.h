// File: lmcache/core/testing/test_keys.h
//
// Keys for tests that call serdes directly (not installed). Serdes take the ObjectKey an object
// is stored under (docs/serde.md); a test that does not care which key passes these, the same
// one to both directions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lmcache/core/object_key.h"

namespace lmcache {

// test_key()
//
// A valid key whose 8-byte chunk hash encodes `i` (distinct `i` give distinct keys).
inline ObjectKey test_key(std::uint64_t i = 0) {
  std::string hash(8, '\0');
  for (int b = 0; b < 8; ++b) hash[7 - b] = static_cast<char>((i >> (8 * b)) & 0xff);
  return ObjectKey(std::move(hash), "test-model", 0, 0, "");
}

// test_keys()
//
// n distinct keys: test_key(0) .. test_key(n - 1), for the processor's per-object key list.
inline std::vector<ObjectKey> test_keys(std::size_t n) {
  std::vector<ObjectKey> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) keys.push_back(test_key(i));
  return keys;
}

}  // namespace lmcache
