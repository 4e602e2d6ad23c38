// The Integrity* serde properties (docs/integrity.md): what an integrity / confidentiality serde
// claims in its descriptor (IntegrityClaims) about tampered, truncated, misplaced and foreign
// frames, and about its nonces. A claim not made makes its property NotSupported.
//
// "Fails" is deserialize() throwing: the object is then not claimed as loaded. Frames come from
// the whole size domain (0 bytes to KV-chunk-sized MiB, gen_serde_case()) under keys from the
// whole key domain (gen_object_key()). Small frames are swept whole (every bit, every length);
// past kSweepBytes the header, the tail and sampled payload positions are (corruption.h's plans),
// so that a hash or tag that stops covering the payload after some offset is found at any size.
#include <algorithm>
#include <cstring>
#include <functional>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/corruption.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/serde_checks.h"
#include "lmcache/conformance/internal/serde_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

constexpr std::size_t kNonceSerializations = 100'000;

// A source of the serde's declared dtypes from every size class (gen_layout_of_any_size(): a
// few bytes to KV-chunk-sized MiB), under a key from the whole key domain.
SerdeCase integrity_case(const SerdeUnderTest& serde) {
  SerdeCase c;
  c.layout = *gen_layout_of_any_size(serde.input_dtypes, current_profile().max_chunk_bytes);
  c.data_seed = *gen_seed();
  c.key = *gen_object_key();
  return c;
}

// serialize() into an estimate-sized buffer, narrowed to the count.
MemoryObjPtr frame_of(const SerdeUnderTest& serde, const MemoryObj& src, const ObjectKey& key) {
  SerializerPtr ser = serde.make_serializer();
  MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(src.layout())));
  frame->set_used_size(ser->serialize(src, *frame, key));
  return frame;
}

// True when deserialize() rejects the frame (throws); into `dst` (of the frame's layout).
bool rejects_into(Deserializer& deser, const MemoryObj& frame, MemoryObj& dst,
                  const ObjectKey& key) {
  try {
    deser.deserialize(frame, dst, key);
  } catch (...) {
    return true;
  }
  return false;
}

bool rejects(Deserializer& deser, const MemoryObj& frame, const MemoryLayoutDesc& layout,
             const ObjectKey& key) {
  MemoryObjPtr dst = make_object(layout);
  return rejects_into(deser, frame, *dst, key);
}

// The frame deserializes under the same key (else the other checks prove nothing).
void require_round_trip(Deserializer& deser, const MemoryObj& frame, const MemoryLayoutDesc& layout,
                        const ObjectKey& key) {
  require(!rejects(deser, frame, layout, key),
          "an untouched frame was rejected under its own key" + where(layout, key));
}

// Every corruption of `plan` applied to a copy of `frame` must make `deser` fail.
void require_all_rejected(Deserializer& deser, const MemoryObj& frame,
                          const std::vector<Corruption>& plan, const MemoryLayoutDesc& layout,
                          const ObjectKey& key) {
  CorruptibleCopy copy(frame);
  MemoryObjPtr dst = make_object(layout);  // one destination for the whole plan
  for (const Corruption& c : plan) {
    copy.apply(c);
    const bool rejected = rejects_into(deser, *copy.obj(), *dst, key);
    copy.restore();
    if (!rejected) {
      fail_case("a frame of " + std::to_string(frame.size()) + " bytes with " + describe(c) +
                " deserialized without error" + where(layout, key));
    }
  }
}

// A key that differs from `key` in `field` where the serde's binding can see it: for the chunk
// hash of a serde bound to a zero-padded prefix, within that prefix.
ObjectKey other_key(const ObjectKey& key, KeyField field, std::size_t hash_bound_bytes) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    ObjectKey other = *gen_key_varied_in(key, field);
    if (field != KeyField::kChunkHash ||
        padded_prefix_differs(key.chunk_hash(), other.chunk_hash(), hash_bound_bytes)) {
      return other;
    }
  }
  // The prefix's first byte changed: a difference every binding sees.
  std::string hash = key.chunk_hash();
  if (hash.empty()) hash.push_back('\0');
  hash[0] = static_cast<char>(hash[0] ^ 0x5a);
  return ObjectKey(std::move(hash), key.model_name(), key.kv_rank(), key.object_group_id(),
                   key.cache_salt());
}

