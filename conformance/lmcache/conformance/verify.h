// File: lmcache/conformance/verify.h
//
// Verify* helpers: single-call checks of one serde contract on one input, returning
// ::testing::AssertionResult (abseil's VerifyTypeImplementsAbslHashCorrectly style), so they
// read naturally in a vendor's own tests:
//
//   EXPECT_TRUE(verify_serde_round_trip(MySerde(), *input));
//
// On failure the message names the contract, the input layout and the first offending byte or
// element. The conformance suites run these same helpers over generated inputs.
//
// Each helper builds fresh serializer / deserializer instances through the descriptor, so the
// descriptor's factories must be callable repeatedly. Both directions get `key` (default
// probe_key(0)): a key-aware serde is checked under whatever key a caller passes. Buffers are
// GuardedObjects (buffers.h): a write outside a buffer is reported, never silently absorbed.
//
// Failure modes and the helper that catches each (cf. abseil's documented Bad1..Bad4 types):
//   - output differs between two calls or two instances, or    verify_serialize_deterministic
//     depends on junk past the source's layout
//   - output differs when one instance serves several threads  verify_serialize_thread_safe,
//     (shared scratch state)                                   verify_concurrent_serialize
//   - a round trip differs when instances serve several threads verify_concurrent_round_trips
//   - serialize() returns more than the estimate               verify_estimate_is_upper_bound
//   - the estimate changes after serializing other data verify_estimate_depends_on_layout_only
//   - a round trip changes data beyond the declared bound      verify_serde_round_trip
//   - bytes past the returned count (or the source) change     verify_bytes_past_count_untouched
//   - a short destination is overrun / not rejected            verify_short_buffer_rejected
//   - deserialize() writes outside its destination verify_deserialize_writes_only_destination
//   - a truncated source is accepted                           verify_short_source_rejected
//   - an undeclared dtype is accepted                          verify_unsupported_input_rejected
//   - a multi-serde breaks the None-slot rules                 verify_multi_none_slot_rules
//   - the length-1 bridge differs from the direct call         verify_bridge_equivalence
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/probe_keys.h"

namespace lmcache::conformance {

// QualityReport
//
// The largest error a lossy round trip showed relative to the declared soft bound.
// `exceeded_soft` means some element was beyond the soft bound (but within the hard one).
struct QualityReport {
  bool exceeded_soft = false;
  double worst_ratio = 0.0;  // error / soft bound, of the worst element
  std::string worst;         // which element, with its values

  // Keeps the worse of the two reports.
  void Merge(const QualityReport& other);
};

::testing::AssertionResult verify_serialize_deterministic(const SerdeUnderTest& serde,
                                                          const MemoryObj& src,
                                                          const ObjectKey& key = probe_key());

// `threads` threads share one serializer and serialize `src` concurrently, twice each.
::testing::AssertionResult verify_serialize_thread_safe(const SerdeUnderTest& serde,
                                                        const MemoryObj& src, int threads = 4);

::testing::AssertionResult verify_estimate_is_upper_bound(const SerdeUnderTest& serde,
                                                          const MemoryObj& src,
                                                          const ObjectKey& key = probe_key());

// `a` and `b` must share a layout; the estimate for it must not move when the serializer
// serializes either, and must match a fresh instance's.
::testing::AssertionResult verify_estimate_depends_on_layout_only(
    const SerdeUnderTest& serde, const MemoryObj& a, const MemoryObj& b,
    const ObjectKey& key = probe_key());

// Serializes `src`, narrows the buffer to the count (as AsyncSerdeProcessor does), deserializes
// into a fresh object of the same layout and compares per the serde's Lossiness. `quality`, when
// given, receives how close a lossy serde came to its soft bound.
::testing::AssertionResult verify_serde_round_trip(const SerdeUnderTest& serde,
                                                   const MemoryObj& src,
                                                   QualityReport* quality = nullptr,
                                                   const ObjectKey& key = probe_key());

::testing::AssertionResult verify_bytes_past_count_untouched(const SerdeUnderTest& serde,
                                                             const MemoryObj& src,
                                                             const ObjectKey& key = probe_key());

// The destination is `shortfall` bytes (>= 1) shorter than what serialize() writes for `src`
// (clamped to an empty buffer). Succeeds trivially when `src` serializes to 0 bytes.
::testing::AssertionResult verify_short_buffer_rejected(const SerdeUnderTest& serde,
                                                        const MemoryObj& src, std::size_t shortfall,
                                                        const ObjectKey& key = probe_key());

::testing::AssertionResult verify_deserialize_writes_only_destination(
    const SerdeUnderTest& serde, const MemoryObj& src, const ObjectKey& key = probe_key());

// The source handed to deserialize() is `shortfall` bytes shorter than what serialize() wrote:
// once as a buffer of exactly that size, once narrowed (size() short) in a buffer that still
// holds every serialized byte.
::testing::AssertionResult verify_short_source_rejected(const SerdeUnderTest& serde,
                                                        const MemoryObj& src, std::size_t shortfall,
                                                        const ObjectKey& key = probe_key());

// `src` has at least one group whose dtype the serde does not declare.
::testing::AssertionResult verify_unsupported_input_rejected(const SerdeUnderTest& serde,
                                                             const MemoryObj& src,
                                                             const ObjectKey& key = probe_key());

::testing::AssertionResult verify_multi_none_slot_rules(const SerdeUnderTest& serde,
                                                        const MemoryObj& src,
                                                        const ObjectKey& key = probe_key());

// Requires a group_size() == 1 multi serde (the bridge).
::testing::AssertionResult verify_bridge_equivalence(const SerdeUnderTest& serde,
                                                     const MemoryObj& src,
                                                     const ObjectKey& key = probe_key());

// verify_concurrent_serialize()
//
// One serializer is shared by one thread per input; the threads serialize their own input at
// the same time, `rounds` times each, and every output must be what a fresh instance gives for
// that input on one thread. Inputs of different layouts find shared scratch state. Input i is
// serialized under keys[i] (probe_key(i) when `keys` is shorter): keys with other salts find
// per-tenant state shared without a lock.
::testing::AssertionResult verify_concurrent_serialize(const SerdeUnderTest& serde,
                                                       std::span<const MemoryObjPtr> inputs,
                                                       int rounds = 2,
                                                       std::span<const ObjectKey> keys = {});

// verify_concurrent_round_trips()
//
// One serializer and one deserializer are shared by one thread per input; each thread
// serializes its input and deserializes the result, `rounds` times, at the same time as the
// others. Every serialized buffer and every decoded object must equal, byte for byte, what
// fresh instances give on one thread (a randomized serde's frames are not compared: each must
// decode, on the shared deserializer and on a fresh one). Input i goes under keys[i]
// (probe_key(i) when `keys` is shorter).
::testing::AssertionResult verify_concurrent_round_trips(const SerdeUnderTest& serde,
                                                         std::span<const MemoryObjPtr> inputs,
                                                         int rounds = 2,
                                                         std::span<const ObjectKey> keys = {});

// make_multi_serializer() / make_multi_deserializer()
//
// The descriptor's multi factories, or the reference bridges over its single pair.
MultiSerializerPtr make_multi_serializer(const SerdeUnderTest& serde);
MultiDeserializerPtr make_multi_deserializer(const SerdeUnderTest& serde);

}  // namespace lmcache::conformance
