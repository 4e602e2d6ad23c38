// The integrity family: the reference checksum and aesgcm serdes with one integrity bug each,
// caught by the Integrity* properties (docs/integrity.md). Each is built from the reference
// pieces, so the bug is the only difference from its base.
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

MemoryObjPtr bytes_view(MemoryObj& whole, std::size_t n) {
  // A byte view of the first n bytes of `whole`, sharing its buffer.
  return std::make_shared<MemoryObj>(std::shared_ptr<void>(), whole.data(), n, byte_layout(n));
}

MemoryObjPtr const_bytes_view(const MemoryObj& whole, std::size_t n) {
  return bytes_view(const_cast<MemoryObj&>(whole), n);
}

// checksum whose hash covers every payload byte but the last: the frame is
// [version][fingerprint][XXH3 of payload[0, n-1)][payload], which round-trips.
struct SkipLastSerializer final : Serializer {
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = src.size();
    if (n == 0) return inner.serialize(src, dst, key);
    if (dst.size() < n + kChecksumHeaderBytes) {
      throw std::invalid_argument("checksum (skip last): destination too small");
    }
    MemoryObjPtr head = const_bytes_view(src, n - 1);
    MemoryObjPtr out = bytes_view(dst, n - 1 + kChecksumHeaderBytes);
    inner.serialize(*head, *out, key);
    dst.data()[kChecksumHeaderBytes + n - 1] = src.data()[n - 1];
    return n + kChecksumHeaderBytes;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner.estimate_serialized_size(l);
  }
  ChecksumSerializer inner;
};

struct SkipLastDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = dst.size();
    if (n == 0 || src.size() < n + kChecksumHeaderBytes) return inner.deserialize(src, dst, key);
    MemoryObjPtr frame = const_bytes_view(src, n - 1 + kChecksumHeaderBytes);
    MemoryObjPtr head = bytes_view(dst, n - 1);
    inner.deserialize(*frame, *head, key);
    dst.data()[n - 1] = src.data()[kChecksumHeaderBytes + n - 1];
  }
  ChecksumDeserializer inner;
};

// checksum that writes the fingerprint but never compares it on load.
struct NoFingerprintDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    MemoryObjPtr copy = make_object(byte_layout(src.size()));
    if (src.size() > 0) std::memcpy(copy->data(), src.data(), src.size());
    if (copy->size() >= 9) {
      const auto fp = checksum_fingerprint(key);
      std::memcpy(copy->data() + 1, fp.data(), fp.size());  // whatever was stored "matches"
    }
    inner.deserialize(*copy, dst, key);
  }
  ChecksumDeserializer inner;
};

// checksum that loads what a short frame holds instead of rejecting it.
struct AcceptsShortDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    if (src.size() < dst.size() + kChecksumHeaderBytes) {
      if (src.size() > kChecksumHeaderBytes) {
        std::memcpy(dst.data(), src.data() + kChecksumHeaderBytes,
                    src.size() - kChecksumHeaderBytes);
      }
      return;
    }
    inner.deserialize(src, dst, key);
  }
  ChecksumDeserializer inner;
};

// checksum that overwrites the version byte with the one it knows instead of checking it.
struct IgnoresVersionDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    MemoryObjPtr copy = make_object(byte_layout(src.size()));
    if (src.size() > 0) {
      std::memcpy(copy->data(), src.data(), src.size());
      copy->data()[0] = static_cast<std::byte>(kChecksumFrameVersion);
    }
    inner.deserialize(*copy, dst, key);
  }
  ChecksumDeserializer inner;
};

// aesgcm that derives every tenant's key as the empty cache_salt's.
struct SaltBlindSerializer final : Serializer {
  explicit SaltBlindSerializer(SerializerPtr in) : inner(std::move(in)) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    return inner->serialize(src, dst, unsalted(key));
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner->estimate_serialized_size(l);
  }
  static ObjectKey unsalted(const ObjectKey& k) {
    return ObjectKey(k.chunk_hash(), k.model_name(), k.kv_rank(), k.object_group_id(), "");
  }
  SerializerPtr inner;
};
struct SaltBlindDeserializer final : Deserializer {
  explicit SaltBlindDeserializer(DeserializerPtr in) : inner(std::move(in)) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    inner->deserialize(src, dst, SaltBlindSerializer::unsalted(key));
  }
  DeserializerPtr inner;
};

