// The Integrity* serde properties (docs/integrity.md): what an integrity / confidentiality serde
// claims in its descriptor (IntegrityClaims) about tampered, truncated, misplaced and foreign
// frames, and about its nonces. A claim not made makes its property NotSupported.
//
// "Fails" is deserialize() throwing: the object is then not claimed as loaded. Inputs are small
// (a few dozen elements) because the bit-flip and truncation properties try every bit and every
// length of the frame.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/serde_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// Whole-frame sweeps cost (frame bytes)^2; these bounds keep a case in milliseconds.
constexpr std::size_t kMaxElements = 24;
constexpr std::size_t kNonceSerializations = 100'000;

// A small source of a declared dtype, with the serde's kind of values.
MemoryObjPtr small_source(const SerdeUnderTest& serde) {
  const DType dtype = *rc::gen::elementOf(serde.input_dtypes);
  const auto n = *uniform_in_range<std::size_t>(1, kMaxElements);
  SerdeCase c{MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, dtype), *gen_seed()};
  return make_source(c, value_spec_for(serde));
}

// A key with an 8..32-byte chunk hash and the given salt.
ObjectKey key_with(std::string chunk_hash, std::string salt) {
  return ObjectKey(std::move(chunk_hash), "conformance-probe", 0, 0, std::move(salt));
}

std::string random_hash() {
  const auto n = *uniform_in_range<std::size_t>(8, 32);
  std::string h(n, '\0');
  fill_bytes(std::span(reinterpret_cast<std::byte*>(h.data()), n), *gen_seed());
  return h;
}

// serialize() into an estimate-sized buffer, narrowed to the count.
MemoryObjPtr frame_of(const SerdeUnderTest& serde, const MemoryObj& src, const ObjectKey& key) {
  SerializerPtr ser = serde.make_serializer();
  MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(src.layout())));
  frame->set_used_size(ser->serialize(src, *frame, key));
  return frame;
}

// A narrowed copy of the first `len` bytes of `frame`, optionally with one bit flipped.
MemoryObjPtr copy_of(const MemoryObj& frame, std::size_t len,
                     std::optional<std::size_t> flip = {}) {
  MemoryObjPtr out = make_object(byte_layout(len));
  if (len > 0) std::memcpy(out->data(), frame.data(), len);
  if (flip) out->data()[*flip / 8] ^= static_cast<std::byte>(1u << (*flip % 8));
  return out;
}

// True when deserialize() rejects the frame (throws).
bool rejects(Deserializer& deser, const MemoryObj& frame, const MemoryLayoutDesc& layout,
             const ObjectKey& key) {
  MemoryObjPtr dst = make_object(layout);
  try {
    deser.deserialize(frame, *dst, key);
  } catch (...) {
    return true;
  }
  return false;
}

// The frame deserializes under the same key (else the other checks prove nothing).
void require_round_trip(const SerdeUnderTest& serde, const MemoryObj& frame,
                        const MemoryLayoutDesc& layout, const ObjectKey& key) {
  require(!rejects(*serde.make_deserializer(), frame, layout, key),
          "an untouched frame was rejected under its own key");
}

}  // namespace

Verdict IntegrityBitFlipsDetected(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) {
    return Verdict::not_supported("the serde does not claim integrity.detects_corruption");
  }
  return run_rc_property(rc_id("IntegrityBitFlipsDetected", serde), {.max_success = 10}, [&] {
    MemoryObjPtr src = small_source(serde);
    const ObjectKey key = key_with(random_hash(), "");
    MemoryObjPtr frame = frame_of(serde, *src, key);
    require_round_trip(serde, *frame, src->layout(), key);
    DeserializerPtr deser = serde.make_deserializer();
    for (std::size_t bit = 0; bit < frame->size() * 8; ++bit) {
      if (!rejects(*deser, *copy_of(*frame, frame->size(), bit), src->layout(), key)) {
        fail_case("a frame of " + std::to_string(frame->size()) + " bytes with bit " +
                  std::to_string(bit % 8) + " of byte " + std::to_string(bit / 8) +
                  " flipped deserialized without error");
      }
    }
  });
}

