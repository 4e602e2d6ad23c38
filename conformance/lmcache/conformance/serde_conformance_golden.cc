// SerdeConformance.MatchesGoldenVectors: a serde of a type the project knows against the wire
// vectors the kit ships (internal/golden_vectors.h), frames made from the format definitions
// alone, independently of the reference's code. A vector applies when the reference, configured
// as the descriptor's (SerdeUnderTest::reference), reads its frame to its values and, where the
// frame is one exact byte string, writes it: so an fp8 serde meets the vectors of its own format
// and overflow mode, and an aesgcm serde those of its own master key. Where one applies, the serde
// must read the frame to the same values and write, for the same input under the same key, the
// same frame (or, where frames vary, one the reference reads back to those values).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
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

// The vector as this serde takes it: raw bytes in the first input dtype whose size divides their
// length (uint8 first when the serde takes it); nullopt when none does.
std::optional<GoldenVector> as_taken(const GoldenVector& v, const std::vector<DType>& dtypes) {
  const DType dtype = v.layout.dtypes().front();
  if (std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end()) return v;
  if (!v.raw_bytes) return std::nullopt;
  for (DType d : dtypes) {
    const std::size_t size = element_size(d);
    if (size > 0 && v.input.size() % size == 0) {
      GoldenVector g = v;
      g.layout = MemoryLayoutDesc::single({static_cast<std::int64_t>(v.input.size() / size)}, d);
      return g;
    }
  }
  return std::nullopt;
}

MemoryObjPtr input_of(const GoldenVector& v) {
  MemoryObjPtr src = make_object(v.layout);
  if (!v.input.empty()) std::memcpy(src->data(), v.input.data(), v.input.size());  // 0 B: no data
  return src;
}

ReadOutcome read_golden(Deserializer& deser, const GoldenVector& v,
                        const std::vector<std::byte>& frame) {
  GuardedObject buffer = serialized_buffer(frame, frame.size());
  return read_frame(deser, *buffer, v.layout, v.key);
}

// Empty when `decoded` holds the vector's values: raw bytes byte for byte, values element by
// element (any NaN equals any NaN: backends differ in NaN payloads, docs/fp8.md section 4).
std::string difference(const GoldenVector& v, const std::vector<std::byte>& decoded) {
  return v.raw_bytes ? first_byte_difference(v.decoded, decoded)
                     : decoded_difference(v.layout, v.decoded, decoded);
}

// Empty when the reference, as the descriptor configures it, reads and (for exact frames)
// writes the vector; else why the vector is another configuration's.
std::string why_not_applicable(const ReferenceSerde& ref, const GoldenVector& v) {
  DeserializerPtr deser = ref.make_deserializer();
  const ReadOutcome read = read_golden(*deser, v, v.frame);
  if (!read.accepted) return "the reference rejects it (" + read.error + ")";
  if (!difference(v, read.decoded).empty()) return "the reference reads it to other values";
  if (v.exact_frame && !v.decode_only && !ref.randomized) {
    SerializerPtr ser = ref.make_serializer();
    std::size_t est = 0;
    const SerializeOutcome out = serialize_at_estimate(*ser, *input_of(v), &est, v.key);
    if (!out.error.empty() || out.bytes != v.frame) return "the reference writes another frame";
  }
  return "";
}

// Empty when the serde reads the vector's frame to its values and writes, for its input, the
// same frame (or one the reference reads back); else the failure.
std::string check(const SerdeUnderTest& serde, const GoldenVector& v) {
  const ReferenceSerde& ref = serde.reference;
  const std::string at = " (" + v.name + ", input layout " + v.layout.to_string() + ")";
  DeserializerPtr deser = serde.make_deserializer();
  const ReadOutcome read = read_golden(*deser, v, v.frame);
  if (!read.accepted) return "rejected a golden frame: " + read.error + at;
  if (std::string d = difference(v, read.decoded); !d.empty()) {
    return "read a golden frame to other values than the format's: " + d + at;
  }
  if (v.decode_only) return "";
  SerializerPtr ser = serde.make_serializer();
  std::size_t est = 0;
  const SerializeOutcome out = serialize_at_estimate(*ser, *input_of(v), &est, v.key);
  if (!out.error.empty()) return out.error + at;
  if (v.exact_frame && !ref.randomized && !serde.integrity.randomized) {
    if (out.bytes == v.frame) return "";
    return "wrote another frame than the golden one for its input: " +
           first_byte_difference(v.frame, out.bytes) + at;
  }
  DeserializerPtr ref_deser = ref.make_deserializer();
  const ReadOutcome back = read_golden(*ref_deser, v, out.bytes);
  if (!back.accepted) {
    return "the reference " + ref.type + " rejects its frame of a golden input: " + back.error + at;
  }
  if (std::string d = difference(v, back.decoded); !d.empty()) {
    return "its frame of a golden input reads back to other values: " + d + at;
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
  std::size_t of_type = 0, applied = 0;
  std::string skipped;
  for (const GoldenVector& golden : golden_vectors()) {
    if (golden.type != ref.type) continue;
    ++of_type;
    const std::optional<GoldenVector> v = as_taken(golden, serde.input_dtypes);
    const std::string why =
        v ? why_not_applicable(ref, *v)
          : "no input dtype of the serde's holds its " + golden.layout.to_string();
    if (!why.empty()) {
      if (skipped.empty()) skipped = golden.name + ": " + why;
      continue;
    }
    ++applied;
    if (std::string failure = check(serde, *v); !failure.empty()) return Verdict::fail(failure);
  }
  if (of_type == 0) {
    return Verdict::not_supported("the kit ships no golden vectors of type '" + ref.type +
                                  "' (it has checksum, aesgcm, encrypt, fp8, chain and lmcr)");
  }
  if (applied == 0) {
    return Verdict::not_supported(
        "none of the " + std::to_string(of_type) + " golden vectors of type '" + ref.type +
        "' is this configuration's (a keyed type needs the vectors' master key, docs/serde.md); "
        "first: " +
        skipped);
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::serde_properties
