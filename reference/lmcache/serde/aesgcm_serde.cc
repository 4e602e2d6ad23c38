#include "lmcache/serde/aesgcm_serde.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "lmcache/core/regular_file.h"
#include "lmcache/serde/async_serde_processor.h"

namespace lmcache {

namespace {

// EVP takes int lengths: larger payloads go through in pieces of this size.
constexpr std::size_t kMaxEvpChunk = std::size_t{1} << 30;

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  CipherCtx() {
    if (ctx == nullptr) throw std::bad_alloc();
  }
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
  CipherCtx(const CipherCtx&) = delete;
  CipherCtx& operator=(const CipherCtx&) = delete;
};

const EVP_CIPHER* cipher_for(int bits) {
  return bits == 256 ? EVP_aes_256_gcm() : EVP_aes_128_gcm();
}

void check(int rc, const char* what) {
  if (rc != 1) throw std::runtime_error(std::string("aesgcm: OpenSSL ") + what + " failed");
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_i64(std::string& out, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}
void put_bytes(std::string& out, const std::string& s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

std::shared_ptr<const AesGcmKeyring> require(std::shared_ptr<const AesGcmKeyring> k) {
  if (!k) throw std::invalid_argument("aesgcm serde: null keyring");
  return k;
}

}  // namespace

std::string_view aesgcm_flavor_type(AesGcmFlavor flavor) {
  return flavor == AesGcmFlavor::kEncrypt ? kEncryptSerdeType : kAesGcmSerdeType;
}

std::string_view aesgcm_flavor_hkdf_label(AesGcmFlavor flavor) {
  return flavor == AesGcmFlavor::kEncrypt ? kEncryptHkdfInfoPrefix : kAesGcmHkdfInfoPrefix;
}

std::string aesgcm_key_aad(const ObjectKey& key) {
  std::string out;
  put_bytes(out, key.chunk_hash());
  put_bytes(out, key.model_name());
  put_i64(out, key.kv_rank());
  put_i64(out, key.object_group_id());
  put_bytes(out, key.cache_salt());
  return out;
}

struct AesGcmKeyring::Cache {
  std::mutex mu;
  std::unordered_map<std::string, std::string> keys;  // guarded by mu
};

AesGcmKeyring::AesGcmKeyring(std::string master_key, int aes_bits, AesGcmFlavor flavor)
    : master_key_(std::move(master_key)),
      aes_bits_(aes_bits),
      flavor_(flavor),
      cache_(std::make_shared<Cache>()) {
  if (master_key_.empty()) {
    throw std::invalid_argument(std::string(type()) + ": the master key is empty");
  }
  if (aes_bits_ != 128 && aes_bits_ != 256) {
    throw std::invalid_argument(std::string(type()) + ": aes_bits must be 128 or 256, got " +
                                std::to_string(aes_bits_));
  }
}

std::string AesGcmKeyring::key_for(const std::string& cache_salt) const {
  {
    std::lock_guard lock(cache_->mu);
    auto it = cache_->keys.find(cache_salt);
    if (it != cache_->keys.end()) return it->second;
  }
  std::string info(aesgcm_flavor_hkdf_label(flavor_));
  info += cache_salt;
  std::string key(static_cast<std::size_t>(aes_bits_ / 8), '\0');
  EVP_PKEY_CTX* pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  if (pctx == nullptr) throw std::runtime_error("aesgcm: OpenSSL has no HKDF");
  std::size_t len = key.size();
  const bool ok =
      EVP_PKEY_derive_init(pctx) == 1 && EVP_PKEY_CTX_set_hkdf_md(pctx, EVP_sha256()) == 1 &&
      EVP_PKEY_CTX_set1_hkdf_key(pctx, reinterpret_cast<const unsigned char*>(master_key_.data()),
                                 static_cast<int>(master_key_.size())) == 1 &&
      EVP_PKEY_CTX_add1_hkdf_info(pctx, reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) == 1 &&
      EVP_PKEY_derive(pctx, reinterpret_cast<unsigned char*>(key.data()), &len) == 1 &&
      len == key.size();
  EVP_PKEY_CTX_free(pctx);
  if (!ok) throw std::runtime_error("aesgcm: HKDF-SHA256 key derivation failed");
  std::lock_guard lock(cache_->mu);
  if (cache_->keys.size() >= kMaxCachedKeys) cache_->keys.clear();
  cache_->keys.emplace(cache_salt, key);
  return key;
}

AesGcmSerializer::AesGcmSerializer(AesGcmOptions options) : options_(std::move(options)) {
  require(options_.keyring);
}

AesGcmDeserializer::AesGcmDeserializer(AesGcmOptions options) : options_(std::move(options)) {
  require(options_.keyring);
}

std::size_t AesGcmSerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  return layout.total_bytes() + kAesGcmOverheadBytes;
}

std::size_t AesGcmSerializer::serialize(const MemoryObj& src, MemoryObj& dst,
                                        const ObjectKey& key) {
  const std::size_t n = src.size();
  const std::size_t need = n + kAesGcmOverheadBytes;
  if (dst.size() < need) {
    throw std::invalid_argument(
        std::string(options_.keyring->type()) + " serializer: destination buffer too small: got " +
        std::to_string(dst.size()) + " bytes, need " + std::to_string(need));
  }
  const std::string aes_key = options_.keyring->key_for(key.cache_salt());
  auto* out = reinterpret_cast<unsigned char*>(dst.data());
  out[0] = kAesGcmFrameVersion;
  unsigned char* iv = out + 1;
  if (fixed_iv_) {
    std::memcpy(iv, fixed_iv_->data(), kAesGcmIvBytes);
  } else {
    check(RAND_bytes(iv, static_cast<int>(kAesGcmIvBytes)), "RAND_bytes");
  }
  CipherCtx c;
  check(EVP_EncryptInit_ex(c.ctx, cipher_for(options_.keyring->aes_bits()), nullptr,
                           reinterpret_cast<const unsigned char*>(aes_key.data()), iv),
        "EncryptInit");
  int outl = 0;
  if (options_.bind_key) {
    const std::string aad = aesgcm_key_aad(key);
    check(
        EVP_EncryptUpdate(c.ctx, nullptr, &outl, reinterpret_cast<const unsigned char*>(aad.data()),
                          static_cast<int>(aad.size())),
        "EncryptUpdate(AAD)");
  }
  const auto* in = reinterpret_cast<const unsigned char*>(src.data());
  unsigned char* ct = out + 1 + kAesGcmIvBytes;
  for (std::size_t off = 0; off < n; off += kMaxEvpChunk) {
    const int len = static_cast<int>(std::min(kMaxEvpChunk, n - off));
    check(EVP_EncryptUpdate(c.ctx, ct + off, &outl, in + off, len), "EncryptUpdate");
  }
  check(EVP_EncryptFinal_ex(c.ctx, ct + n, &outl), "EncryptFinal");
  check(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kAesGcmTagBytes), ct + n),
        "GET_TAG");
  return need;
}

void AesGcmDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  const std::size_t n = dst.size();
  if (src.size() < n + kAesGcmOverheadBytes) {
    throw std::invalid_argument(std::string(options_.keyring->type()) +
                                " deserializer: truncated frame: " + std::to_string(src.size()) +
                                " bytes, need " + std::to_string(n + kAesGcmOverheadBytes));
  }
  const auto* in = reinterpret_cast<const unsigned char*>(src.data());
  if (in[0] != kAesGcmFrameVersion) {
    throw std::runtime_error(std::string(options_.keyring->type()) +
                             " deserializer: unknown frame version " +
                             std::to_string(static_cast<int>(in[0])));
  }
  const std::string aes_key = options_.keyring->key_for(key.cache_salt());
  CipherCtx c;
  check(EVP_DecryptInit_ex(c.ctx, cipher_for(options_.keyring->aes_bits()), nullptr,
                           reinterpret_cast<const unsigned char*>(aes_key.data()), in + 1),
        "DecryptInit");
  int outl = 0;
  if (options_.bind_key) {
    const std::string aad = aesgcm_key_aad(key);
    check(
        EVP_DecryptUpdate(c.ctx, nullptr, &outl, reinterpret_cast<const unsigned char*>(aad.data()),
                          static_cast<int>(aad.size())),
        "DecryptUpdate(AAD)");
  }
  const unsigned char* ct = in + 1 + kAesGcmIvBytes;
  auto* out = reinterpret_cast<unsigned char*>(dst.data());
  for (std::size_t off = 0; off < n; off += kMaxEvpChunk) {
    const int len = static_cast<int>(std::min(kMaxEvpChunk, n - off));
    check(EVP_DecryptUpdate(c.ctx, out + off, &outl, ct + off, len), "DecryptUpdate");
  }
  // The ctrl takes a non-const pointer but only reads the tag.
  check(EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kAesGcmTagBytes),
                            const_cast<unsigned char*>(ct + n)),
        "SET_TAG");
  unsigned char tail[16];
  if (EVP_DecryptFinal_ex(c.ctx, tail, &outl) != 1) {
    throw std::runtime_error(
        std::string(options_.keyring->type()) +
        " deserializer: authentication failed (tampered frame, wrong key or cache_salt, "
        "another serde's frame" +
        std::string(options_.bind_key ? ", or another object's frame)" : ")"));
  }
}

