#include "lmcache/serde/serde_utils.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache {
namespace {

ObjectKey original_key() {
  return ObjectKey(int_hash_to_bytes(0xDEADBEEF), "llama-3", compute_kv_rank(4, 1, 2, 1),
                   /*object_group_id=*/3, /*cache_salt=*/"tenant-a");
}

// Ported from LMCache's Python tests.
TEST(MakeTempKey, PropagatesCacheSalt) {
  EXPECT_EQ(make_temp_key(original_key()).cache_salt(), "tenant-a");
}

// As LMCache's Python test, and object_group_id too (docs/serde.md, "Helpers").
TEST(MakeTempKey, PropagatesOtherFields) {
  ObjectKey original = original_key();
  ObjectKey temp = make_temp_key(original);
  EXPECT_EQ(temp.model_name(), original.model_name());
  EXPECT_EQ(temp.kv_rank(), original.kv_rank());
  EXPECT_EQ(temp.object_group_id(), original.object_group_id());
}

// Ported from LMCache's Python tests.
TEST(MakeTempKey, DiffersFromOriginalAndStartsWithItsHash) {
  ObjectKey original = original_key();
  ObjectKey temp = make_temp_key(original);
  EXPECT_NE(temp, original);
  EXPECT_NE(temp.chunk_hash(), original.chunk_hash());
  ASSERT_EQ(temp.chunk_hash().size(), original.chunk_hash().size() + kTempKeyRandomBytes);
  EXPECT_EQ(temp.chunk_hash().substr(0, original.chunk_hash().size()), original.chunk_hash());
}

// Ported from LMCache's Python tests.
TEST(MakeTempKey, UniqueAcrossCalls) {
  ObjectKey original = original_key();
  std::set<std::string> hashes;
  for (int i = 0; i < 1000; ++i) hashes.insert(make_temp_key(original).chunk_hash());
  EXPECT_EQ(hashes.size(), 1000u);
}

TEST(MakeTempKey, WorksForEmptyHashAndDefaultFields) {
  ObjectKey original("", "m", 0);
  ObjectKey temp = make_temp_key(original);
  EXPECT_EQ(temp.chunk_hash().size(), kTempKeyRandomBytes);
  EXPECT_EQ(temp.object_group_id(), 0);
  EXPECT_EQ(temp.cache_salt(), "");
}

TEST(OsRandomBytes, FillsTheWholeBuffer) {
  // 64 random bytes are all zero with probability 2^-512.
  unsigned char buf[64] = {};
  os_random_bytes(buf, sizeof buf);
  bool any = false;
  for (unsigned char b : buf) any |= b != 0;
  EXPECT_TRUE(any);
  EXPECT_NO_THROW(os_random_bytes(buf, 0));
}

TEST(SerializedLayoutDesc, OneUint8GroupOfTheEstimate) {
  const MemoryLayoutDesc layout({{2, 4, 16}, {10}}, {DType::kBFloat16, DType::kFloat32});
  Fp8Serializer ser;
  EXPECT_EQ(serialized_layout_desc(layout, ser), MemoryLayoutDesc::single({207}, DType::kUInt8));
  AsyncSerdeProcessor p(std::make_shared<Fp8Serializer>(), std::make_shared<Fp8Deserializer>());
  EXPECT_EQ(serialized_layout_desc(layout, p), MemoryLayoutDesc::single({207}, DType::kUInt8));
  EXPECT_EQ(serialized_layout_desc(MemoryLayoutDesc(), ser),
            MemoryLayoutDesc::single({0}, DType::kUInt8));
}

}  // namespace
}  // namespace lmcache