Verdict not_claimed(const char* claim) {
  return Verdict::not_supported(std::string("the serde does not claim integrity.") + claim);
}

}  // namespace

Verdict IntegrityBitFlipsDetected(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) return not_claimed("detects_corruption");
  return run_rc_property(rc_id("IntegrityBitFlipsDetected", serde), {.max_success = 10}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    require_round_trip(*deser, *frame, src->layout(), c.key);
    require_all_rejected(*deser, *frame, bit_flip_plan(frame->size(), *gen_seed()), src->layout(),
                         c.key);
  });
}

Verdict IntegrityTruncationsDetected(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) return not_claimed("detects_corruption");
  return run_rc_property(rc_id("IntegrityTruncationsDetected", serde), {.max_success = 10}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    require_round_trip(*deser, *frame, src->layout(), c.key);
    require_all_rejected(*deser, *frame, truncation_plan(frame->size(), *gen_seed()), src->layout(),
                         c.key);
  });
}

Verdict IntegrityRangesDetected(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) return not_claimed("detects_corruption");
  return run_rc_property(rc_id("IntegrityRangesDetected", serde), {.max_success = 10}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    require_round_trip(*deser, *frame, src->layout(), c.key);
    require_all_rejected(*deser, *frame, range_plan(*frame, *gen_seed()), src->layout(), c.key);
  });
}

Verdict IntegrityVersionChecked(const SerdeUnderTest& serde) {
  if (!serde.integrity.detects_corruption) return not_claimed("detects_corruption");
  return run_rc_property(rc_id("IntegrityVersionChecked", serde), {.max_success = 10}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    require_round_trip(*deser, *frame, src->layout(), c.key);
    const std::size_t at = serde.integrity.version_byte_offset;
    require(at < frame->size(), "version_byte_offset is past the frame");
    const auto version = std::to_integer<unsigned>(frame->data()[at]);
    std::vector<Corruption> plan;
    for (unsigned other : {0u, version + 1, version - 1, 0x7fu, 0x80u, 0xffu}) {
      other &= 0xff;
      if (other != version) plan.push_back(Corruption::rewrite_byte(at, other));
    }
    require_all_rejected(*deser, *frame, plan, src->layout(), c.key);
  });
}

Verdict IntegrityOtherChunkRejected(const SerdeUnderTest& serde) {
  const IntegrityClaims& claims = serde.integrity;
  if (!claims.binds_chunk_hash) return not_claimed("binds_chunk_hash");
  return run_rc_property(rc_id("IntegrityOtherChunkRejected", serde), {}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    // One deserializer for the frame's own key and every other one, in turn: nothing it keeps
    // from one key may answer for the next.
    for (int i = 0; i < 4; ++i) {
      require_round_trip(*deser, *frame, src->layout(), c.key);
      const ObjectKey other = other_key(c.key, KeyField::kChunkHash, claims.chunk_hash_bound_bytes);
      require(rejects(*deser, *frame, src->layout(), other),
              "a frame stored under " + c.key.to_string() + " deserialized under " +
                  other.to_string() + " (another chunk hash) without error" + where(src->layout()));
    }
  });
}

Verdict IntegrityOtherKeyFieldRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.binds_whole_key) return not_claimed("binds_whole_key");
  return run_rc_property(rc_id("IntegrityOtherKeyFieldRejected", serde), {}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    DeserializerPtr deser = serde.make_deserializer();
    for (KeyField field : kAllKeyFields) {
      require_round_trip(*deser, *frame, src->layout(), c.key);
      const ObjectKey other = other_key(c.key, field, 0);
      require(rejects(*deser, *frame, src->layout(), other),
              std::string("a frame stored under ") + c.key.to_string() + " deserialized under " +
                  other.to_string() + ", a key that differs only in " + key_field_name(field) +
                  ", without error" + where(src->layout()));
    }
  });
}

