#include "lmcache/core/bitmap.h"

#include <gtest/gtest.h>

namespace lmcache {
namespace {

TEST(Bitmap, StartsClearWithOptionalPrefix) {
  Bitmap empty(10);
  EXPECT_EQ(empty.popcount(), 0u);
  EXPECT_EQ(empty.to_string(), "0000000000");
  Bitmap prefix(10, 3);
  EXPECT_EQ(prefix.to_string(), "1110000000");
  Bitmap over(4, 99);
  EXPECT_EQ(over.popcount(), 4u);
  EXPECT_TRUE(over.all());
}

TEST(Bitmap, OutOfRangeIsIgnored) {
  Bitmap b(5);
  b.set(5);
  b.set(100);
  EXPECT_EQ(b.popcount(), 0u);
  EXPECT_FALSE(b.test(5));
  b.set(4);
  b.clear(77);
  EXPECT_TRUE(b.test(4));
}

TEST(Bitmap, LsbFirstWithinBytes) {
  Bitmap b(16);
  b.set(0);
  b.set(9);
  EXPECT_EQ(b.set_indices(), (std::vector<std::size_t>{0, 9}));
  EXPECT_EQ(b.to_string(), "1000000001000000");
}

TEST(Bitmap, OperatorsUseSmallerSizeAndMaskInversion) {
  Bitmap a(10, 6);
  Bitmap b(7);
  b.set(1);
  b.set(6);
  EXPECT_EQ((a & b).size(), 7u);
  EXPECT_EQ((a & b).to_string(), "0100000");
  EXPECT_EQ((a | b).to_string(), "1111111");
  Bitmap inv = ~Bitmap(10, 6);
  EXPECT_EQ(inv.to_string(), "0000001111");
  EXPECT_EQ(inv.popcount(), 4u);
  EXPECT_EQ(~~a, a);
}

TEST(Bitmap, EqualityComparesSizeAndBits) {
  EXPECT_EQ(Bitmap(3, 1), Bitmap(3, 1));
  EXPECT_NE(Bitmap(3, 1), Bitmap(4, 1));
  EXPECT_NE(Bitmap(3, 1), Bitmap(3, 2));
  EXPECT_EQ(Bitmap(0).size(), 0u);
}

}  // namespace
}  // namespace lmcache
