// The integrity family: the reference checksum and aesgcm serdes with one integrity bug each,
// caught by the Integrity* properties (docs/integrity.md). Each is built from the reference
// pieces, so the bug is the only difference from its base.
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"
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

// checksum whose hash covers the first kPrefix payload bytes only (a streaming hash fed one
// 64 KiB block); the rest of the payload rides along unchecked.
struct PrefixHashSerializer final : Serializer {
  static constexpr std::size_t kPrefix = 64u << 10;
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = src.size();
    if (n <= kPrefix) return inner.serialize(src, dst, key);
    if (dst.size() < n + kChecksumHeaderBytes) {
      throw std::invalid_argument("checksum (prefix hash): destination too small");
    }
    MemoryObjPtr head = const_bytes_view(src, kPrefix);
    MemoryObjPtr out = bytes_view(dst, kPrefix + kChecksumHeaderBytes);
    inner.serialize(*head, *out, key);
    std::memcpy(dst.data() + kChecksumHeaderBytes + kPrefix, src.data() + kPrefix, n - kPrefix);
    return n + kChecksumHeaderBytes;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner.estimate_serialized_size(l);
  }
  ChecksumSerializer inner;
};
struct PrefixHashDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = dst.size();
    constexpr std::size_t kPrefix = PrefixHashSerializer::kPrefix;
    if (n <= kPrefix || src.size() < n + kChecksumHeaderBytes) {
      return inner.deserialize(src, dst, key);
    }
    MemoryObjPtr frame = const_bytes_view(src, kPrefix + kChecksumHeaderBytes);
    MemoryObjPtr head = bytes_view(dst, kPrefix);
    inner.deserialize(*frame, *head, key);
    std::memcpy(dst.data() + kPrefix, src.data() + kChecksumHeaderBytes + kPrefix, n - kPrefix);
  }
  ChecksumDeserializer inner;
};

// A copy of `src`'s size() bytes that `edit` may change, then `inner` reads it.
template <class Edit>
void read_edited(Deserializer& inner, const MemoryObj& src, MemoryObj& dst, const ObjectKey& key,
                 Edit edit) {
  MemoryObjPtr copy = make_object(byte_layout(src.size()));
  if (src.size() > 0) std::memcpy(copy->data(), src.data(), src.size());
  edit(*copy);
  inner.deserialize(*copy, dst, key);
}

// checksum that compares the first 4 bytes of the fingerprint only.
struct FourByteFingerprintDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    read_edited(inner, src, dst, key, [&](MemoryObj& f) {
      if (f.size() < 9) return;
      const auto fp = checksum_fingerprint(key);
      std::memcpy(f.data() + 1 + 4, fp.data() + 4, 4);  // bytes 4-7 "match" whatever they hold
    });
  }
  ChecksumDeserializer inner;
};

// checksum whose hash field is written little-endian (XXH3's native order), not big-endian
// as the format says: it reads its own frames, nobody else's.
void reverse_hash_field(MemoryObj& frame) {
  if (frame.size() >= kChecksumHeaderBytes) std::reverse(frame.data() + 9, frame.data() + 17);
}
struct LittleEndianHashSerializer final : Serializer {
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = inner.serialize(src, dst, key);
    MemoryObjPtr frame = bytes_view(dst, n);
    reverse_hash_field(*frame);
    return n;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner.estimate_serialized_size(l);
  }
  ChecksumSerializer inner;
};
struct LittleEndianHashDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    read_edited(inner, src, dst, key, reverse_hash_field);
  }
  ChecksumDeserializer inner;
};

// checksum that takes an all-zero hash field for "no hash computed" and skips the check.
struct ZeroHashUncheckedDeserializer final : Deserializer {
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = dst.size();
    const bool zero_hash =
        src.size() >= n + kChecksumHeaderBytes &&
        std::all_of(src.data() + 9, src.data() + 17, [](std::byte b) { return b == std::byte{0}; });
    if (!zero_hash) return inner.deserialize(src, dst, key);
    const auto fp = checksum_fingerprint(key);
    if (src.data()[0] != static_cast<std::byte>(kChecksumFrameVersion) ||
        std::memcmp(src.data() + 1, fp.data(), fp.size()) != 0) {
      throw std::runtime_error("checksum (zero hash): bad header");
    }
    if (n > 0) std::memcpy(dst.data(), src.data() + kChecksumHeaderBytes, n);
  }
  ChecksumDeserializer inner;
};

