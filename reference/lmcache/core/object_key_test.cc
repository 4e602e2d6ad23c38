#include "lmcache/core/object_key.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <unordered_set>

namespace lmcache {
namespace {

using ::testing::HasSubstr;

TEST(ObjectKey, EqualityAndHashCoverEveryField) {
  ObjectKey base(int_hash_to_bytes(1), "m", 0, 0, "");
  std::vector<ObjectKey> variants = {ObjectKey(int_hash_to_bytes(2), "m", 0, 0, ""),
                                     ObjectKey(int_hash_to_bytes(1), "n", 0, 0, ""),
                                     ObjectKey(int_hash_to_bytes(1), "m", 1, 0, ""),
                                     ObjectKey(int_hash_to_bytes(1), "m", 0, 1, ""),
                                     ObjectKey(int_hash_to_bytes(1), "m", 0, 0, "s")};
  std::unordered_set<ObjectKey> set{base};
  for (const auto& v : variants) {
    EXPECT_NE(v, base);
    set.insert(v);
  }
  EXPECT_EQ(set.size(), 6u);
  EXPECT_EQ(ObjectKey(int_hash_to_bytes(1), "m", 0), base);
  EXPECT_EQ(std::hash<ObjectKey>{}(ObjectKey(int_hash_to_bytes(1), "m", 0)),
            std::hash<ObjectKey>{}(base));
}

TEST(ObjectKey, ValidationNamesTheValue) {
  try {
    ObjectKey("h", "bad@name", 0);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad@name"));
  }
  EXPECT_THROW(ObjectKey("h", "m", 0, -1), std::invalid_argument);
  for (const std::string& salt :
       std::vector<std::string>{"a@b", "a/b", "a\\b", std::string("a\0b", 3)}) {
    EXPECT_THROW(ObjectKey("h", "m", 0, 0, salt), std::invalid_argument) << salt;
  }
  EXPECT_NO_THROW(ObjectKey("h", "m", 0, 0, std::string(128, 's')));
  EXPECT_THROW(ObjectKey("h", "m", 0, 0, std::string(129, 's')), std::invalid_argument);
}

TEST(ObjectKey, Helpers) {
  EXPECT_EQ(int_hash_to_bytes(0x01020304), std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(ObjectKey(int_hash_to_bytes(0xABCD), "m", 3).chunk_hash_hex(), "0000abcd");
  EXPECT_EQ(compute_kv_rank(4, 3, 2, 1), (4 << 24) | (3 << 16) | (2 << 8) | 1);
}

}  // namespace
}  // namespace lmcache
