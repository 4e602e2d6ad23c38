// File: lmcache/serde/checksum_serde.h
//
// The "checksum" integrity serde, wire-compatible with LMCache's (docs/integrity.md):
//   {"type": "checksum", "max_workers": 1}
// Frame per object: [1 byte version = 1][8 bytes fingerprint][8 bytes XXH3-64][payload].
//   - fingerprint: the first 8 bytes of key.chunk_hash(), zero-padded when shorter, so a payload
//     stored under another chunk's slot is rejected;
//   - XXH3-64 (seed 0) of the payload, big-endian (xxHash's canonical digest() order);
//   - payload: the object's logical bytes as they are.
// estimate_serialized_size(layout) = layout.total_bytes() + 17, exact.
//
// Deserialize takes the payload length from the destination's size(); the source may be longer
// (its tail is ignored). It throws -- the task fails, nothing is claimed loaded --
// std::invalid_argument on a truncated frame (the Deserializer contract's short source) and
// std::runtime_error on an unknown version, a fingerprint mismatch or a hash mismatch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "lmcache/core/config.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

inline constexpr std::string_view kChecksumSerdeType = "checksum";

// The frame's fixed parts.
inline constexpr std::uint8_t kChecksumFrameVersion = 1;
inline constexpr std::size_t kChecksumHeaderBytes = 1 + 8 + 8;

// checksum_fingerprint()
//
// The first 8 bytes of key.chunk_hash(), zero-padded when shorter.
std::array<std::byte, 8> checksum_fingerprint(const ObjectKey& key);

class ChecksumSerializer final : public Serializer {
 public:
  // serialize()
  //
  // Writes the frame of src.bytes() under `key` into `dst` and returns its length
  // (src.size() + 17). Throws std::invalid_argument, nothing written, when dst.size() is
  // smaller than that.
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  // layout.total_bytes() + 17.
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;
};

class ChecksumDeserializer final : public Deserializer {
 public:
  // deserialize()
  //
  // Checks the frame in `src` against `key` and copies its dst.size()-byte payload into `dst`.
  // Throws std::invalid_argument, dst untouched, on a truncated frame; std::runtime_error naming
  // the failed check (version, fingerprint, hash), dst's contents then unspecified.
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
};

// make_checksum_serde_processor()
//
// The "checksum" factory: an AsyncSerdeProcessor over the pair. Config keys: max_workers
// (integer in [1, 1024], default 1); any other key is rejected naming it.
SerdeProcessorPtr make_checksum_serde_processor(const Json& kwargs);

}  // namespace lmcache
