// SerdeConformance.MatchesReference: a serde of a type the project knows (SerdeUnderTest::
// reference) against the reference implementation of that type, over the whole size and key
// domain: the same frames (byte for byte when neither side is randomized), each side reading
// the other's frames to the same values, and the same verdict on every corrupted frame (bit
// flips, truncations, rewritten ranges, junk tails, frames moved to keys that differ in one
// field). What the reference accepts the serde must accept, and the reverse: a vendor frame
// LMCache cannot read, or a corruption one side lets through, is a Fail naming the case.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/corruption.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/reference_checks.h"
#include "lmcache/conformance/internal/sealed_corruption.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/internal/serde_properties.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

Verdict MatchesReference(const SerdeUnderTest& serde) {
  const ReferenceSerde& ref = serde.reference;
  if (!ref.make_serializer || !ref.make_deserializer) {
    return Verdict::not_supported(
        "the descriptor names no reference implementation (SerdeUnderTest::reference)");
  }
  const ValueSpec spec = value_spec_for(serde);
  const bool randomized = ref.randomized || serde.integrity.randomized;
  return run_rc_property(rc_id("MatchesReference", serde), {.max_success = 12}, [&] {
    SerdeCase c;
    c.layout = *gen_layout_of_any_size(serde.input_dtypes, current_profile().max_chunk_bytes);
    c.data_seed = *gen_seed();
    c.slack = *uniform_in_range<std::size_t>(0, 64);
    c.key = *gen_object_key();
    MemoryObjPtr src = make_source(c, spec);
    const MemoryLayoutDesc& layout = src->layout();
    const std::string at = where(layout, c.key);
    SerializerPtr mine = serde.make_serializer();
    SerializerPtr theirs = ref.make_serializer();
    std::size_t est_mine = 0, est_ref = 0;
    SerializeOutcome frame = serialize_at_estimate(*mine, *src, &est_mine, c.key);
    require(frame.error.empty(), frame.error + at);
    SerializeOutcome ref_frame = serialize_at_estimate(*theirs, *src, &est_ref, c.key);
    require(ref_frame.error.empty(), "the reference " + ref.type + ": " + ref_frame.error + at);
    require(frame.count == ref_frame.count, "serialize() wrote " + std::to_string(frame.count) +
                                                " bytes where the reference " + ref.type +
                                                " writes " + std::to_string(ref_frame.count) + at);
    if (!randomized) {
      require(frame.bytes == ref_frame.bytes,
              "the frame differs from the reference " + ref.type +
                  "'s: " + first_byte_difference(ref_frame.bytes, frame.bytes) + at);
    }
    DeserializerPtr my_deser = serde.make_deserializer();
    DeserializerPtr ref_deser = ref.make_deserializer();
    GuardedObject my_frame = serialized_buffer(frame.bytes, est_mine + junk_slack(layout));
    GuardedObject their_frame = serialized_buffer(ref_frame.bytes, est_ref + junk_slack(layout));
    // Both readers over both frames: four decodes that must agree (NaNs as NaNs).
    const ReadOutcome want = read_frame(*ref_deser, *their_frame, layout, c.key);
    require(want.accepted,
            "the reference " + ref.type + " rejected its own frame: " + want.error + at);
    const struct {
      Deserializer* reader;
      const MemoryObj* frame;
      const char* what;
    } reads[] = {{ref_deser.get(), &*my_frame, "the reference reading this serde's frame"},
                 {my_deser.get(), &*their_frame, "this serde reading the reference's frame"},
                 {my_deser.get(), &*my_frame, "this serde reading its own frame"}};
    for (const auto& r : reads) {
      const ReadOutcome got = read_frame(*r.reader, *r.frame, layout, c.key);
      require(got.accepted, std::string(r.what) + " failed: " + got.error + at);
      if (std::string d = decoded_difference(layout, want.decoded, got.decoded); !d.empty()) {
        fail_case(std::string(r.what) + " decoded other values than the reference " + ref.type +
                  " does with its own frame: " + d + at);
      }
    }
    // Corruptions of this serde's frame (a frame LMCache may find in storage): both readers
    // must give one verdict, and one result when both accept.
    std::vector<Corruption> plan;
    const std::uint64_t seed = *gen_seed();
    for (auto part : {bit_flip_plan(frame.count, seed), truncation_plan(frame.count, seed),
                      range_plan(*my_frame, seed), tail_plan(seed)}) {
      append_sample(plan, part, frame.count <= kSweepBytes ? 256 : 48, seed);
    }
    CorruptibleCopy copy(*my_frame);
    for (const Corruption& k : plan) {
      copy.apply(k);
      require_same_verdict(*my_deser, *ref_deser, *copy.obj(), layout, c.key, ref.type,
                           describe(k));
      copy.restore();
    }
    // Edits behind the format's own checksums (LMCR's fields, descriptors and streams, each
    // with its CRCs re-sealed): the checks a reader makes past its CRCs give the reference's
    // verdict too. Header edits are refused before any inflating; large frames take a sample.
    const std::vector<SealedCorruption> sealed = sealed_corruption_plan(
        ref.type, std::span<const std::byte>(frame.bytes.data(), frame.bytes.size()), seed,
        frame.count <= kSweepBytes ? std::numeric_limits<std::size_t>::max() : 64);
    for (const SealedCorruption& edit : sealed) {
      ScopedPatches patched(*my_frame, edit.patches);
      require_same_verdict(*my_deser, *ref_deser, *my_frame, layout, c.key, ref.type,
                           edit.description);
    }
    // The frame read under keys that differ from its own in one field.
    for (KeyField field : kAllKeyFields) {
      const ObjectKey other = *gen_key_varied_in(c.key, field);
      require_same_verdict(*my_deser, *ref_deser, *my_frame, layout, other, ref.type,
                           std::string("the frame read under a key with another ") +
                               key_field_name(field) + " (" + other.to_string() + ")");
    }
  });
}

}  // namespace lmcache::conformance_internal::serde_properties