Verdict IntegrityOtherSaltRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.binds_cache_salt) return not_claimed("binds_cache_salt");
  return run_rc_property(rc_id("IntegrityOtherSaltRejected", serde), {}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    // Two to five tenants of one chunk whose salts share prefixes and lengths (each varied from
    // an earlier one), served by one serializer and one deserializer: a key cache indexed by
    // less than the whole salt hands one tenant another's key.
    const auto n = *uniform_in_range<std::size_t>(2, 6);
    std::vector<ObjectKey> tenants = {c.key};
    while (tenants.size() < n) {
      ObjectKey next = *gen_key_varied_in(
          tenants[*uniform_in_range<std::size_t>(0, tenants.size())], KeyField::kCacheSalt);
      if (std::find(tenants.begin(), tenants.end(), next) == tenants.end()) tenants.push_back(next);
    }
    SerializerPtr ser = serde.make_serializer();
    DeserializerPtr deser = serde.make_deserializer();
    std::vector<MemoryObjPtr> frames;
    for (const ObjectKey& k : tenants) {
      MemoryObjPtr f = make_object(byte_layout(ser->estimate_serialized_size(src->layout())));
      f->set_used_size(ser->serialize(*src, *f, k));
      frames.push_back(f);
    }
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        const bool rejected = rejects(*deser, *frames[i], src->layout(), tenants[j]);
        if (i == j) {
          require(!rejected, "tenant " + std::to_string(i) + "'s frame was rejected under its " +
                                 "own key after the deserializer served other tenants" +
                                 where(src->layout(), tenants[i]));
        } else {
          require(rejected, "a frame of cache_salt '" + tenants[i].cache_salt() +
                                "' deserialized under cache_salt '" + tenants[j].cache_salt() +
                                "' without error" + where(src->layout()));
        }
      }
    }
  });
}

Verdict IntegrityOtherSecretRejected(const SerdeUnderTest& serde) {
  if (!serde.integrity.make_deserializer_with_other_secret) {
    return not_claimed("make_deserializer_with_other_secret");
  }
  return run_rc_property(rc_id("IntegrityOtherSecretRejected", serde), {}, [&] {
    const SerdeCase c = integrity_case(serde);
    MemoryObjPtr src = make_source(c, value_spec_for(serde));
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    require_round_trip(*serde.make_deserializer(), *frame, src->layout(), c.key);
    require(rejects(*serde.integrity.make_deserializer_with_other_secret(), *frame, src->layout(),
                    c.key),
            "a frame deserialized with another secret (wrong master key) without error" +
                where(src->layout(), c.key));
  });
}