// A serializer / deserializer pair that hands the reference another key than the caller's:
// what a key cache, a fixed buffer or an AAD builder that drops part of the key amounts to.
using KeyMap = ObjectKey (*)(const ObjectKey&);
struct KeyMappingSerializer final : Serializer {
  KeyMappingSerializer(SerializerPtr in, KeyMap m) : inner(std::move(in)), map(m) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    return inner->serialize(src, dst, map(key));
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner->estimate_serialized_size(l);
  }
  SerializerPtr inner;
  KeyMap map;
};
struct KeyMappingDeserializer final : Deserializer {
  KeyMappingDeserializer(DeserializerPtr in, KeyMap m) : inner(std::move(in)), map(m) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    inner->deserialize(src, dst, map(key));
  }
  DeserializerPtr inner;
  KeyMap map;
};

ObjectKey with_hash(const ObjectKey& k, std::string hash) {
  return ObjectKey(std::move(hash), k.model_name(), k.kv_rank(), k.object_group_id(),
                   k.cache_salt());
}
ObjectKey with_salt(const ObjectKey& k, std::string salt) {
  return ObjectKey(k.chunk_hash(), k.model_name(), k.kv_rank(), k.object_group_id(),
                   std::move(salt));
}
// The fingerprint copied as a C string: it stops at the hash's first NUL byte.
ObjectKey hash_as_c_string(const ObjectKey& k) {
  return with_hash(k, std::string(k.chunk_hash().c_str()));
}
// Derived keys cached under the salt's first 8 bytes.
ObjectKey salt_prefix_8(const ObjectKey& k) { return with_salt(k, k.cache_salt().substr(0, 8)); }
// The HKDF info built in a 64-byte salt buffer.
ObjectKey salt_capped_64(const ObjectKey& k) { return with_salt(k, k.cache_salt().substr(0, 64)); }
// Derived keys cached under the salt with its letters lower-cased.
ObjectKey salt_case_folded(const ObjectKey& k) {
  std::string salt = k.cache_salt();
  for (char& ch : salt) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return with_salt(k, std::move(salt));
}
// The AAD built without kv_rank.
ObjectKey without_kv_rank(const ObjectKey& k) {
  return ObjectKey(k.chunk_hash(), k.model_name(), 0, k.object_group_id(), k.cache_salt());
}

// object_group_id kept in 32 bits (a static_cast<std::int32_t> on the way into the AAD).
ObjectKey group_id_32_bit(const ObjectKey& k) {
  const auto low = static_cast<std::uint32_t>(k.object_group_id());
  return ObjectKey(k.chunk_hash(), k.model_name(), k.kv_rank(), static_cast<std::int64_t>(low),
                   k.cache_salt());
}

Impl key_mapping(const Impl& base, KeyMap m) {
  Impl i = base;
  i.serde.make_serializer = [make = base.serde.make_serializer, m] {
    return std::make_shared<KeyMappingSerializer>(make(), m);
  };
  i.serde.make_deserializer = [make = base.serde.make_deserializer, m] {
    return std::make_shared<KeyMappingDeserializer>(make(), m);
  };
  return i;
}

// aesgcm whose IVs come from a counter each instance starts at 0.
struct CountingIvSerializer final : Serializer {
  explicit CountingIvSerializer(SerializerPtr in) : inner(std::move(in)) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    std::lock_guard lock(mu);
    std::array<std::uint8_t, kAesGcmIvBytes> iv{};
    for (std::size_t b = 0; b < 8; ++b) iv[b] = static_cast<std::uint8_t>(counter >> (8 * b));
    ++counter;
    auto& aes = static_cast<AesGcmSerializer&>(*inner);
    aes.set_fixed_iv_for_testing(iv);
    return aes.serialize(src, dst, key);
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner->estimate_serialized_size(l);
  }
  SerializerPtr inner;
  std::mutex mu;
  std::uint64_t counter = 0;
};

// aesgcm that wants the frame to end exactly where the ciphertext does: a source with bytes
// after the frame (a temp larger than the frame, a stored value with a tail) is refused.
struct ExactLengthDeserializer final : Deserializer {
  explicit ExactLengthDeserializer(DeserializerPtr in) : inner(std::move(in)) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    if (src.size() != dst.size() + kAesGcmOverheadBytes) {
      throw std::invalid_argument("aesgcm: frame of " + std::to_string(src.size()) +
                                  " bytes, expected exactly " +
                                  std::to_string(dst.size() + kAesGcmOverheadBytes));
    }
    inner->deserialize(src, dst, key);
  }
  DeserializerPtr inner;
};

