// File: vendor_copy_serde.h
//
// The example vendor's serde: a lossless copy of every group's bytes, back to back (any dtype).
// It stands for whatever a vendor brings; the descriptor below is all the conformance kit needs.
#pragma once

#include "lmcache/conformance/descriptors.h"
#include "lmcache/serde/serializer.h"

namespace vendor {

class CopySerializer final : public lmcache::Serializer {
 public:
  // Writes the groups of `src` back to back; throws std::invalid_argument (writing nothing)
  // when `dst` is smaller than src's bytes.
  std::size_t serialize(const lmcache::MemoryObj& src, lmcache::MemoryObj& dst) override;
  // Exactly the layout's bytes.
  std::size_t estimate_serialized_size(const lmcache::MemoryLayoutDesc& layout) const override;
};

class CopyDeserializer final : public lmcache::Deserializer {
 public:
  // Copies dst's bytes from the front of `src`; throws std::invalid_argument (writing nothing)
  // when `src` is shorter.
  void deserialize(const lmcache::MemoryObj& src, lmcache::MemoryObj& dst) override;
};

// copy_serde_descriptor()
//
// "vendor_copy": lossless, every dtype.
lmcache::conformance::SerdeUnderTest copy_serde_descriptor();

// copy_processor_descriptor()
//
// "vendor_copy_async": the same pair behind lmcache's AsyncSerdeProcessor with 2 workers.
lmcache::conformance::ProcessorUnderTest copy_processor_descriptor();

}  // namespace vendor
