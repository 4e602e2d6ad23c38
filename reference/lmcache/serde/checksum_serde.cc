#include "lmcache/serde/checksum_serde.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/serde/async_serde_processor.h"

namespace lmcache {

namespace {

// Hash and copy interleave per block, so the copy reads what the hash just brought into cache.
constexpr std::size_t kBlockBytes = 256 * 1024;

void put_be64(std::byte* out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<std::byte>(v & 0xff);
    v >>= 8;
  }
}

std::uint64_t get_be64(const std::byte* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | std::to_integer<std::uint64_t>(in[i]);
  return v;
}

// XXH3-64 (seed 0) of `from`, copying it to `to` block by block on the way (to may be null).
std::uint64_t hash_and_copy(const std::byte* from, std::byte* to, std::size_t n) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  if (XXH3_64bits_reset(&state) != XXH_OK) throw std::runtime_error("checksum: XXH3 reset failed");
  for (std::size_t off = 0; off < n; off += kBlockBytes) {
    const std::size_t len = std::min(kBlockBytes, n - off);
    XXH3_64bits_update(&state, from + off, len);
    if (to != nullptr) std::memcpy(to + off, from + off, len);
  }
  return XXH3_64bits_digest(&state);
}

}  // namespace

std::array<std::byte, 8> checksum_fingerprint(const ObjectKey& key) {
  std::array<std::byte, 8> out{};
  const std::string& hash = key.chunk_hash();
  std::memcpy(out.data(), hash.data(), std::min<std::size_t>(8, hash.size()));
  return out;
}

std::size_t ChecksumSerializer::serialize(const MemoryObj& src, MemoryObj& dst,
                                          const ObjectKey& key) {
  const std::size_t n = src.size();
  const std::size_t need = n + kChecksumHeaderBytes;
  if (dst.size() < need) {
    throw std::invalid_argument("checksum serializer: destination buffer too small: got " +
                                std::to_string(dst.size()) + " bytes, need " +
                                std::to_string(need));
  }
  std::byte* out = dst.data();
  out[0] = static_cast<std::byte>(kChecksumFrameVersion);
  const auto fp = checksum_fingerprint(key);
  std::memcpy(out + 1, fp.data(), fp.size());
  put_be64(out + 9, hash_and_copy(src.data(), out + kChecksumHeaderBytes, n));
  return need;
}

std::size_t ChecksumSerializer::estimate_serialized_size(const MemoryLayoutDesc& layout) const {
  return layout.total_bytes() + kChecksumHeaderBytes;
}

void ChecksumDeserializer::deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) {
  const std::size_t n = dst.size();
  if (src.size() < n + kChecksumHeaderBytes) {
    throw std::invalid_argument(
        "checksum deserializer: truncated frame: " + std::to_string(src.size()) + " bytes, need " +
        std::to_string(n + kChecksumHeaderBytes));
  }
  const std::byte* in = src.data();
  if (std::to_integer<std::uint8_t>(in[0]) != kChecksumFrameVersion) {
    throw std::runtime_error("checksum deserializer: unknown frame version " +
                             std::to_string(std::to_integer<int>(in[0])));
  }
  const auto fp = checksum_fingerprint(key);
  if (std::memcmp(in + 1, fp.data(), fp.size()) != 0) {
    throw std::runtime_error(
        "checksum deserializer: fingerprint mismatch: the frame was stored "
        "for another chunk than " +
        key.chunk_hash_hex());
  }
  const std::uint64_t want = get_be64(in + 9);
  const std::uint64_t got = hash_and_copy(in + kChecksumHeaderBytes, dst.data(), n);
  if (got != want) throw std::runtime_error("checksum deserializer: payload hash mismatch");
}

SerdeProcessorPtr make_checksum_serde_processor(const Json& kwargs) {
  ConfigReader reader(kwargs, "checksum serde config");
  const auto workers = static_cast<std::size_t>(reader.get_int("max_workers", 1, 1, 1024));
  reader.finish();
  return std::make_unique<AsyncSerdeProcessor>(std::make_shared<ChecksumSerializer>(),
                                               std::make_shared<ChecksumDeserializer>(), workers);
}

}  // namespace lmcache