// The chain's first stage zeroes what fp8 wrote past 2 MiB: a staging buffer that holds 2 MiB
// copies only that much into a zeroed buffer of the full size.
struct StagedFp8Serializer final : Serializer {
  static constexpr std::size_t kStage = 2u << 20;
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    const std::size_t n = inner.serialize(src, dst, key);
    if (n > kStage) std::memset(dst.data() + kStage, 0, n - kStage);
    return n;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& l) const override {
    return inner.estimate_serialized_size(l);
  }
  Fp8Serializer inner;
};

// A serde that sees every key through `map` (the bug), with its witness: a frame made under `a`
// must not load under `b`, a key the bug confuses with `a`. `loaded` says what happened if it did.
Mutant key_confusion_mutant(std::string name, BugClass bug_class, std::string property,
                            std::string bug, const Impl& base, KeyMap map, ObjectKey a, ObjectKey b,
                            std::string loaded) {
  return mutant(std::move(name), ImplementationKind::kSerde, bug_class, std::move(property),
                std::move(bug), key_mapping(base, map), base,
                [a = std::move(a), b = std::move(b),
                 loaded = std::move(loaded)](const Impl& impl) -> std::string {
                  return loads(impl.serde, *frame_of(impl.serde, a), b) ? loaded : "";
                });
}

}  // namespace

Impl serde_impl(SerdeUnderTest s) {
  Impl i;
  i.serde = std::move(s);
  return i;
}

MemoryObjPtr frame_of(const SerdeUnderTest& s, const ObjectKey& key, std::uint8_t seed,
                      std::size_t n) {
  MemoryObjPtr src = make_object(byte_layout(n));
  for (std::size_t b = 0; b < n; ++b) src->data()[b] = static_cast<std::byte>(seed + 3 * b);
  SerializerPtr ser = s.make_serializer();
  MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(src->layout())));
  frame->set_used_size(ser->serialize(*src, *frame, key));
  return frame;
}

