// File: connector_types.h
//
// The completion record of LMCache's native connectors, declared as LMCache declares it: in
// namespace lmcache::connector, under its own name, with its four public fields. This example
// stands in for a vendor whose connector includes LMCache's own headers (csrc/storage_backends/):
// the kit's headers must build beside these names untouched (the kit's bridge lives in
// lmcache::bridge and accepts any type of this shape).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmcache::connector {

struct Completion {
  std::uint64_t future_id = 0;
  bool ok = true;
  // get: one hit flag per key; exists / delete: 1 present (deleted) / 0 absent per key; set: empty.
  std::vector<std::uint8_t> result_bytes;
  std::string error;
};

}  // namespace lmcache::connector
