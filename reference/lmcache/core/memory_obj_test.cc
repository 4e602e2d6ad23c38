#include "lmcache/core/memory_obj.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace lmcache {
namespace {

TEST(MemoryLayoutDesc, SizesAndOffsets) {
  MemoryLayoutDesc l({{2, 3}, {5}, {}}, {DType::kFloat32, DType::kBFloat16, DType::kUInt8});
  EXPECT_EQ(l.num_groups(), 3u);
  EXPECT_EQ(l.group_bytes(0), 24u);
  EXPECT_EQ(l.group_bytes(1), 10u);
  EXPECT_EQ(l.group_elements(2), 1u) << "a 0-d shape holds one element";
  EXPECT_EQ(l.group_offset(1), 24u);
  EXPECT_EQ(l.group_offset(2), 34u);
  EXPECT_EQ(l.total_bytes(), 35u);
  EXPECT_EQ(l.total_elements(), 12u);
  EXPECT_EQ(l.to_string(), "[(2,3):float32, (5):bfloat16, ():uint8]");
}

TEST(MemoryLayoutDesc, ValidatesAndCompares) {
  EXPECT_THROW(MemoryLayoutDesc({{1}}, {}), std::invalid_argument);
  EXPECT_THROW(MemoryLayoutDesc({{1, -2}}, {DType::kUInt8}), std::invalid_argument);
  EXPECT_EQ(MemoryLayoutDesc(), MemoryLayoutDesc({}, {}));
  EXPECT_EQ(MemoryLayoutDesc::single({64}, DType::kUInt8),
            MemoryLayoutDesc({{64}}, {DType::kUInt8}));
  EXPECT_NE(MemoryLayoutDesc::single({64}, DType::kUInt8),
            MemoryLayoutDesc::single({64}, DType::kFloat16));
  EXPECT_NE(MemoryLayoutDesc::single({64}, DType::kUInt8),
            MemoryLayoutDesc::single({65}, DType::kUInt8));
  EXPECT_EQ(MemoryLayoutDesc::single({0, 7}, DType::kFloat32).total_bytes(), 0u);
}

TEST(MemoryObj, AllocateIsPageAlignedAndZeroed) {
  auto obj = MemoryObj::allocate(MemoryLayoutDesc::single({3, 5}, DType::kFloat16), 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(obj->data()) % kHostBufferAlignment, 0u);
  EXPECT_EQ(obj->size(), 30u);
  EXPECT_EQ(obj->physical_size(), 100u);
  for (std::byte b : obj->physical_bytes()) EXPECT_EQ(b, std::byte{0});
}

TEST(MemoryObj, SetUsedSizeNarrowsTheLogicalView) {
  auto obj = MemoryObj::allocate(MemoryLayoutDesc::single({64}, DType::kUInt8));
  obj->set_used_size(7);
  EXPECT_EQ(obj->size(), 7u);
  EXPECT_EQ(obj->bytes().size(), 7u);
  EXPECT_EQ(obj->physical_bytes().size(), 64u);
  obj->set_used_size(0);
  EXPECT_EQ(obj->bytes().size(), 0u);
  obj->set_used_size(64);
  EXPECT_THROW(obj->set_used_size(65), std::invalid_argument);
  EXPECT_EQ(obj->size(), 64u);
}

TEST(MemoryObj, GroupsAreBackToBack) {
  auto obj = MemoryObj::allocate(MemoryLayoutDesc({{2}, {3}}, {DType::kFloat32, DType::kUInt8}));
  EXPECT_EQ(obj->group_bytes(0).data(), obj->data());
  EXPECT_EQ(obj->group_bytes(1).data(), obj->data() + 8);
  EXPECT_EQ(obj->group_bytes(1).size(), 3u);
  EXPECT_THROW(obj->group_bytes(2), std::out_of_range);
}

TEST(MemoryObj, RejectsLayoutLargerThanBuffer) {
  auto buffer = allocate_host_buffer(8);
  EXPECT_THROW(MemoryObj(buffer, buffer.get(), 8, MemoryLayoutDesc::single({3}, DType::kFloat32)),
               std::invalid_argument);
}

}  // namespace
}  // namespace lmcache
