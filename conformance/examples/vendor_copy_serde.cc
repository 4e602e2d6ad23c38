#include "vendor_copy_serde.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/serde/async_serde_processor.h"

namespace vendor {

std::size_t CopySerializer::serialize(const lmcache::MemoryObj& src, lmcache::MemoryObj& dst) {
  const std::size_t need = src.layout().total_bytes();
  if (dst.physical_size() < need) {
    throw std::invalid_argument("vendor copy serde: destination buffer too small: got " +
                                std::to_string(dst.physical_size()) + " bytes, need " +
                                std::to_string(need));
  }
  std::size_t offset = 0;
  for (std::size_t g = 0; g < src.layout().num_groups(); ++g) {
    auto bytes = src.group_bytes(g);
    if (!bytes.empty()) std::memcpy(dst.data() + offset, bytes.data(), bytes.size());
    offset += bytes.size();
  }
  return need;
}

std::size_t CopySerializer::estimate_serialized_size(
    const lmcache::MemoryLayoutDesc& layout) const {
  return layout.total_bytes();
}

void CopyDeserializer::deserialize(const lmcache::MemoryObj& src, lmcache::MemoryObj& dst) {
  const std::size_t need = dst.layout().total_bytes();
  if (src.size() < need) {
    throw std::invalid_argument("vendor copy serde: source buffer too small: got " +
                                std::to_string(src.size()) + " bytes, need " +
                                std::to_string(need));
  }
  if (need > 0) std::memcpy(dst.data(), src.data(), need);
}

lmcache::conformance::SerdeUnderTest copy_serde_descriptor() {
  lmcache::conformance::SerdeUnderTest d;
  d.name = "vendor_copy";
  d.make_serializer = [] { return std::make_shared<CopySerializer>(); };
  d.make_deserializer = [] { return std::make_shared<CopyDeserializer>(); };
  d.input_dtypes.assign(lmcache::all_dtypes().begin(), lmcache::all_dtypes().end());
  d.lossiness = lmcache::conformance::Lossiness::Lossless();
  return d;
}

lmcache::conformance::ProcessorUnderTest copy_processor_descriptor() {
  lmcache::conformance::ProcessorUnderTest d;
  d.name = "vendor_copy_async";
  d.make = []() -> lmcache::SerdeProcessorPtr {
    return std::make_unique<lmcache::AsyncSerdeProcessor>(std::make_shared<CopySerializer>(),
                                                          std::make_shared<CopyDeserializer>(), 2);
  };
  return d;
}

}  // namespace vendor
