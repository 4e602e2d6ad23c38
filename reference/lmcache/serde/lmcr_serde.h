// File: lmcache/serde/lmcr_serde.h
//
// The "lmcr" lossless compression serde: each object's bytes as one LMCR v1 record
// (lmcr_record.h, docs/lmcr.md), LMCache's portable compressed-record format:
//   {"type": "lmcr", "framing": "raw" | "gzip", "chunk_size": 1048576, "level": 6,
//    "max_workers": 1}
// estimate_serialized_size(layout) is lmcr_max_record_size() of layout.total_bytes(): an upper
// bound (Deflate's worst case), so the stored object is usually smaller than the estimate and the
// record's own record_size says where it ends. Not key-aware: the record holds the bytes only.
//
// Deserialize reads the record at the start of src (what follows it is ignored) into dst, whose
// size must be the record's uncompressed size. A source shorter than the record's header or its
// record_size throws std::invalid_argument (the Deserializer contract's short source); any other
// failed check (magic, version, codec, framing, sizes, either CRC, a stream that is truncated,
// inflates to another size or is followed by other bytes) throws LmcrError (a
// std::runtime_error) naming it.
#pragma once

#include <string_view>

#include "lmcache/core/config.h"
#include "lmcache/serde/lmcr_record.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

inline constexpr std::string_view kLmcrSerdeType = "lmcr";

class LmcrSerializer final : public Serializer {
 public:
  // Throws std::invalid_argument when the options are bad (lmcr_validate_options()).
  explicit LmcrSerializer(LmcrEncodeOptions options);

  // serialize()
  //
  // Writes the record of src.bytes() into dst and returns its size. Throws
  // std::invalid_argument, nothing written, when dst.size() is below the estimate.
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;

 private:
  const LmcrEncodeOptions options_;
};

class LmcrDeserializer final : public Deserializer {
 public:
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
};

// LmcrSerdeConfig: the parsed kwargs of an "lmcr" serde config.
struct LmcrSerdeConfig {
  LmcrEncodeOptions options;
  std::size_t max_workers = 1;

  // from_json()
  //
  // Throws std::invalid_argument naming the key: framing other than "raw" / "gzip", chunk_size
  // not a positive multiple of 16 up to 1 GiB, level outside 0..9, max_workers outside
  // [1, 1024], an unknown key.
  static LmcrSerdeConfig from_json(const Json& kwargs);
};

// make_lmcr_serde_processor()
//
// The "lmcr" factory: an AsyncSerdeProcessor over the pair.
SerdeProcessorPtr make_lmcr_serde_processor(const Json& kwargs);

}  // namespace lmcache