AesGcmSerdeConfig AesGcmSerdeConfig::from_json(const Json& kwargs, AesGcmFlavor flavor) {
  ConfigReader reader(kwargs, std::string(aesgcm_flavor_type(flavor)) + " serde config");
  AesGcmSerdeConfig out;
  const std::string provider = reader.get_string("key_provider", "hkdf");
  if (provider != "hkdf") {
    reader.error("'key_provider' must be \"hkdf\" (the only one), got '" + provider + "'");
  }
  const std::int64_t bits = reader.get_int("aes_bits", 128);
  if (bits != 128 && bits != 256) {
    reader.error("'aes_bits' must be 128 or 256, got " + std::to_string(bits));
  }
  if (!reader.has("master_key_path")) reader.error("'master_key_path' is required");
  const std::string path = reader.get_string("master_key_path");
  if (flavor == AesGcmFlavor::kAesGcm) out.options.bind_key = reader.get_bool("bind_key", false);
  out.max_workers = static_cast<std::size_t>(reader.get_int("max_workers", 1, 1, 1024));
  reader.finish();

  std::string master;
  try {
    master = read_regular_file(path, kAesGcmMaxKeyFileBytes);
  } catch (const std::invalid_argument& e) {
    reader.error(std::string("'master_key_path' ") + e.what());
  }
  if (master.empty()) reader.error("'master_key_path' '" + path + "' is an empty file");
  out.options.keyring =
      std::make_shared<AesGcmKeyring>(std::move(master), static_cast<int>(bits), flavor);
  return out;
}

namespace {

SerdeProcessorPtr make_processor(const Json& kwargs, AesGcmFlavor flavor) {
  const AesGcmSerdeConfig config = AesGcmSerdeConfig::from_json(kwargs, flavor);
  return std::make_unique<AsyncSerdeProcessor>(std::make_shared<AesGcmSerializer>(config.options),
                                               std::make_shared<AesGcmDeserializer>(config.options),
                                               config.max_workers);
}

}  // namespace

SerdeProcessorPtr make_aesgcm_serde_processor(const Json& kwargs) {
  return make_processor(kwargs, AesGcmFlavor::kAesGcm);
}

SerdeProcessorPtr make_encrypt_serde_processor(const Json& kwargs) {
  return make_processor(kwargs, AesGcmFlavor::kEncrypt);
}

}  // namespace lmcache
