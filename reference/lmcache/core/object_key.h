// File: lmcache/core/object_key.h
//
// ObjectKey names one KV chunk in L1 and L2. It is an immutable value type: equality and
// hashing cover every field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace lmcache {

class ObjectKey {
 public:
  // ObjectKey()
  //
  // `chunk_hash` holds raw bytes (not text). Throws std::invalid_argument when `model_name`
  // contains '@', `object_group_id` is negative, or `cache_salt` contains '@', '/', '\' or NUL
  // or is longer than kMaxCacheSaltBytes. The message names the offending value.
  ObjectKey(std::string chunk_hash, std::string model_name, std::int64_t kv_rank,
            std::int64_t object_group_id = 0, std::string cache_salt = {});

  static constexpr std::size_t kMaxCacheSaltBytes = 128;

  const std::string& chunk_hash() const { return chunk_hash_; }
  const std::string& model_name() const { return model_name_; }
  std::int64_t kv_rank() const { return kv_rank_; }
  std::int64_t object_group_id() const { return object_group_id_; }
  const std::string& cache_salt() const { return cache_salt_; }

  // chunk_hash_hex()
  //
  // Lower-case hex of chunk_hash().
  std::string chunk_hash_hex() const;

  // to_string()
  //
  // A readable form for logs and messages: "model@rank@group@salt@<hex>".
  std::string to_string() const;

  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;

 private:
  std::string chunk_hash_;
  std::string model_name_;
  std::int64_t kv_rank_;
  std::int64_t object_group_id_;
  std::string cache_salt_;
};

// int_hash_to_bytes()
//
// Test helper matching the Python `IntHash2Bytes`: 4-byte big-endian encoding of `value`.
std::string int_hash_to_bytes(std::uint32_t value);

// compute_kv_rank()
//
// ws<<24 | gr<<16 | lws<<8 | lr, as the Python `ComputeKVRank`.
std::int64_t compute_kv_rank(int world_size, int global_rank, int local_world_size, int local_rank);

}  // namespace lmcache

template <>
struct std::hash<lmcache::ObjectKey> {
  std::size_t operator()(const lmcache::ObjectKey& key) const noexcept;
};