Verdict IntegrityTruncationsDetected(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) {
    return Verdict::not_supported("the serde does not claim integrity.detects_corruption");
  }
  return run_rc_property(rc_id("IntegrityTruncationsDetected", serde), {.max_success = 10}, [&] {
    MemoryObjPtr src = small_source(serde);
    const ObjectKey key = key_with(random_hash(), "");
    MemoryObjPtr frame = frame_of(serde, *src, key);
    require_round_trip(serde, *frame, src->layout(), key);
    DeserializerPtr deser = serde.make_deserializer();
    for (std::size_t len = 0; len < frame->size(); ++len) {
      if (!rejects(*deser, *copy_of(*frame, len), src->layout(), key)) {
        fail_case("the frame truncated to " + std::to_string(len) + " of " +
                  std::to_string(frame->size()) + " bytes deserialized without error");
      }
    }
  });
}

Verdict IntegrityVersionChecked(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) {
    return Verdict::not_supported("the serde does not claim integrity.detects_corruption");
  }
  return run_rc_property(rc_id("IntegrityVersionChecked", serde), {.max_success = 10}, [&] {
    MemoryObjPtr src = small_source(serde);
    const ObjectKey key = key_with(random_hash(), "");
    MemoryObjPtr frame = frame_of(serde, *src, key);
    require_round_trip(serde, *frame, src->layout(), key);
    const std::size_t at = serde.integrity.version_byte_offset;
    require(at < frame->size(), "version_byte_offset is past the frame");
    const auto version = std::to_integer<unsigned>(frame->data()[at]);
    DeserializerPtr deser = serde.make_deserializer();
    for (unsigned other : {0u, version + 1, version - 1, 0x7fu, 0xffu}) {
      other &= 0xff;
      if (other == version) continue;
      MemoryObjPtr bad = copy_of(*frame, frame->size());
      bad->data()[at] = static_cast<std::byte>(other);
      if (!rejects(*deser, *bad, src->layout(), key)) {
        fail_case("a frame with version byte " + std::to_string(other) + " instead of " +
                  std::to_string(version) + " deserialized without error");
      }
    }
  });
}

Verdict IntegrityOtherChunkRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.binds_chunk_hash) {
    return Verdict::not_supported("the serde does not claim integrity.binds_chunk_hash");
  }
  return run_rc_property(rc_id("IntegrityOtherChunkRejected", serde), {}, [&] {
    MemoryObjPtr src = small_source(serde);
    const std::string hash = random_hash();
    // Another chunk: one byte changed within the first 8 (what a fingerprint covers).
    std::string other = hash;
    const auto at = *uniform_in_range<std::size_t>(0, 8);
    other[at] = static_cast<char>(other[at] ^ static_cast<char>(*uniform_in_range<int>(1, 256)));
    MemoryObjPtr frame = frame_of(serde, *src, key_with(hash, "t"));
    require_round_trip(serde, *frame, src->layout(), key_with(hash, "t"));
    require(rejects(*serde.make_deserializer(), *frame, src->layout(), key_with(other, "t")),
            "a frame stored under chunk hash byte " + std::to_string(at) +
                " = another value deserialized under the other key without error");
  });
}

