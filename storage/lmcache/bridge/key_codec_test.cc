#include "lmcache/bridge/key_codec.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace lmcache::bridge {
namespace {

using Encoder = std::function<std::string(const ObjectKey&)>;

bool filename_and_redis_safe(const std::string& s) {
  for (unsigned char c : s) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '%' || c == '@' || c == '+';
    if (!ok) return false;
  }
  return !s.empty();
}

// An adversarial key universe: fields that naive encodings confuse, crossed with each other.
std::vector<ObjectKey> adversarial_keys() {
  const std::vector<std::string> models = {"m",
                                           "org/model",
                                           "org-SEP-model",
                                           "org%2Fmodel",
                                           "org.model",
                                           "org model",
                                           "org\xc3\xa9model",
                                           "",
                                           "a%",
                                           "A",
                                           "a"};
  const std::vector<std::string> salts = {"", "s", "s%41", "sA", "x.y", "-"};
  const std::vector<std::int64_t> ranks = {0, 1, -1, std::int64_t{1} << 32, INT64_MAX, INT64_MIN};
  const std::vector<std::int64_t> groups = {0, 1, 16};
  const std::vector<std::string> hashes = {"", std::string("\0", 1), std::string("\0\1", 2), "\1",
                                           "\x10"};
  std::vector<ObjectKey> out;
  for (const auto& m : models)
    for (const auto& s : salts)
      for (std::int64_t r : ranks)
        for (std::int64_t g : groups)
          for (const auto& h : hashes) out.emplace_back(h, m, r, g, s);
  return out;
}

// The first two distinct keys with one encoding, or "" when the encoder is injective here.
std::string find_collision(const Encoder& encode) {
  std::map<std::string, ObjectKey> seen;
  for (const ObjectKey& k : adversarial_keys()) {
    auto [it, fresh] = seen.try_emplace(encode(k), k);
    if (!fresh && !(it->second == k)) {
      return it->second.to_string() + " and " + k.to_string() + " both encode to \"" + it->first +
             "\"";
    }
  }
  return {};
}

std::string hex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

TEST(KeyCodec, EncodesLmcacheShapeForPlainNames) {
  KeyCodec codec;
  ObjectKey k(std::string("\x01\xab", 2), "llama-3_8B", 5, 0);
  EXPECT_EQ(codec.encode(k), "llama-3_8B@00000005@0@01ab");
  ObjectKey salted(std::string("\xff", 1), "m", 0x1234, 26, "tenant_1");
  EXPECT_EQ(codec.encode(salted), "m@00001234@1a@ff@tenant_1");
}

TEST(KeyCodec, EscapesEveryUnsafeByte) {
  KeyCodec codec;
  ObjectKey k("h", "meta-llama/Llama-3.1 8B", -1, 0, "a.b");
  EXPECT_EQ(codec.encode(k), "meta-llama%2FLlama-3%2E1%208B@-0000001@0@68@a%2Eb");
}

TEST(KeyCodec, NamespaceIsAPrefix) {
  KeyCodec codec("run_7");
  ObjectKey k("h", "m", 0);
  EXPECT_EQ(codec.encode(k), "run_7+m@00000000@0@68");
  EXPECT_EQ(codec.decode("run_7+m@00000000@0@68"), k);
  EXPECT_EQ(codec.decode("m@00000000@0@68"), std::nullopt);  // no namespace
  EXPECT_EQ(KeyCodec("other").decode("run_7+m@00000000@0@68"), std::nullopt);
  EXPECT_EQ(KeyCodec().decode("run_7+m@00000000@0@68"), std::nullopt);
}

TEST(KeyCodec, RejectsBadNamespaces) {
  for (const char* bad : {"a+b", "a/b", "a.b", "a@b", "a b", "%"}) {
    EXPECT_THROW(KeyCodec{bad}, std::invalid_argument) << bad;
  }
  EXPECT_THROW(KeyCodec(std::string(65, 'a')), std::invalid_argument);
  EXPECT_NO_THROW(KeyCodec(std::string(64, 'a')));
}

TEST(KeyCodec, DecodeAcceptsOnlyCanonicalForms) {
  KeyCodec codec;
  ASSERT_TRUE(codec.decode("m@00000000@0@68"));
  for (const char* bad : {
           "m@0@0@68",                 // rank not padded
           "m@00000000@00@68",         // group padded
           "m@00000000@0@6",           // odd hex
           "m@00000000@0@6A",          // upper-case hash hex
           "m@0000000A@0@68",          // upper-case rank hex
           "m@00000000@0@68@",         // empty salt field
           "m%2f@00000000@0@68",       // lower-case escape
           "m%41@00000000@0@68",       // escaped safe byte
           "m%4@00000000@0@68",        // truncated escape
           "m/@00000000@0@68",         // raw unsafe byte
           "m@00000000@0",             // too few fields
           "m@00000000@0@68@s@t",      // too many fields
           "m@-0000000@0@68",          // negative zero
           "m@10000000000000000@0@68"  // rank overflow
       }) {
    EXPECT_EQ(codec.decode(bad), std::nullopt) << bad;
  }
}

