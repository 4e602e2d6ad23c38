#include "lmcache/core/tensor_view.h"

#include <ATen/ops/from_blob.h>

#include <cstdint>
#include <vector>

namespace lmcache {

c10::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return c10::ScalarType::Half;
    case DType::kBFloat16:
      return c10::ScalarType::BFloat16;
    case DType::kFloat32:
      return c10::ScalarType::Float;
    case DType::kUInt8:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E5M2:
      return c10::ScalarType::Byte;
  }
  return c10::ScalarType::Byte;
}

at::Tensor group_tensor(MemoryObj& obj, std::size_t i) {
  auto bytes = obj.group_bytes(i);
  const auto& layout = obj.layout();
  std::vector<std::int64_t> sizes(layout.shapes()[i].begin(), layout.shapes()[i].end());
  return at::from_blob(bytes.data(), sizes,
                       at::TensorOptions().dtype(to_scalar_type(layout.dtypes()[i])));
}

at::Tensor byte_tensor(MemoryObj& obj) {
  return at::from_blob(obj.data(), {static_cast<std::int64_t>(obj.size())},
                       at::TensorOptions().dtype(c10::ScalarType::Byte));
}

}  // namespace lmcache
