#include "lmcache/core/object_key.h"

#include <stdexcept>
#include <utility>

#include "lmcache/core/hex.h"

namespace lmcache {

ObjectKey::ObjectKey(std::string chunk_hash, std::string model_name, std::int64_t kv_rank,
                     std::int64_t object_group_id, std::string cache_salt)
    : chunk_hash_(std::move(chunk_hash)),
      model_name_(std::move(model_name)),
      kv_rank_(kv_rank),
      object_group_id_(object_group_id),
      cache_salt_(std::move(cache_salt)) {
  if (model_name_.find('@') != std::string::npos) {
    throw std::invalid_argument("model_name must not contain '@' (got '" + model_name_ + "')");
  }
  if (object_group_id_ < 0) {
    throw std::invalid_argument("object_group_id must be >= 0 (got " +
                                std::to_string(object_group_id_) + ")");
  }
  if (cache_salt_.size() > kMaxCacheSaltBytes) {
    throw std::invalid_argument("cache_salt must be at most " + std::to_string(kMaxCacheSaltBytes) +
                                " bytes (got " + std::to_string(cache_salt_.size()) + ")");
  }
  for (char c : cache_salt_) {
    if (c == '@' || c == '/' || c == '\\' || c == '\0') {
      std::string shown = c == '\0' ? std::string("NUL") : std::string(1, c);
      throw std::invalid_argument("cache_salt must not contain '" + shown + "' (got '" +
                                  std::string(cache_salt_.c_str()) + "')");
    }
  }
}

std::string ObjectKey::chunk_hash_hex() const { return hex_from_bytes(chunk_hash_); }

std::string ObjectKey::to_string() const {
  return model_name_ + "@" + std::to_string(kv_rank_) + "@" + std::to_string(object_group_id_) +
         "@" + cache_salt_ + "@" + chunk_hash_hex();
}

std::string int_hash_to_bytes(std::uint32_t value) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * (3 - i))) & 0xFF);
  return out;
}

std::int64_t compute_kv_rank(int world_size, int global_rank, int local_world_size,
                             int local_rank) {
  return (std::int64_t{world_size} << 24) | (std::int64_t{global_rank} << 16) |
         (std::int64_t{local_world_size} << 8) | std::int64_t{local_rank};
}

}  // namespace lmcache

std::size_t std::hash<lmcache::ObjectKey>::operator()(
    const lmcache::ObjectKey& key) const noexcept {
  std::size_t h = std::hash<std::string>{}(key.chunk_hash());
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>{}(key.model_name()));
  mix(std::hash<std::int64_t>{}(key.kv_rank()));
  mix(std::hash<std::int64_t>{}(key.object_group_id()));
  mix(std::hash<std::string>{}(key.cache_salt()));
  return h;
}