TEST(KeyCodec, ExtremeRanksRoundTrip) {
  KeyCodec codec;
  for (std::int64_t r : {INT64_MIN, INT64_MIN + 1, std::int64_t{-1}, std::int64_t{0}, INT64_MAX}) {
    ObjectKey k("h", "m", r, INT64_MAX);
    EXPECT_EQ(codec.decode(codec.encode(k)), k) << r;
  }
}

TEST(KeyCodec, InjectiveAndSafeOverTheAdversarialUniverse) {
  KeyCodec codec("ns");
  EXPECT_EQ(find_collision([&](const ObjectKey& k) { return codec.encode(k); }), "");
  for (const ObjectKey& k : adversarial_keys()) {
    const std::string s = codec.encode(k);
    EXPECT_TRUE(filename_and_redis_safe(s)) << s;
    EXPECT_EQ(codec.decode(s), k) << s;
  }
}

// The injectivity check catches the encodings LMCache has used, which lose or merge fields.
TEST(KeyCodecMutants, LmcacheThreeFieldFormIsCaught) {
  // "<model>@<rank:08x>@<hash>": drops object_group_id and cache_salt.
  const std::string collision = find_collision([](const ObjectKey& k) {
    char rank[32];
    std::snprintf(rank, sizeof(rank), "%08llx", static_cast<unsigned long long>(k.kv_rank()));
    return k.model_name() + "@" + rank + "@" + hex(k.chunk_hash());
  });
  EXPECT_NE(collision, "");
}

TEST(KeyCodecMutants, SepFileNameMappingIsCaught) {
  // LMCache's file names: '/' in the model becomes "-SEP-", so "a/b" and "a-SEP-b" collide.
  KeyCodec codec;
  const std::string collision = find_collision([&](const ObjectKey& k) {
    std::string model;
    for (char c : k.model_name()) model += c == '/' ? std::string("-SEP-") : std::string(1, c);
    return ObjectKey(k.chunk_hash(), model, k.kv_rank(), k.object_group_id(), k.cache_salt())
        .to_string();
  });
  EXPECT_NE(collision, "");
}

TEST(KeyCodecMutants, CaseFoldingIsCaught) {
  // A codec whose output goes through a case-insensitive layer (a lower-cased key, a
  // case-insensitive file system) merges the models "A" and "a".
  const std::string collision = find_collision([](const ObjectKey& k) {
    std::string s = KeyCodec().encode(k);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  });
  EXPECT_NE(collision, "");
}

TEST(KeyCodecProperty, RoundTripsArbitraryKeys) {
  const bool ok = rc::check("decode(encode(k)) == k, and the encoding is safe", [] {
    const std::string hash = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
    std::string model = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
    std::erase(model, '@');
    std::string salt = *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
    std::erase_if(salt, [](char c) { return c == '@' || c == '/' || c == '\\' || c == '\0'; });
    if (salt.size() > ObjectKey::kMaxCacheSaltBytes) salt.resize(ObjectKey::kMaxCacheSaltBytes);
    const auto rank = *rc::gen::arbitrary<std::int64_t>();
    const auto group = *rc::gen::inRange<std::int64_t>(0, INT64_MAX);
    const std::string ns = *rc::gen::element<std::string>("", "a", "run-1_X");
    const ObjectKey k(hash, model, rank, group, salt);
    const KeyCodec codec(ns);
    const std::string s = codec.encode(k);
    RC_ASSERT(filename_and_redis_safe(s));
    RC_ASSERT(s.find('/') == std::string::npos && s.find('.') == std::string::npos);
    RC_ASSERT(codec.decode(s) == std::optional<ObjectKey>(k));
  });
  EXPECT_TRUE(ok);
}

TEST(KeyCodecProperty, DistinctKeysEncodeDistinctly) {
  const bool ok = rc::check("k1 != k2 implies encode(k1) != encode(k2)", [] {
    auto field = [] {
      return *rc::gen::container<std::string>(
          rc::gen::element<char>('a', 'A', '/', '.', '%', '2', 'F', '-', 'S', 'E', 'P'));
    };
    const ObjectKey k1(field(), field(), *rc::gen::inRange<std::int64_t>(-2, 3),
                       *rc::gen::inRange<std::int64_t>(0, 3), "");
    std::string salt = field();
    std::erase(salt, '/');
    const ObjectKey k2(field(), field(), *rc::gen::inRange<std::int64_t>(-2, 3),
                       *rc::gen::inRange<std::int64_t>(0, 3), salt);
    const KeyCodec codec;
    RC_ASSERT((k1 == k2) == (codec.encode(k1) == codec.encode(k2)));
  });
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace lmcache::bridge
