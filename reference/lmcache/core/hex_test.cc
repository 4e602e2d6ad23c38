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

TEST(HexFromBytes, TwoLowercaseDigitsPerByteAndRoundTrips) {
  const std::string bytes("\x00\xff\x7f\xa0\x01", 5);
  EXPECT_EQ(hex_from_bytes(bytes), "00ff7fa001");
  EXPECT_EQ(hex_from_bytes(""), "");
  std::string every;
  for (int b = 0; b < 256; ++b) every += static_cast<char>(b);
  EXPECT_EQ(bytes_from_hex(hex_from_bytes(every)), every);
}

}  // namespace
}  // namespace lmcache
