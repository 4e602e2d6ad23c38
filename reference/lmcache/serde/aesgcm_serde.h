// File: lmcache/serde/aesgcm_serde.h
//
// LMCache's two AES-GCM confidentiality + integrity serdes, wire- and key-compatible with
// LMCache's (docs/integrity.md):
//   {"type": "aesgcm", "key_provider": "hkdf", "aes_bits": 128 | 256,
//    "master_key_path": "/path/to/key", "bind_key": false, "max_workers": 1}
//   {"type": "encrypt", "key_provider": "hkdf", "aes_bits": 128 | 256,
//    "master_key_path": "/path/to/key", "max_workers": 1}
// Frame (both): [1 byte version = 1][12-byte random IV][ciphertext || 16-byte GCM tag];
// estimate_serialized_size(layout) = layout.total_bytes() + 29, exact.
//
// The AES key of an object is HKDF-SHA256(master key, salt = empty,
// info = label || UTF-8 cache_salt, length aes_bits / 8), label "lmcache-l2-aesgcm-v1" for
// aesgcm and "lmcache-l2-encrypt-v1" for encrypt, so that neither reads the other's frames (a
// failed tag: a clean miss). Derived once per cache_salt and cached (thread-safe). IVs come from
// OpenSSL's CSPRNG (RAND_bytes), one per serialize(). No associated data by default; bind_key =
// true (beyond LMCache) puts the canonical encoding of the whole ObjectKey (aesgcm_key_aad()) in
// the AAD, so a frame moved to another key's slot fails -- such frames are not readable by LMCache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lmcache/core/config.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

inline constexpr std::string_view kAesGcmSerdeType = "aesgcm";
inline constexpr std::uint8_t kAesGcmFrameVersion = 1;
inline constexpr std::size_t kAesGcmIvBytes = 12;
inline constexpr std::size_t kAesGcmTagBytes = 16;
inline constexpr std::size_t kAesGcmOverheadBytes = 1 + kAesGcmIvBytes + kAesGcmTagBytes;
inline constexpr std::string_view kAesGcmHkdfInfoPrefix = "lmcache-l2-aesgcm-v1";
inline constexpr std::string_view kEncryptSerdeType = "encrypt";
inline constexpr std::string_view kEncryptHkdfInfoPrefix = "lmcache-l2-encrypt-v1";

// AesGcmFlavor
//
// Which of LMCache's serdes on the aesgcm frame: they differ in the HKDF label, and only
// "aesgcm" takes bind_key (beyond LMCache; "encrypt" mirrors LMCache's keys exactly).
enum class AesGcmFlavor { kAesGcm, kEncrypt };

// The serde type ("aesgcm" / "encrypt") and HKDF label of `flavor`.
std::string_view aesgcm_flavor_type(AesGcmFlavor flavor);
std::string_view aesgcm_flavor_hkdf_label(AesGcmFlavor flavor);
// The most bytes a master key file may hold (docs/integrity.md): a key is a few dozen bytes, and
// a bound keeps a path such as /dev/zero from being read until memory runs out.
inline constexpr std::size_t kAesGcmMaxKeyFileBytes = 4096;

// aesgcm_key_aad()
//
// The canonical encoding of `key` used as AAD under bind_key (docs/integrity.md): for each of
// chunk_hash, model_name, cache_salt a 4-byte big-endian length and the bytes, then kv_rank and
// object_group_id as 8-byte big-endian two's complement, in the order chunk_hash, model_name,
// kv_rank, object_group_id, cache_salt.
std::string aesgcm_key_aad(const ObjectKey& key);

// AesGcmKeyring: the master key and the per-cache_salt derived keys of one flavor
// (thread-safe).
class AesGcmKeyring {
 public:
  // Throws std::invalid_argument when `master_key` is empty or aes_bits is not 128 or 256.
  AesGcmKeyring(std::string master_key, int aes_bits, AesGcmFlavor flavor = AesGcmFlavor::kAesGcm);

  // The derived key for `cache_salt` (aes_bits / 8 bytes), from the cache after the first call.
  // Throws std::runtime_error when OpenSSL fails.
  std::string key_for(const std::string& cache_salt) const;

