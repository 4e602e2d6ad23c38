// File: lmcache/conformance/internal/reference_checks.h
//
// The building blocks of the differential properties (MatchesReference of the serde and
// processor suites): reading a frame with one deserializer, comparing decoded values (NaNs as
// NaNs), sampling a corruption plan, and requiring an implementation and its reference to give
// one verdict on one frame. Internal to the suites library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lmcache/conformance/corruption.h"
#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types

// ReadOutcome: what one deserialize() of a frame gave.
struct ReadOutcome {
  bool accepted = false;
  std::string error;               // what it threw, when rejected
  std::vector<std::byte> decoded;  // the destination's layout bytes, when accepted
};

// read_frame()
//
// Deserializes `frame` under `key` into a fresh object of `layout`.
ReadOutcome read_frame(Deserializer& deser, const MemoryObj& frame, const MemoryLayoutDesc& layout,
                       const ObjectKey& key);

// decoded_difference()
//
// Empty when the layout bytes `a` and `b` hold the same values element by element (any NaN
// equals any NaN, as PyTorch's casts leave NaN payloads open); else the first difference.
std::string decoded_difference(const MemoryLayoutDesc& layout, const std::vector<std::byte>& a,
                               const std::vector<std::byte>& b);

// append_sample()
//
// Appends `part` to `plan`, at most `limit` of its items (evenly spread when it is longer,
// starting at an offset from `seed`): a corruption plan's cost bounded per shape.
void append_sample(std::vector<Corruption>& plan, const std::vector<Corruption>& part,
                   std::size_t limit, std::uint64_t seed);

// require_same_verdict()
//
// Fails the current case unless `mine` and `reference` both reject `frame` under `key`, or both
// accept it with the same values. `what` says which frame this is, `type` names the reference.
void require_same_verdict(Deserializer& mine, Deserializer& reference, const MemoryObj& frame,
                          const MemoryLayoutDesc& layout, const ObjectKey& key,
                          const std::string& type, const std::string& what);

}  // namespace lmcache::conformance_internal
