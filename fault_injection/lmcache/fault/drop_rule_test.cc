// Tests of the Python-compatible load-drop rule. The golden values were computed with
// CPython's hashlib (python3 -c "import hashlib; hashlib.blake2b(text.encode(),
// digest_size=8)..."), so these tests pin the C++ rule to the Python one.
#include "lmcache/fault/drop_rule.h"

#include <gtest/gtest.h>

#include <vector>

namespace lmcache::fault {
namespace {

ObjectKey test_key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "test_model", 0); }

std::vector<ObjectKey> test_keys(std::size_t n) {
  std::vector<ObjectKey> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back(test_key(static_cast<std::uint32_t>(i)));
  return keys;
}

TEST(DropRule, RoundHalfEvenMatchesPythonRound) {
  EXPECT_EQ(round_half_even(0.5), 0);
  EXPECT_EQ(round_half_even(1.5), 2);
  EXPECT_EQ(round_half_even(2.5), 2);
  EXPECT_EQ(round_half_even(3.5), 4);
  EXPECT_EQ(round_half_even(2.4999), 2);
  EXPECT_EQ(round_half_even(2.5001), 3);
  EXPECT_EQ(round_half_even(0.0), 0);
  EXPECT_EQ(round_half_even(7.0), 7);
}

TEST(DropRule, RateTextIsThePythonFormat) {
  EXPECT_EQ(LoadDropRule::rate_text(42, test_key(3)), "42:00000003:test_model:0:0:");
  EXPECT_EQ(LoadDropRule::rate_text(-7, test_key(9)), "-7:00000009:test_model:0:0:");
  ObjectKey k(int_hash_to_bytes(11), "m-1", 3, 2, "tenant-a");
  EXPECT_EQ(LoadDropRule::rate_text(42, k), "42:0000000b:m-1:3:2:tenant-a");
}

// Golden (seed, key) -> BLAKE2b-64 big-endian digest and bucket, from CPython.
TEST(DropRule, GoldenDigestsMatchPython) {
  struct Golden {
    std::int64_t seed;
    std::uint32_t key;
    std::uint64_t digest;
    std::uint64_t bucket;
  };
  const Golden golden[] = {
      {0, 0, 12748565322123073344ULL, 73344},    {0, 1, 5137529148660723386ULL, 723386},
      {42, 3, 6195807919559777738ULL, 777738},   {42, 7, 14433795936158578931ULL, 578931},
      {1234, 5, 3003233711653633845ULL, 633845}, {-7, 9, 13625583114665153233ULL, 153233},
  };
  for (const auto& g : golden) {
    SCOPED_TRACE(LoadDropRule::rate_text(g.seed, test_key(g.key)));
    EXPECT_EQ(LoadDropRule::rate_digest(g.seed, test_key(g.key)), g.digest);
    EXPECT_EQ(LoadDropRule::rate_bucket(g.seed, test_key(g.key)), g.bucket);
  }
  ObjectKey k(int_hash_to_bytes(11), "m-1", 3, 2, "tenant-a");
  EXPECT_EQ(LoadDropRule::rate_digest(42, k), 4619157907929226522ULL);
  EXPECT_EQ(LoadDropRule::rate_bucket(42, k), 226522u);
}

// The drop sets Python computes for whole loads (item 89's setting).
TEST(DropRule, GoldenDropSetsMatchPython) {
  LoadDropRule rule;
  rule.rate = 0.3;
  rule.seed = 42;
  EXPECT_EQ(rule.dropped_positions(test_keys(64)),
            (std::vector<std::size_t>{2,  4,  14, 23, 26, 27, 28, 29, 30, 32, 33,
                                      34, 38, 40, 41, 46, 49, 52, 55, 59, 61, 62}));
  rule.seed = 1234;
  EXPECT_EQ(rule.dropped_positions(test_keys(64)),
            (std::vector<std::size_t>{4,  20, 23, 25, 27, 28, 33, 34, 41, 42,
                                      43, 45, 46, 48, 49, 52, 56, 57, 58, 59}));
  rule.seed = 0;
  rule.rate = 0.25;
  EXPECT_EQ(rule.dropped_positions(test_keys(200)).size(), 49u);
}

TEST(DropRule, ThresholdTruncatesLikePythonInt) {
  LoadDropRule rule;
  rule.rate = 0.3;
  EXPECT_EQ(rule.rate_threshold(), 300000);
  rule.rate = 8e-07;  // 0.7999999999999999 -> 0
  EXPECT_EQ(rule.rate_threshold(), 0);
  rule.rate = 1.5e-06;
  EXPECT_EQ(rule.rate_threshold(), 1);
  rule.rate = 1.0;
  EXPECT_EQ(rule.rate_threshold(), 1000000);
  EXPECT_TRUE(rule.drops_by_rate(test_key(0)));  // every bucket is < 1e6
  rule.rate = 0.0;
  EXPECT_FALSE(rule.drops_by_rate(test_key(0)));
}

