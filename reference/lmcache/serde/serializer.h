// File: lmcache/serde/serializer.h
//
// The synchronous serde interfaces users implement (docs/serde.md): a pure byte transform between a
// KV-shaped MemoryObj and a byte buffer. No threads, no fds; AsyncSerdeProcessor adds those.
//
// Implementations must be thread-safe: a processor with several workers calls one instance
// from several threads at once.
#pragma once

#include <cstddef>
#include <memory>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"

namespace lmcache {

class Serializer {
 public:
  virtual ~Serializer() = default;

  // serialize()
  //
  // Writes the serialized form of `src` into `dst` (a byte buffer of at least
  // estimate_serialized_size(src.layout()) bytes) and returns the bytes written. Must be
  // deterministic for the same `src`. Bytes of `dst` past the returned count stay untouched.
  // Throws std::invalid_argument (nothing written) when `dst` is too small or the layout is
  // unsupported.
  virtual std::size_t serialize(const MemoryObj& src, MemoryObj& dst) = 0;

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
  // Reads src.size() serialized bytes and fills `dst`, which already has the right layout.
  // Writes only `dst`. Throws std::invalid_argument on a short or mismatching source.
  virtual void deserialize(const MemoryObj& src, MemoryObj& dst) = 0;
};

using SerializerPtr = std::shared_ptr<Serializer>;
using DeserializerPtr = std::shared_ptr<Deserializer>;

}  // namespace lmcache
