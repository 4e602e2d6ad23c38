// key_codec_fuzzer: the string keys of the native connectors (KeyCodec), both ways.
//
// The resp and fs connectors store every object under KeyCodec's string (a Redis key, a file
// name), and strings come back from storage: another client's keys, files renamed or made by
// hand. KeyCodec (storage/lmcache/bridge/key_codec.h) promises a bijection between ObjectKeys
// and canonical strings. Each input is decoded as a string and, from the same bytes, an ObjectKey
// is built and encoded. Beyond ASan and UBSan, it checks:
//   - decode() never throws, and a key it returns encodes back to exactly the string: no
//     non-canonical form is accepted, so two strings never name one key;
//   - decode(encode(k)) == k for the key built from the input, whose string is the namespace
//     prefix ("run-1+") then only [A-Za-z0-9_%@-]: safe as a Redis key and as a file name.
//
// Input (fuzz/tools/make_seeds.py writes it): the namespace (none or "run-1"), the key's kv_rank
// (8 bytes, little-endian) and object_group_id (8 bytes, its sign bit cleared), then the string,
// which is also where the key's model name ('@' dropped), chunk hash and cache salt (the bytes an
// ObjectKey refuses dropped, at most 128) come from.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "lmcache/bridge/key_codec.h"
#include "lmcache/fuzz/fuzz_support.h"

namespace lmcache::fuzz_internal {
namespace {

using bridge::KeyCodec;

std::uint64_t read_u64(FuzzInput& in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t{in.byte()} << (8 * i);
  return v;
}

// A byte of a key string after its namespace prefix ('+' only ends the prefix).
bool is_key_byte(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '%' || c == '@' || c == '-';
}

void fuzz_one(FuzzInput& in) {
  static const KeyCodec kCodecs[] = {KeyCodec(), KeyCodec("run-1")};
  const KeyCodec& codec = kCodecs[in.byte() % 2];
  const auto rank = static_cast<std::int64_t>(read_u64(in));
  const auto group = static_cast<std::int64_t>(read_u64(in) & INT64_MAX);
  const auto rest = in.rest();
  const std::string text(rest.begin(), rest.end());

  std::optional<ObjectKey> decoded;
  try {
    decoded = codec.decode(text);
  } catch (...) {
    LMCACHE_FUZZ_FAIL("decode threw " + describe_current_exception());
  }
  if (decoded) {
    LMCACHE_FUZZ_CHECK(
        codec.encode(*decoded) == text,
        "decode accepted '" + text + "', whose key encodes as '" + codec.encode(*decoded) + "'");
  }

  std::string model = text;
  std::erase(model, '@');
  std::string salt = text;
  std::erase_if(salt, [](char c) { return c == '@' || c == '/' || c == '\\' || c == '\0'; });
  salt.resize(std::min(salt.size(), ObjectKey::kMaxCacheSaltBytes));
  const ObjectKey key(text, model, rank, group, salt);
  const std::string encoded = codec.encode(key);
  const std::string prefix = codec.key_namespace().empty() ? "" : codec.key_namespace() + "+";
  LMCACHE_FUZZ_CHECK(encoded.compare(0, prefix.size(), prefix) == 0,
                     "'" + encoded + "' lacks the namespace prefix '" + prefix + "'");
  LMCACHE_FUZZ_CHECK(std::all_of(encoded.begin() + static_cast<std::ptrdiff_t>(prefix.size()),
                                 encoded.end(), is_key_byte),
                     "'" + encoded + "' holds a byte outside [A-Za-z0-9_%@-] after its prefix");
  const std::optional<ObjectKey> back = codec.decode(encoded);
  LMCACHE_FUZZ_CHECK(back && *back == key,
                     "'" + encoded + "' does not decode to its key " + key.to_string());
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