// Item 86: r = 0.5 drops index 4 of 8 (3.5 -> 4) and index 2 of 4 (1.5 -> 2).
TEST(DropRule, GapTailRatioPositionAndScaling) {
  LoadDropRule rule;
  rule.gap_tail_ratios = {0.5};
  EXPECT_EQ(rule.dropped_positions(test_keys(8)), std::vector<std::size_t>{4});
  EXPECT_EQ(rule.dropped_positions(test_keys(4)), std::vector<std::size_t>{2});
  EXPECT_EQ(rule.dropped_positions(test_keys(6)), std::vector<std::size_t>{2});  // 2.5 -> 2
  rule.gap_tail_ratios = {0.25};
  EXPECT_EQ(rule.dropped_positions(test_keys(9)), std::vector<std::size_t>{6});
  EXPECT_TRUE(rule.dropped_positions({}).empty());
}

// Item 87: r = 0.0 drops the last position and r = 1.0 the first.
TEST(DropRule, GapTailRatioEndpoints) {
  LoadDropRule rule;
  rule.gap_tail_ratios = {0.0};
  EXPECT_EQ(rule.dropped_positions(test_keys(8)), std::vector<std::size_t>{7});
  rule.gap_tail_ratios = {1.0};
  EXPECT_EQ(rule.dropped_positions(test_keys(8)), std::vector<std::size_t>{0});
  rule.gap_tail_ratios = {0.0, 1.0};
  EXPECT_EQ(rule.dropped_positions(test_keys(1)), std::vector<std::size_t>{0});
}

TEST(DropRule, GapIndicesBeyondTheLoadHaveNoEffect) {
  LoadDropRule rule;
  rule.gap_indices = {1, 4, 6, 100};
  EXPECT_EQ(rule.dropped_positions(test_keys(8)), (std::vector<std::size_t>{1, 4, 6}));
  EXPECT_EQ(rule.dropped_positions(test_keys(3)), (std::vector<std::size_t>{1}));
  EXPECT_FALSE(rule.drops(test_keys(3), 4));
  EXPECT_FALSE(rule.drops(test_keys(3), 3));
}

// Item 88 (hash version): a content-keyed drop follows the key, not the position.
TEST(DropRule, ContentKeyedDropsFollowTheKey) {
  std::vector<ObjectKey> keys = test_keys(8);
  LoadDropRule by_hash;
  by_hash.drop_chunk_hashes = {keys[3].chunk_hash()};
  EXPECT_EQ(by_hash.dropped_positions(keys), std::vector<std::size_t>{3});
  std::swap(keys[0], keys[3]);
  EXPECT_EQ(by_hash.dropped_positions(keys), std::vector<std::size_t>{0});

  // The rate rule is content-keyed too: seed 7, rate 0.1 drops keys 5 and 10 of 0..15
  // wherever they sit.
  LoadDropRule by_rate;
  by_rate.seed = 7;
  by_rate.rate = 0.1;
  std::vector<ObjectKey> sixteen = test_keys(16);
  EXPECT_EQ(by_rate.dropped_positions(sixteen), (std::vector<std::size_t>{5, 10}));
  std::vector<ObjectKey> moved = {sixteen[10], sixteen[1], sixteen[5]};
  EXPECT_EQ(by_rate.dropped_positions(moved), (std::vector<std::size_t>{0, 2}));
}

// Item 89: the same seed drops the same keys in two instances; another seed differs.
TEST(DropRule, RateDropIsDeterministicAcrossInstances) {
  auto drops = [](std::int64_t seed) {
    LoadDropRule rule;
    rule.rate = 0.3;
    rule.seed = seed;
    return rule.dropped_positions(test_keys(64));
  };
  auto a = drops(42), b = drops(42), c = drops(1234);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// Item 90: rate 0.25 over 200 keys drops between 25 and 75.
TEST(DropRule, RateDropWithinTolerance) {
  LoadDropRule rule;
  rule.rate = 0.25;
  for (std::int64_t seed : {0, 1, 2, 99}) {
    rule.seed = seed;
    auto n = rule.dropped_positions(test_keys(200)).size();
    EXPECT_GE(n, 25u) << "seed " << seed;
    EXPECT_LE(n, 75u) << "seed " << seed;
  }
}

TEST(DropRule, AllRulesCombine) {
  LoadDropRule rule;
  EXPECT_FALSE(rule.active());
  rule.gap_indices = {0};
  rule.gap_tail_ratios = {0.0};
  EXPECT_TRUE(rule.active());
  EXPECT_EQ(rule.dropped_positions(test_keys(5)), (std::vector<std::size_t>{0, 4}));
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rule.drops(test_keys(5), i), i == 0 || i == 4) << i;
  }
}

}  // namespace
}  // namespace lmcache::fault
