#include "lmcache/core/hex.h"

#include <gtest/gtest.h>

#include <string>

namespace lmcache {
namespace {

TEST(BytesFromHex, ReadsPairsInEitherCaseWithSpacesBetween) {
  EXPECT_EQ(bytes_from_hex("00ff7F a0\n01"), std::string("\x00\xff\x7f\xa0\x01", 5));
  EXPECT_EQ(bytes_from_hex(""), std::string());
}

TEST(BytesFromHex, RejectsOddDigitsAndNonHex) {
  EXPECT_EQ(bytes_from_hex("abc"), std::nullopt);
  EXPECT_EQ(bytes_from_hex("0g"), std::nullopt);
  EXPECT_EQ(bytes_from_hex("0 1"), std::nullopt);  // a space inside a pair
}

}  // namespace
}  // namespace lmcache