// "aesgcm" with a null cipher left in: [1][IV][payload in clear][16 zero bytes].
struct ClearSerializer final : Serializer {
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey&) override {
    const std::size_t n = src.size();
    if (dst.size() < n + kAesGcmOverheadBytes) throw std::invalid_argument("too small");
    std::memset(dst.data(), 0, n + kAesGcmOverheadBytes);
    dst.data()[0] = static_cast<std::byte>(kAesGcmFrameVersion);
    for (std::size_t b = 0; b < kAesGcmIvBytes; ++b) {
      dst.data()[1 + b] = static_cast<std::byte>((counter >> (8 * (b % 8))) & 0xff);
    }
    ++counter;
    if (n > 0) std::memcpy(dst.data() + 1 + kAesGcmIvBytes, src.data(), n);
    return n + kAesGcmOverheadBytes;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return l.total_bytes() + kAesGcmOverheadBytes;
  }
  std::atomic<std::uint64_t> counter{1};
};
struct ClearDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey&) override {
    if (src.size() < dst.size() + kAesGcmOverheadBytes) throw std::invalid_argument("short");
    if (src.data()[0] != static_cast<std::byte>(kAesGcmFrameVersion)) {
      throw std::runtime_error("version");
    }
    if (dst.size() > 0) std::memcpy(dst.data(), src.data() + 1 + kAesGcmIvBytes, dst.size());
  }
};

Impl serde_impl(SerdeUnderTest s) {
  Impl i;
  i.serde = std::move(s);
  return i;
}

// Serializes a 16-byte object under `key`; the narrowed frame.
MemoryObjPtr frame_of(const SerdeUnderTest& s, const ObjectKey& key, std::uint8_t seed = 1) {
  MemoryObjPtr src = make_object(byte_layout(16));
  for (std::size_t b = 0; b < 16; ++b) src->data()[b] = static_cast<std::byte>(seed + 3 * b);
  SerializerPtr ser = s.make_serializer();
  MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(src->layout())));
  frame->set_used_size(ser->serialize(*src, *frame, key));
  return frame;
}

bool loads(const SerdeUnderTest& s, const MemoryObj& frame, const ObjectKey& key) {
  MemoryObjPtr dst = make_object(byte_layout(16));
  try {
    s.make_deserializer()->deserialize(frame, *dst, key);
  } catch (...) {
    return false;
  }
  return true;
}

}  // namespace

