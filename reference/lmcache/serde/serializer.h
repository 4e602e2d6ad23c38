// File: lmcache/serde/serializer.h
//
// The synchronous serde interfaces users implement (docs/serde.md): a pure byte transform between a
// KV-shaped MemoryObj and a byte buffer. No threads, no fds; AsyncSerdeProcessor adds those.
//
// Implementations must be thread-safe: a processor with several workers calls one instance
// from several threads at once.
//
// Both directions receive the ObjectKey the object is stored under (the ORIGINAL key, never the
// wrapper's temporary L1 key), as LMCache's serde API does. A key-independent serde (fp8) ignores
// it; an integrity or encryption serde binds the frame to it (the checksum fingerprint, the
// aesgcm key derived from cache_salt), so deserialize() must get the key serialize() got.
#pragma once

#include <cstddef>
#include <memory>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache {

class Serializer {
 public:
  virtual ~Serializer() = default;

  // serialize()
  //
  // Writes the serialized form of `src`, stored under `key`, into `dst` (a byte buffer of at
  // least estimate_serialized_size(src.layout()) bytes) and returns the bytes written. Must be
  // deterministic for the same (`src`, `key`) unless the serde declares itself randomized
  // (aesgcm draws a fresh IV per call). Bytes of `dst` past the returned count stay untouched.
  // Throws std::invalid_argument (nothing written) when `dst` is too small or the layout is
  // unsupported.
  virtual std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) = 0;

  // estimate_serialized_size()
  //
  // An upper bound of serialize()'s output for any object of this layout, margin included.
  // Must depend on the layout only: the wrapper sizes a whole batch from objects[0].
  virtual std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const = 0;
};

class Deserializer {
 public:
  virtual ~Deserializer() = default;

  // deserialize()
  //
  // Reads src.size() serialized bytes, written by serialize() under the same `key`, and fills
  // `dst`, which already has the right layout. Writes only `dst`. Throws std::invalid_argument
  // on a short or mismatching source; an integrity serde also throws (std::runtime_error is
  // allowed) when the frame fails its check -- `dst`'s contents are then unspecified and must
  // not be treated as loaded.
  virtual void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) = 0;
};

using SerializerPtr = std::shared_ptr<Serializer>;
using DeserializerPtr = std::shared_ptr<Deserializer>;

}  // namespace lmcache