Verdict IntegrityOtherSaltRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.binds_cache_salt) {
    return Verdict::not_supported("the serde does not claim integrity.binds_cache_salt");
  }
  return run_rc_property(rc_id("IntegrityOtherSaltRejected", serde), {}, [&] {
    MemoryObjPtr src = small_source(serde);
    const std::string hash = random_hash();
    const std::string salt = *rc::gen::elementOf(std::vector<std::string>{"", "tenant-a", "t1"});
    const std::string other =
        *rc::gen::elementOf(std::vector<std::string>{"tenant-b", "t2", "tenant-a2"});
    MemoryObjPtr frame = frame_of(serde, *src, key_with(hash, salt));
    require_round_trip(serde, *frame, src->layout(), key_with(hash, salt));
    require(rejects(*serde.make_deserializer(), *frame, src->layout(), key_with(hash, other)),
            "a frame of cache_salt '" + salt + "' deserialized under cache_salt '" + other + "'");
  });
}

Verdict IntegrityOtherSecretRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.make_deserializer_with_other_secret) {
    return Verdict::not_supported(
        "the serde declares no integrity.make_deserializer_with_other_secret");
  }
  return run_rc_property(rc_id("IntegrityOtherSecretRejected", serde), {}, [&] {
    MemoryObjPtr src = small_source(serde);
    const ObjectKey key = key_with(random_hash(), "");
    MemoryObjPtr frame = frame_of(serde, *src, key);
    require_round_trip(serde, *frame, src->layout(), key);
    require(
        rejects(*serde.integrity.make_deserializer_with_other_secret(), *frame, src->layout(), key),
        "a frame deserialized with another secret (wrong master key) without error");
  });
}

Verdict IntegrityNoncesDistinct(const SerdeUnderTest& serde) {
  const IntegrityClaims& c = serde.integrity;
  if (!c.randomized || c.nonce_bytes == 0) {
    return Verdict::not_supported("the serde does not claim integrity.randomized with nonce_bytes");
  }
  // One scenario, run once: the count is the property.
  return run_rc_property(
      rc_id("IntegrityNoncesDistinct", serde), {.max_success = 1, .scale_with_depth = false}, [&] {
        MemoryObjPtr src =
            make_source(SerdeCase{MemoryLayoutDesc::single({1}, serde.input_dtypes.front()), 1},
                        value_spec_for(serde));
        const ObjectKey key = key_with(std::string(8, 'n'), "");
        SerializerPtr ser = serde.make_serializer();
        MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(src->layout())));
        std::unordered_set<std::string> seen;
        seen.reserve(kNonceSerializations);
        for (std::size_t i = 0; i < kNonceSerializations; ++i) {
          const std::size_t n = ser->serialize(*src, *frame, key);
          require(c.nonce_offset + c.nonce_bytes <= n, "the frame is shorter than its nonce");
          if (!seen.emplace(reinterpret_cast<const char*>(frame->data()) + c.nonce_offset,
                            c.nonce_bytes)
                   .second) {
            fail_case("serialization " + std::to_string(i) + " reused a nonce of an earlier one");
          }
        }
      });
}

Verdict IntegrityCiphertextNotPlaintext(const SerdeUnderTest& serde) {
  if (!serde.integrity.randomized) {
    return Verdict::not_supported("the serde does not claim integrity.randomized (encryption)");
  }
  return run_rc_property(rc_id("IntegrityCiphertextNotPlaintext", serde), {}, [&] {
    // At least 16 bytes of varied payload, so a match by chance is out of the question.
    const DType dtype = *rc::gen::elementOf(serde.input_dtypes);
    const std::size_t esize = element_size(dtype);
    const std::size_t n = std::max<std::size_t>((16 + esize - 1) / esize, kMaxElements);
    MemoryObjPtr src = make_object(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, dtype));
    fill_bytes(src->bytes(), *gen_seed());
    MemoryObjPtr frame = frame_of(serde, *src, key_with(random_hash(), ""));
    auto in = std::as_const(*src).bytes();
    auto out = std::as_const(*frame).bytes();
    require(std::search(out.begin(), out.end(), in.begin(), in.end()) == out.end(),
            "the frame holds its " + std::to_string(in.size()) + "-byte payload in clear");
  });
}

}  // namespace lmcache::conformance_internal::serde_properties