  int aes_bits() const { return aes_bits_; }
  AesGcmFlavor flavor() const { return flavor_; }
  // The serde type, for messages.
  std::string_view type() const { return aesgcm_flavor_type(flavor_); }

  // Cached salts beyond this are derived again (the cache is cleared), bounding memory.
  static constexpr std::size_t kMaxCachedKeys = 4096;

 private:
  struct Cache;
  const std::string master_key_;
  const int aes_bits_;
  const AesGcmFlavor flavor_;
  std::shared_ptr<Cache> cache_;
};

struct AesGcmOptions {
  std::shared_ptr<const AesGcmKeyring> keyring;  // its flavor decides the serde
  bool bind_key = false;                         // aesgcm only (the config refuses it for encrypt)
};

class AesGcmSerializer final : public Serializer {
 public:
  // Throws std::invalid_argument when options.keyring is null.
  explicit AesGcmSerializer(AesGcmOptions options);

  // serialize()
  //
  // Encrypts src.bytes() under the key derived for key.cache_salt() with a fresh random IV and
  // writes the frame into `dst`; returns src.size() + 29. Throws std::invalid_argument, nothing
  // written, when dst.size() is smaller; std::runtime_error when OpenSSL fails.
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  // layout.total_bytes() + 29.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

  // set_fixed_iv_for_testing()
  //
  // TEST ONLY (test vectors): every later serialize() uses `iv` instead of a random one, which
  // destroys GCM's security. Not reachable from any config. nullopt restores random IVs. Not
  // thread-safe against concurrent serialize().
  void set_fixed_iv_for_testing(std::optional<std::array<std::uint8_t, kAesGcmIvBytes>> iv) {
    fixed_iv_ = iv;
  }

 private:
  const AesGcmOptions options_;
  std::optional<std::array<std::uint8_t, kAesGcmIvBytes>> fixed_iv_;
};

class AesGcmDeserializer final : public Deserializer {
 public:
  // Throws std::invalid_argument when options.keyring is null.
  explicit AesGcmDeserializer(AesGcmOptions options);

  // deserialize()
  //
  // Authenticates and decrypts the frame in `src` (payload length dst.size(); the source may be
  // longer) into `dst`. Throws std::invalid_argument, dst untouched, on a truncated frame;
  // std::runtime_error on an unknown version or a failed tag (tampering, a wrong master key,
  // another cache_salt, under bind_key another key); dst's contents are then unspecified and must
  // not be used.
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

 private:
  const AesGcmOptions options_;
};

// AesGcmSerdeConfig: the parsed kwargs of an "aesgcm" or "encrypt" serde config.
struct AesGcmSerdeConfig {
  AesGcmOptions options;
  std::size_t max_workers = 1;

  // from_json()
  //
  // Reads the kwargs and the master key file (lmcache/core/regular_file.h read_regular_file():
  // opened, fstat()ed, at most kAesGcmMaxKeyFileBytes read). Throws std::invalid_argument naming
  // the problem: an unknown key, key_provider other than "hkdf", aes_bits other than 128 / 256,
  // a missing master_key_path; a master_key_path that cannot be opened or read, is not a
  // regular file (a directory, a device such as /dev/zero, a FIFO: named), holds more than
  // kAesGcmMaxKeyFileBytes bytes or none (each message names master_key_path and what was
  // found); max_workers outside [1, 1024]. For AesGcmFlavor::kEncrypt, bind_key is an unknown
  // key (LMCache's encrypt has none).
  static AesGcmSerdeConfig from_json(const Json& kwargs,
                                     AesGcmFlavor flavor = AesGcmFlavor::kAesGcm);
};

// make_aesgcm_serde_processor()
//
// The "aesgcm" factory: an AsyncSerdeProcessor over the pair.
SerdeProcessorPtr make_aesgcm_serde_processor(const Json& kwargs);

// make_encrypt_serde_processor()
//
// The "encrypt" factory: the same pair with AesGcmFlavor::kEncrypt keys.
SerdeProcessorPtr make_encrypt_serde_processor(const Json& kwargs);

}  // namespace lmcache