Verdict IntegrityNoncesDistinct(const SerdeUnderTest& serde) {
  const IntegrityClaims& claims = serde.integrity;
  if (!claims.randomized || claims.nonce_bytes == 0) {
    return Verdict::not_supported("the serde does not claim integrity.randomized with nonce_bytes");
  }
  // One scenario, run once: the count is the property. Half the serializations come from eight
  // instances made at once and used in turn, half from four threads sharing one instance; the
  // keys vary (salts, chunks). A nonce drawn from per-instance state, a clock or an unlocked
  // counter repeats somewhere among them.
  return run_rc_property(
      rc_id("IntegrityNoncesDistinct", serde),
      {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
        MemoryObjPtr src =
            make_source(SerdeCase{MemoryLayoutDesc::single({1}, serde.input_dtypes.front()), 1},
                        value_spec_for(serde));
        const std::size_t frame_bytes =
            serde.make_serializer()->estimate_serialized_size(src->layout());
        std::vector<ObjectKey> keys;
        for (int i = 0; i < 8; ++i) keys.push_back(*gen_object_key());
        // The nonce of one serialization, or "" with *error set.
        auto nonce_of = [&](Serializer& ser, MemoryObj& frame, const ObjectKey& key,
                            std::string* error) -> std::string {
          const std::size_t n = ser.serialize(*src, frame, key);
          if (claims.nonce_offset + claims.nonce_bytes > n) {
            *error = "the frame is shorter than its nonce";
            return {};
          }
          return std::string(reinterpret_cast<const char*>(frame.data()) + claims.nonce_offset,
                             claims.nonce_bytes);
        };
        std::unordered_set<std::string> seen;
        seen.reserve(kNonceSerializations);
        auto add = [&](std::string nonce, const std::string& how) {
          if (!seen.insert(std::move(nonce)).second) {
            fail_case("a nonce repeated after " + std::to_string(seen.size()) + " distinct ones (" +
                      how + ")");
          }
        };
        constexpr std::size_t kInstances = 8;
        std::vector<SerializerPtr> instances;
        for (std::size_t i = 0; i < kInstances; ++i) instances.push_back(serde.make_serializer());
        MemoryObjPtr frame = make_object(byte_layout(frame_bytes));
        std::string error;
        for (std::size_t i = 0; i < kNonceSerializations / 2; ++i) {
          std::string nonce =
              nonce_of(*instances[i % kInstances], *frame, keys[i % keys.size()], &error);
          require(error.empty(), error);
          add(std::move(nonce), "eight instances made at once, used in turn");
        }
        constexpr std::size_t kThreads = 4;
        SerializerPtr shared = serde.make_serializer();
        std::vector<std::vector<std::string>> per_thread(kThreads);
        std::vector<std::string> errors(kThreads);
        std::latch start(kThreads);
        std::vector<std::thread> threads;
        for (std::size_t t = 0; t < kThreads; ++t) {
          threads.emplace_back([&, t] {
            MemoryObjPtr own = make_object(byte_layout(frame_bytes));
            start.arrive_and_wait();
            try {
              for (std::size_t i = 0; i < kNonceSerializations / 2 / kThreads; ++i) {
                per_thread[t].push_back(
                    nonce_of(*shared, *own, keys[(t + i) % keys.size()], &errors[t]));
                if (!errors[t].empty()) return;
              }
            } catch (const std::exception& e) {
              errors[t] = std::string("serialize() threw: ") + e.what();
            }
          });
        }
        for (auto& th : threads) th.join();
        for (const auto& e : errors) require(e.empty(), e);
        for (auto& list : per_thread) {
          for (auto& nonce : list) add(std::move(nonce), "four threads sharing one instance");
        }
      });
}

Verdict IntegrityCiphertextNotPlaintext(const SerdeUnderTest& serde) {
  if (!serde.integrity.randomized) {
    return Verdict::not_supported("the serde does not claim integrity.randomized (encryption)");
  }
  return run_rc_property(rc_id("IntegrityCiphertextNotPlaintext", serde), {}, [&] {
    // At least 32 bytes of varied payload, so a match by chance is out of the question; any
    // size beyond that, chunk-sized included (a cipher that stops after a block or a page
    // leaves the rest in clear).
    SerdeCase c = integrity_case(serde);
    const DType dtype = *rc::gen::elementOf(serde.input_dtypes);
    const std::size_t n =
        std::max<std::size_t>((32 + element_size(dtype) - 1) / element_size(dtype),
                              c.layout.total_bytes() / element_size(dtype));
    MemoryObjPtr src = make_object(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, dtype));
    fill_bytes(src->bytes(), *gen_seed());
    MemoryObjPtr frame = frame_of(serde, *src, c.key);
    if (std::string found = plaintext_window_in(std::as_const(*src).bytes(),
                                                std::as_const(*frame).bytes(), *gen_seed());
        !found.empty()) {
      fail_case("the frame holds its payload in clear: " + found + where(src->layout(), c.key));
    }
  });
}

}  // namespace lmcache::conformance_internal::serde_properties