bool loads(const SerdeUnderTest& s, const MemoryObj& frame, const ObjectKey& key, std::size_t n) {
  MemoryObjPtr dst = make_object(byte_layout(n));
  try {
    s.make_deserializer()->deserialize(frame, *dst, key);
  } catch (...) {
    return false;
  }
  return true;
}

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
  // Issue 25's classes: sizes, keys, instances, frames. Each mutant reads its own frames
  // back; only a kit that looks past small frames, at the whole key, across instances and at
  // the reference's wire format sees it.
  {
    Impl i = checksum;
    i.serde.make_serializer = [] { return std::make_shared<PrefixHashSerializer>(); };
    i.serde.make_deserializer = [] { return std::make_shared<PrefixHashDeserializer>(); };
    out.push_back(
        mutant("checksum_hashes_first_64k", ImplementationKind::kSerde, BugClass::kSizes,
               "IntegrityBitFlipsDetected",
               "the hash covers the first 64 KiB of the payload; the rest of a chunk is unchecked",
               i, checksum, [](const Impl& impl) -> std::string {
                 constexpr std::size_t kN = 70000;
                 MemoryObjPtr frame = frame_of(impl.serde, probe_key(1), 1, kN);
                 frame->data()[kChecksumHeaderBytes + 69000] ^= std::byte{0x10};
                 return loads(impl.serde, *frame, probe_key(1), kN)
                            ? "a flip at payload byte 69000 of 70000 loaded"
                            : "";
               }));
  }
  {
    Impl i = checksum;
    i.serde.make_deserializer = [] { return std::make_shared<FourByteFingerprintDeserializer>(); };
    out.push_back(mutant("checksum_fingerprint_4_bytes", ImplementationKind::kSerde,
                         BugClass::kSizes, "IntegrityOtherChunkRejected",
                         "only the first 4 of the fingerprint's 8 bytes are compared", i, checksum,
                         [](const Impl& impl) -> std::string {
                           const ObjectKey a("AAAAAAAA", "m", 0), b("AAAABBBB", "m", 0);
                           return loads(impl.serde, *frame_of(impl.serde, a), b)
                                      ? "a frame of hash AAAAAAAA loaded under AAAABBBB"
                                      : "";
                         }));
  }
  out.push_back(key_confusion_mutant(
      "checksum_fingerprint_c_string", BugClass::kSizes, "IntegrityOtherChunkRejected",
      "the fingerprint is copied as a C string: it stops at the hash's first NUL byte", checksum,
      &hash_as_c_string, ObjectKey(std::string("ab\0cdefg", 8), "m", 0),
      ObjectKey(std::string("ab\0xyzwv", 8), "m", 0),
      "a frame loaded under a hash that differs after a NUL byte"));
  {
    Impl i = checksum;
    i.serde.make_serializer = [] { return std::make_shared<LittleEndianHashSerializer>(); };
    i.serde.make_deserializer = [] { return std::make_shared<LittleEndianHashDeserializer>(); };
    out.push_back(mutant("checksum_hash_little_endian", ImplementationKind::kSerde, BugClass::kData,
                         "MatchesReference",
                         "the XXH3 field is written little-endian: it reads its own frames only", i,
                         checksum, [](const Impl& impl) -> std::string {
                           const ObjectKey k = probe_key(1);
                           return loads(reference_checksum_serde(), *frame_of(impl.serde, k), k)
                                      ? ""
                                      : "the reference checksum cannot read its frame";
                         }));
  }
  {
    Impl i = checksum;
    i.serde.make_deserializer = [] { return std::make_shared<ZeroHashUncheckedDeserializer>(); };
    out.push_back(mutant("checksum_zero_hash_unchecked", ImplementationKind::kSerde,
                         BugClass::kData, "IntegrityRangesDetected",
                         "an all-zero hash field is taken for \"no hash\" and not checked", i,
                         checksum, [](const Impl& impl) -> std::string {
                           MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                           std::memset(frame->data() + 9, 0, 8);
                           frame->data()[kChecksumHeaderBytes] ^= std::byte{1};
                           return loads(impl.serde, *frame, probe_key(1))
                                      ? "a frame with a zeroed hash and a changed payload loaded"
                                      : "";
                         }));
  }
  {
    Impl i = aesgcm;
    i.serde.make_serializer = [make = aesgcm.serde.make_serializer] {
      return std::make_shared<CountingIvSerializer>(make());
    };
    out.push_back(mutant("aesgcm_iv_counter_per_instance", ImplementationKind::kSerde,
                         BugClass::kState, "IntegrityNoncesDistinct",
                         "IVs come from a counter that every instance starts at 0", i, aesgcm,
                         [](const Impl& impl) -> std::string {
                           MemoryObjPtr a = frame_of(impl.serde, probe_key(1));
                           MemoryObjPtr b = frame_of(impl.serde, probe_key(1));  // another instance
                           return std::memcmp(a->data() + 1, b->data() + 1, kAesGcmIvBytes) == 0
                                      ? "the first frames of two instances share their IV"
                                      : "";
                         }));
  }
  out.push_back(key_confusion_mutant(
      "aesgcm_key_cache_by_salt_prefix", BugClass::kState, "IntegrityOtherSaltRejected",
      "derived keys are cached under the salt's first 8 bytes: tenants sharing a prefix share a "
      "key",
      aesgcm, &salt_prefix_8, ObjectKey("12345678", "m", 0, 0, "tenant-a1"),
      ObjectKey("12345678", "m", 0, 0, "tenant-a2"), "tenant-a1's frame loaded as tenant-a2"));
  out.push_back(key_confusion_mutant(
      "salt_cache_ignores_case", BugClass::kState, "IntegrityOtherSaltRejected",
      "derived keys are cached under the case-folded salt: 'Tenant-A' and 'tenant-a' share a key",
      aesgcm, &salt_case_folded, ObjectKey("12345678", "m", 0, 0, "Tenant-A"),
      ObjectKey("12345678", "m", 0, 0, "tenant-a"), "Tenant-A's frame loaded as tenant-a"));
  out.push_back(key_confusion_mutant(
      "aesgcm_salt_capped_at_64_bytes", BugClass::kSizes, "IntegrityOtherSaltRejected",
      "the HKDF info is built in a 64-byte salt buffer: long salts that share 64 bytes share a "
      "key",
      aesgcm, &salt_capped_64, ObjectKey("12345678", "m", 0, 0, std::string(127, 'x') + "y"),
      ObjectKey("12345678", "m", 0, 0, std::string(127, 'x') + "z"),
      "a frame of a 128-byte salt loaded under one that differs in its last byte"));
  out.push_back(key_confusion_mutant(
      "aesgcm_aad_skips_kv_rank", BugClass::kData, "IntegrityOtherKeyFieldRejected",
      "bind_key's associated data is built without kv_rank: a frame moves to another rank", bound,
      &without_kv_rank, ObjectKey("12345678", "m", 1), ObjectKey("12345678", "m", 2),
      "a frame of kv_rank 1 loaded under kv_rank 2"));
  out.push_back(key_confusion_mutant(
      "aesgcm_aad_group_id_32_bit", BugClass::kSizes, "IntegrityOtherKeyFieldRejected",
      "bind_key's associated data holds object_group_id in 32 bits: a frame moves to a group id "
      "that differs only above bit 31",
      bound, &group_id_32_bit, ObjectKey("12345678", "m", 0, 7),
      ObjectKey("12345678", "m", 0, (std::int64_t{1} << 32) + 7),
      "a frame of group id 7 loaded under group id 2^32 + 7"));
  {
    Impl i = aesgcm;
    i.serde.make_deserializer = [make = aesgcm.serde.make_deserializer] {
      return std::make_shared<ExactLengthDeserializer>(make());
    };
    out.push_back(
        mutant("aesgcm_rejects_bytes_after_frame", ImplementationKind::kSerde, BugClass::kSizes,
               "MatchesReference",
               "a source longer than the frame is refused, where the format ignores bytes after it",
               i, aesgcm, [](const Impl& impl) -> std::string {
                 MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
                 MemoryObjPtr longer = make_object(byte_layout(frame->size() + 4));
                 std::memcpy(longer->data(), frame->data(), frame->size());
                 return loads(impl.serde, *longer, probe_key(1))
                            ? ""
                            : "a frame followed by 4 bytes was refused";
               }));
  }
  {
    const Impl chain = serde_impl(reference_fp8_checksum_chain());
    Impl i = chain;
    auto stages = [] {
      ChainStage fp8 = make_chain_stage(Json{{"type", "fp8"}});
      fp8.serializer = std::make_shared<StagedFp8Serializer>();
      return std::vector<ChainStage>{fp8, make_chain_stage(Json{{"type", "checksum"}})};
    };
    i.serde.make_serializer = [stages] { return std::make_shared<ChainSerializer>(stages()); };
    out.push_back(mutant(
        "chain_stage_buffer_caps_at_2mib", ImplementationKind::kSerde, BugClass::kSizes,
        "RoundTrip",
        "the fp8 stage's output goes through a 2 MiB staging buffer: elements past 2M come back "
        "as zeros",
        i, chain, [](const Impl& impl) -> std::string {
          const MemoryLayoutDesc layout =
              MemoryLayoutDesc::single({(2 << 20) + 100}, DType::kFloat32);
          MemoryObjPtr src = make_object(layout);
          const float one = 1.0f;
          for (std::size_t e = 0; e < layout.total_elements(); ++e) {
            std::memcpy(src->data() + 4 * e, &one, 4);
          }
          SerializerPtr ser = impl.serde.make_serializer();
          MemoryObjPtr frame = make_object(byte_layout(ser->estimate_serialized_size(layout)));
          frame->set_used_size(ser->serialize(*src, *frame, probe_key(1)));
          MemoryObjPtr out = make_object(layout);
          impl.serde.make_deserializer()->deserialize(*frame, *out, probe_key(1));
          float last = 0;
          std::memcpy(&last, out->data() + 4 * (layout.total_elements() - 1), 4);
          return last == 1.0f ? "" : "the last element came back as " + std::to_string(last);
        }));
  }
  {
    // Built on a newer PyTorch whose e4m3fn cast saturates, declared as the default
    // (non-saturating) fp8 serde. The generated inputs stay within +-448, where both casts
    // agree: only a frame of larger values (a golden vector's) shows it.
    const Impl fp8 = serde_impl(reference_fp8_serde(Fp8Format::kE4M3FN));
    Impl i = fp8;
    const Fp8SerdeOptions saturating{.format = Fp8Format::kE4M3FN,
                                     .overflow = Fp8Overflow::kSaturating};
    i.serde.make_serializer = [saturating] { return std::make_shared<Fp8Serializer>(saturating); };
    out.push_back(mutant(
        "fp8_saturates_declared_nonsaturating", ImplementationKind::kSerde, BugClass::kData,
        "MatchesGoldenVectors",
        "its e4m3fn cast saturates (PyTorch 2.12's) where the declared default gives NaN: 500.0 "
        "is written as 448",
        i, fp8, [](const Impl& impl) -> std::string {
          const MemoryLayoutDesc layout = MemoryLayoutDesc::single({1}, DType::kFloat32);
          MemoryObjPtr src = make_object(layout);
          const float big = 500.0f;
          std::memcpy(src->data(), &big, 4);
          MemoryObjPtr frame = make_object(byte_layout(8));
          impl.serde.make_serializer()->serialize(*src, *frame, probe_key(1));
          return frame->data()[0] == std::byte{0x7F} ? "" : "500.0 was not written as NaN (0x7F)";
        }));
  }
}

}  // namespace lmcache::conformance::selftest
