#include "lmcache/core/tensor_view.h"

#include <gtest/gtest.h>

namespace lmcache {
namespace {

TEST(TensorView, GroupViewsShareMemoryWithoutCopying) {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc({{2, 3}, {4}}, {DType::kFloat32, DType::kFloat8E5M2}));
  at::Tensor g0 = group_tensor(*obj, 0);
  EXPECT_EQ(g0.scalar_type(), c10::ScalarType::Float);
  EXPECT_EQ(g0.sizes(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(g0.data_ptr(), static_cast<void*>(obj->data()));
  g0.fill_(1.5f);
  EXPECT_EQ(reinterpret_cast<float*>(obj->data())[5], 1.5f);

  at::Tensor g1 = group_tensor(*obj, 1);
  EXPECT_EQ(g1.scalar_type(), c10::ScalarType::Byte) << "fp8 is viewed as uint8";
  EXPECT_EQ(g1.data_ptr(), static_cast<void*>(obj->data() + 24));
  EXPECT_THROW(group_tensor(*obj, 2), std::out_of_range);
}

TEST(TensorView, ByteViewFollowsUsedSize) {
  auto obj = MemoryObj::allocate(MemoryLayoutDesc::single({16}, DType::kUInt8));
  obj->set_used_size(5);
  EXPECT_EQ(byte_tensor(*obj).numel(), 5);
  EXPECT_EQ(to_scalar_type(DType::kBFloat16), c10::ScalarType::BFloat16);
  EXPECT_EQ(to_scalar_type(DType::kFloat16), c10::ScalarType::Half);
}

}  // namespace
}  // namespace lmcache
