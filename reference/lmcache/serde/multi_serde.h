// File: lmcache/serde/multi_serde.h
//
// The multi-output serde extension (docs/serde.md, "The multi-output extension"). A MultiSerializer
// takes a fixed-length group of optional tensors (e.g. slot 0 = K, slot 1 = V) into one byte
// buffer; a MultiDeserializer fills a group of optional destinations from one byte buffer. This
// covers K and V at different dtypes and tier-split placements where one side is absent.
//
// A group is a std::vector<MemoryObjPtr> whose size equals group_size(); a null pointer is an
// absent ("None") slot:
//   - on serialize input, the caller does not supply that tensor; an implementation must throw
//     std::invalid_argument when a slot it requires is null;
//   - on deserialize output, the caller does not want that tensor; an implementation must not
//     touch the slot, and a null slot alone is not an error.
// Size estimators get a parallel LayoutDescGroup, with nullopt at absent slots.
//
// Implementations must document group_size(), what each slot carries, and which slots may be
// absent. The async wiring (a group-aware processor) is a follow-up, as in the seed.
//
// single_to_multi_serializer() / single_to_multi_deserializer() adapt a single-tensor pair to
// length-1 groups; the bytes are identical to a direct call.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

// A fixed-length group of optional objects; nullptr marks an absent slot.
using MemoryObjGroup = std::vector<MemoryObjPtr>;
// The parallel layout group; nullopt marks an absent slot.
using LayoutDescGroup = std::vector<std::optional<MemoryLayoutDesc>>;

class MultiSerializer {
 public:
  virtual ~MultiSerializer() = default;

  // group_size()
  //
  // The fixed number of slots, >= 1.
  virtual std::size_t group_size() const = 0;

  // serialize()
  //
  // Writes the group into `dst` and returns the bytes written; deterministic. Throws
  // std::invalid_argument for a group of the wrong length or a null required slot.
  virtual std::size_t serialize(const MemoryObjGroup& src, MemoryObj& dst,
                                const ObjectKey& key) = 0;

  // estimate_serialized_size()
  //
  // An upper bound for any group of these layouts; depends on the layouts only. Must accept
  // nullopt at every slot that may be absent.
  virtual std::size_t estimate_serialized_size(const LayoutDescGroup& layouts) const = 0;
};

class MultiDeserializer {
 public:
  virtual ~MultiDeserializer() = default;

  // group_size()
  //
  // The fixed number of slots, >= 1.
  virtual std::size_t group_size() const = 0;

  // deserialize()
  //
  // Fills every non-null slot of `dst` from `src`; null slots are left untouched. Throws
  // std::invalid_argument for a group of the wrong length or a short / mismatching source.
  virtual void deserialize(const MemoryObj& src, const MemoryObjGroup& dst,
                           const ObjectKey& key) = 0;
};

using MultiSerializerPtr = std::shared_ptr<MultiSerializer>;
using MultiDeserializerPtr = std::shared_ptr<MultiDeserializer>;

// validate_group_size()
//
// Throws std::invalid_argument "MultiSerde {role} group length {n} does not match expected
// {expected}" when group_len != expected. `role` is "src", "dst" or "layout".
void validate_group_size(std::size_t group_len, std::size_t expected, std::string_view role);

// single_to_multi_serializer()
//
// A group_size() == 1 MultiSerializer over `inner` (not null, else std::invalid_argument).
// serialize() throws std::invalid_argument "... expected group of size 1, got N" for a
// non-unit group and "... does not admit a None src slot" for a null slot, else returns
// inner->serialize(*src[0], dst, key). estimate_serialized_size() throws for a non-unit group
// ("expected layout group of size 1, got N") or a nullopt layout.
MultiSerializerPtr single_to_multi_serializer(SerializerPtr inner);

// single_to_multi_deserializer()
//
// A group_size() == 1 MultiDeserializer over `inner` (not null). deserialize() throws
// std::invalid_argument "... expected group of size 1, got N" for a non-unit group; a null
// slot is a deliberate skip: nothing is read or written.
MultiDeserializerPtr single_to_multi_deserializer(DeserializerPtr inner);

}  // namespace lmcache
