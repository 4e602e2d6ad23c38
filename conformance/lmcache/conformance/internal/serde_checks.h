// File: lmcache/conformance/internal/serde_checks.h
//
// The building blocks of the serde checks (verify.cc, verify_multi.cc and the serde suite):
// running a serializer into a guarded buffer, estimates that report a throw, serialized
// buffers narrowed with junk past their count, and the lossiness comparison. Internal to the
// suites library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
// Every check answers in gtest's assertion vocabulary (here for whoever uses this namespace).
using ::testing::AssertionFailure;
using ::testing::AssertionResult;
using ::testing::AssertionSuccess;

// " [input layout ...]", appended to every serde failure message; with the key when it is not
// probe_key(0).
std::string where(const MemoryLayoutDesc& layout);
std::string where(const MemoryLayoutDesc& layout, const ObjectKey& key);

// The text of a caught exception.
std::string what_of(std::exception_ptr e);

// Runs `fn`; the text of whatever it throws, or nullopt.
template <class Fn>
std::optional<std::string> throws(Fn&& fn) {
  try {
    fn();
  } catch (...) {
    return what_of(std::current_exception());
  }
  return std::nullopt;
}

// How a call that must throw std::invalid_argument behaved: empty when it did.
template <class Fn>
std::string expect_invalid_argument(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument&) {
    return {};
  } catch (const std::exception& e) {
    return std::string("threw a different exception instead of std::invalid_argument: ") + e.what();
  } catch (...) {
    return "threw a non-standard exception instead of std::invalid_argument";
  }
  return "did not throw";
}

struct SerializeOutcome {
  std::string error;  // empty on success
  std::size_t count = 0;
  std::vector<std::byte> bytes;  // the first `count` bytes written
};

// Serializes `src` under `key` into a fresh guarded buffer of `physical` bytes.
SerializeOutcome run_serialize(Serializer& s, const MemoryObj& src, std::size_t physical,
                               std::uint64_t fill_seed = 7, const ObjectKey& key = probe_key());

// The estimate, or nullopt with *error saying what it threw.
std::optional<std::size_t> estimate(const Serializer& s, const MemoryLayoutDesc& layout,
                                    std::string* error);

// Estimates `src`'s layout (into *est), then serializes into a buffer of exactly that size;
// an estimate that throws is reported in the outcome's error like a failing serialize.
SerializeOutcome serialize_at_estimate(Serializer& s, const MemoryObj& src, std::size_t* est,
                                       const ObjectKey& key = probe_key());

// A byte buffer holding `bytes`, physical size `physical` (>= bytes.size()), narrowed to the
// byte count as a processor narrows a temp; the bytes past the count are junk.
GuardedObject serialized_buffer(const std::vector<std::byte>& bytes, std::size_t physical);

// How many junk bytes a serialized buffer of this layout gets past its count (1-61, fixed per
// layout so that a failure replays).
std::size_t junk_slack(const MemoryLayoutDesc& layout);

// A copy of `src`'s layout bytes in a fresh object with `slack` bytes of junk (from
// `junk_seed`) past the layout.
MemoryObjPtr clone_object(const MemoryObj& src, std::size_t slack = 0, std::uint64_t junk_seed = 0);

// "first difference at byte i (..)" or "lengths differ: ..", empty when equal.
std::string first_byte_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b);

// Compares a round trip's output `got` with the input `src` per `loss`.
::testing::AssertionResult compare_round_trip(const Lossiness& loss, const MemoryObj& src,
                                              const MemoryObj& got, QualityReport* quality);

// Whether a multi serializer must reject a null in `slot`.
bool slot_required(const SerdeUnderTest& serde, std::size_t slot);

}  // namespace lmcache::conformance_internal