void add_integrity_mutants(std::vector<Mutant>& out) {
  const Impl checksum = serde_impl(reference_checksum_serde());
  {
    Impl i = checksum;
    i.serde.make_serializer = [] { return std::make_shared<SkipLastSerializer>(); };
    i.serde.make_deserializer = [] { return std::make_shared<SkipLastDeserializer>(); };
    out.push_back(mutant("checksum_skips_last_byte", ImplementationKind::kSerde, BugClass::kSizes,
                         "IntegrityBitFlipsDetected",
                         "the hash covers every payload byte but the last", i, checksum,
                         [](const Impl& impl) -> std::string {
                           MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                           frame->data()[frame->size() - 1] ^= std::byte{0x01};
                           return loads(impl.serde, *frame, probe_key(1))
                                      ? "a flip of the payload's last byte loaded"
                                      : "";
                         }));
  }
  {
    Impl i = checksum;
    i.serde.make_deserializer = [] { return std::make_shared<NoFingerprintDeserializer>(); };
    out.push_back(mutant(
        "checksum_fingerprint_not_compared", ImplementationKind::kSerde, BugClass::kData,
        "IntegrityOtherChunkRejected", "the fingerprint is written but never compared on load", i,
        checksum, [](const Impl& impl) -> std::string {
          MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
          return loads(impl.serde, *frame, probe_key(2)) ? "another chunk's frame loaded" : "";
        }));
  }
  {
    Impl i = checksum;
    i.serde.make_deserializer = [] { return std::make_shared<AcceptsShortDeserializer>(); };
    out.push_back(mutant(
        "checksum_accepts_short_frame", ImplementationKind::kSerde, BugClass::kSizes,
        "IntegrityTruncationsDetected", "a short frame loads the payload bytes it holds", i,
        checksum, [](const Impl& impl) -> std::string {
          MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
          frame->set_used_size(frame->size() - 1);
          return loads(impl.serde, *frame, probe_key(1)) ? "a frame one byte short loaded" : "";
        }));
  }
  {
    Impl i = checksum;
    i.serde.make_deserializer = [] { return std::make_shared<IgnoresVersionDeserializer>(); };
    out.push_back(mutant("checksum_version_not_checked", ImplementationKind::kSerde,
                         BugClass::kData, "IntegrityVersionChecked",
                         "the version byte is overwritten with the known one, not checked", i,
                         checksum, [](const Impl& impl) -> std::string {
                           MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                           frame->data()[0] = std::byte{2};
                           return loads(impl.serde, *frame, probe_key(1))
                                      ? "a version 2 frame loaded"
                                      : "";
                         }));
  }
  const Impl aesgcm = serde_impl(reference_aes_gcm_serde(128, false));
  {
    Impl i = aesgcm;
    i.serde.make_serializer = [make = aesgcm.serde.make_serializer] {
      return std::make_shared<SaltBlindSerializer>(make());
    };
    i.serde.make_deserializer = [make = aesgcm.serde.make_deserializer] {
      return std::make_shared<SaltBlindDeserializer>(make());
    };
    out.push_back(mutant(
        "aesgcm_salt_not_in_key", ImplementationKind::kSerde, BugClass::kData,
        "IntegrityOtherSaltRejected", "every tenant's key is derived as the empty cache_salt's", i,
        aesgcm, [](const Impl& impl) -> std::string {
          const ObjectKey a("12345678", "m", 0, 0, "tenant-a");
          const ObjectKey b("12345678", "m", 0, 0, "tenant-b");
          MemoryObjPtr frame = frame_of(impl.serde, a);
          return loads(impl.serde, *frame, b) ? "another tenant's frame loaded" : "";
        }));
  }
  {
    // The master key never reaches the derivation: a keyring of another master derives the
    // same keys, which the descriptor's other-secret deserializer shows.
    Impl i = aesgcm;
    i.serde.integrity.make_deserializer_with_other_secret = aesgcm.serde.make_deserializer;
    out.push_back(
        mutant("aesgcm_master_key_unused", ImplementationKind::kSerde, BugClass::kData,
               "IntegrityOtherSecretRejected",
               "keys are derived without the master key, so every master opens every "
               "frame",
               i, aesgcm, [](const Impl& impl) -> std::string {
                 MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                 MemoryObjPtr dst = make_object(byte_layout(16));
                 try {
                   impl.serde.integrity.make_deserializer_with_other_secret()->deserialize(
                       *frame, *dst, probe_key(1));
                 } catch (...) {
                   return "";
                 }
                 return "another master key opened the frame";
               }));
  }
  {
    Impl i = aesgcm;
    i.serde.make_serializer = [] { return std::make_shared<ClearSerializer>(); };
    i.serde.make_deserializer = [] { return std::make_shared<ClearDeserializer>(); };
    i.serde.integrity = {};
    i.serde.integrity.randomized = true;
    i.serde.integrity.nonce_offset = 1;
    i.serde.integrity.nonce_bytes = kAesGcmIvBytes;
    out.push_back(mutant(
        "aesgcm_null_cipher", ImplementationKind::kSerde, BugClass::kData,
        "IntegrityCiphertextNotPlaintext", "a null cipher left in: the payload is framed in clear",
        i, aesgcm, [](const Impl& impl) -> std::string {
          MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
          MemoryObjPtr clear = make_object(byte_layout(16));
          for (std::size_t b = 0; b < 16; ++b) {
            clear->data()[b] = static_cast<std::byte>(1 + 3 * b);
          }
          return std::memcmp(frame->data() + 1 + kAesGcmIvBytes, clear->data(), 16) == 0
                     ? "the payload is in the frame in clear"
                     : "";
        }));
  }
  {
    Impl i = aesgcm;
    i.serde.make_serializer = [make = aesgcm.serde.make_serializer] {
      SerializerPtr s = make();
      static_cast<AesGcmSerializer&>(*s).set_fixed_iv_for_testing(
          std::array<std::uint8_t, kAesGcmIvBytes>{});
      return s;
    };
    out.push_back(mutant("aesgcm_fixed_iv", ImplementationKind::kSerde, BugClass::kState,
                         "IntegrityNoncesDistinct", "every frame uses the same IV", i, aesgcm,
                         [](const Impl& impl) -> std::string {
                           MemoryObjPtr a = frame_of(impl.serde, probe_key(1));
                           MemoryObjPtr b = frame_of(impl.serde, probe_key(1));
                           return std::memcmp(a->data() + 1, b->data() + 1, kAesGcmIvBytes) == 0
                                      ? "two frames share their IV"
                                      : "";
                         }));
  }
  const Impl bound = serde_impl(reference_aes_gcm_serde(128, true));
  {
    // Claims bind_key (the descriptor's binds_chunk_hash) but feeds no AAD.
    Impl i = bound;
    const Impl unbound = serde_impl(reference_aes_gcm_serde(128, false));
    i.serde.make_serializer = unbound.serde.make_serializer;
    i.serde.make_deserializer = unbound.serde.make_deserializer;
    out.push_back(mutant("aesgcm_bind_key_ignores_aad", ImplementationKind::kSerde, BugClass::kData,
                         "IntegrityOtherChunkRejected",
                         "bind_key is accepted but the key never reaches the GCM AAD", i, bound,
                         [](const Impl& impl) -> std::string {
                           MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                           return loads(impl.serde, *frame, probe_key(2))
                                      ? "a frame moved to another key's slot loaded"
                                      : "";
                         }));
  }
}

}  // namespace lmcache::conformance::selftest
