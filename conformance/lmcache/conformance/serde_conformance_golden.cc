// SerdeConformance.MatchesGoldenVectors: a serde of a type the project knows against the wire
// vectors the kit ships (internal/golden_vectors.h), frames made from the format definitions
// alone, independently of the reference's code. A vector applies when the reference, configured
// as the descriptor's (SerdeUnderTest::reference), reads its frame to its values and, where the
// frame is one exact byte string, writes it: so an fp8 serde meets the vectors of its own format
// and overflow mode, and an aesgcm serde those of its own master key. Where one applies, the serde
// must read the frame to the same values and write, for the same input under the same key, the
// same frame (or, where frames vary, one the reference reads back to those values).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "lmcache/conformance/internal/golden_vectors.h"
#include "lmcache/conformance/internal/reference_checks.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/internal/serde_properties.h"
#include "lmcache/conformance/plain_objects.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

MemoryObjPtr input_of(const GoldenVector& v) {
  MemoryObjPtr src = make_object(v.layout);
  std::memcpy(src->data(), v.input.data(), v.input.size());
  return src;
}

ReadOutcome read_golden(Deserializer& deser, const GoldenVector& v,
                        const std::vector<std::byte>& frame) {
  GuardedObject buffer = serialized_buffer(frame, frame.size());
  return read_frame(deser, *buffer, v.layout, v.key);
}

// Empty when the reference, as the descriptor configures it, reads and (for exact frames)
// writes the vector; else why the vector is another configuration's.
std::string why_not_applicable(const ReferenceSerde& ref, const GoldenVector& v) {
  DeserializerPtr deser = ref.make_deserializer();
  const ReadOutcome read = read_golden(*deser, v, v.frame);
  if (!read.accepted) return "the reference rejects it (" + read.error + ")";
  if (!decoded_difference(v.layout, v.decoded, read.decoded).empty()) {
    return "the reference reads it to other values";
  }
  if (v.exact_frame && !ref.randomized) {
    SerializerPtr ser = ref.make_serializer();
    std::size_t est = 0;
    const SerializeOutcome out = serialize_at_estimate(*ser, *input_of(v), &est, v.key);
    if (!out.error.empty() || out.bytes != v.frame) return "the reference writes another frame";
  }
  return "";
}

}  // namespace

Verdict MatchesGoldenVectors(const SerdeUnderTest& serde) {
  const ReferenceSerde& ref = serde.reference;
  if (!ref.make_serializer || !ref.make_deserializer) {
    return Verdict::not_supported(
        "the descriptor names no reference implementation (SerdeUnderTest::reference)");
  }
  std::vector<const GoldenVector*> of_type;
  for (const GoldenVector& v : golden_vectors()) {
    if (v.type == ref.type) of_type.push_back(&v);
  }
  if (of_type.empty()) {
    return Verdict::not_supported("the kit ships no golden vectors of type '" + ref.type +
                                  "' (it has checksum, aesgcm, encrypt, fp8, chain and lmcr)");
  }
  const bool randomized = ref.randomized || serde.integrity.randomized;
  std::size_t applied = 0;
  std::string skipped;
  for (const GoldenVector* v : of_type) {
    const bool takes_dtype = std::find(serde.input_dtypes.begin(), serde.input_dtypes.end(),
                                       v->layout.dtypes().front()) != serde.input_dtypes.end();
    const std::string why =
        takes_dtype ? why_not_applicable(ref, *v) : "its input dtype is not in input_dtypes";
    if (!why.empty()) {
      if (skipped.empty()) skipped = v->name + ": " + why;
      continue;
    }
    ++applied;
    const std::string at = " (" + v->name + ")";
    DeserializerPtr deser = serde.make_deserializer();
    const ReadOutcome read = read_golden(*deser, *v, v->frame);
    if (!read.accepted) return Verdict::fail("rejected a golden frame: " + read.error + at);
    if (std::string d = decoded_difference(v->layout, v->decoded, read.decoded); !d.empty()) {
      return Verdict::fail("read a golden frame to other values than the format's: " + d + at);
    }
    SerializerPtr ser = serde.make_serializer();
    std::size_t est = 0;
    const SerializeOutcome out = serialize_at_estimate(*ser, *input_of(*v), &est, v->key);
    if (!out.error.empty()) return Verdict::fail(out.error + at);
    if (v->exact_frame && !randomized) {
      if (out.bytes != v->frame) {
        return Verdict::fail("wrote another frame than the golden one for its input: " +
                             first_byte_difference(v->frame, out.bytes) + at);
      }
      continue;
    }
    DeserializerPtr ref_deser = ref.make_deserializer();
    const ReadOutcome back = read_golden(*ref_deser, *v, out.bytes);
    if (!back.accepted) {
      return Verdict::fail("the reference " + ref.type +
                           " rejects its frame of a golden input: " + back.error + at);
    }
    if (std::string d = decoded_difference(v->layout, v->decoded, back.decoded); !d.empty()) {
      return Verdict::fail("its frame of a golden input reads back to other values: " + d + at);
    }
  }
  if (applied == 0) {
    return Verdict::not_supported(
        "none of the " + std::to_string(of_type.size()) + " golden vectors of type '" + ref.type +
        "' is this configuration's (a keyed type needs the vectors' master key, docs/serde.md); "
        "first: " +
        skipped);
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::serde_properties
