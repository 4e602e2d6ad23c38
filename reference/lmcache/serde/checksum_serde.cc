#include "lmcache/serde/checksum_serde.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // libxxhash's runtime dispatch: the widest SIMD the CPU has
#define LMCACHE_XXH3_UPDATE XXH3_64bits_update_dispatch
#else
#define LMCACHE_XXH3_UPDATE XXH3_64bits_update
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstdint>
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
// Objects from this size on are copied with non-temporal stores, as glibc's memcpy does for
// copies larger than its share of the cache: neither the frame nor the loaded object is read
// again soon, and streaming skips reading the destination lines in first.
constexpr std::size_t kStreamFromBytes = 4u << 20;

// Copies one block with every store aligned. The payload sits 17 bytes into the frame, and
// glibc's memcpy of block-sized copies to such a misaligned destination ran 2-4x slower than
// to an aligned one on the development machine (rep movsb on AMD Zen 3; bench/RESULTS.md).
void copy_block(std::byte* to, const std::byte* from, std::size_t n, bool stream) {
  std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(to) % 64) % 64;
  head = std::min(head, n);
  std::memcpy(to, from, head);
  std::size_t i = head;
#if defined(__SSE2__)
  if (stream) {
    for (; i + 64 <= n; i += 64) {
      const auto* in = reinterpret_cast<const __m128i*>(from + i);
      auto* out = reinterpret_cast<__m128i*>(to + i);
      const __m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1);
      const __m128i c = _mm_loadu_si128(in + 2), d = _mm_loadu_si128(in + 3);
      _mm_stream_si128(out, a);
      _mm_stream_si128(out + 1, b);
      _mm_stream_si128(out + 2, c);
      _mm_stream_si128(out + 3, d);
    }
  }
#else
  (void)stream;
#endif
  for (; i + 64 <= n; i += 64) std::memcpy(std::assume_aligned<64>(to + i), from + i, 64);
  std::memcpy(to + i, from + i, n - i);
}

// XXH3-64 of from[0, n), copying the bytes to `to` (when not null) block by block while each
// block is still in cache from hashing it.
std::uint64_t hash_and_copy(const std::byte* from, std::byte* to, std::size_t n) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  if (XXH3_64bits_reset(&state) != XXH_OK) throw std::runtime_error("checksum: XXH3 reset failed");
  const bool stream = n >= kStreamFromBytes;
  for (std::size_t off = 0; off < n; off += kBlockBytes) {
    const std::size_t len = std::min(kBlockBytes, n - off);
    LMCACHE_XXH3_UPDATE(&state, from + off, len);
    if (to != nullptr) copy_block(to + off, from + off, len, stream);
  }
#if defined(__SSE2__)
  // Non-temporal stores are weakly ordered: fence them before the caller publishes the result
  // to another thread (a mutex release does not order them).
  if (stream && to != nullptr) _mm_sfence();
#endif
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
