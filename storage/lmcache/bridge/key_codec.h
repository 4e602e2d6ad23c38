// File: lmcache/bridge/key_codec.h
//
// KeyCodec: the one mapping between ObjectKey and the string key a native connector stores
// under. It is deterministic, injective (decode(encode(k)) == k for every key, and decode
// accepts only canonical encodings, so two different strings never name the same key), and its
// output is safe both as a Redis key and as a file name: it uses only the bytes
// [A-Za-z0-9_%@+-], so it holds no '/', no NUL, no '.', no space and no non-ASCII byte.
//
// Format (version 1), LMCache's salted key shape with its two free-text fields escaped:
//
//   [<namespace>+]<model>@<kv_rank>@<object_group_id>@<chunk_hash>[@<cache_salt>]
//
//   model, cache_salt  every byte outside [A-Za-z0-9_-] is written as '%' and two upper-case
//                      hex digits ("meta-llama/Llama-3.1" -> "meta-llama%2FLlama-3%2E1");
//   kv_rank            lower-case hex, zero-padded to 8 characters; a negative rank is '-'
//                      followed by the magnitude padded to 7 (Python's f"{kv_rank:08x}");
//   object_group_id    lower-case hex, no padding (f"{object_group_id:x}");
//   chunk_hash         lower-case hex of the raw bytes (empty for an empty hash);
//   cache_salt         present only when non-empty;
//   namespace          optional, [A-Za-z0-9_-]{1,64}; '+' never occurs in the rest, so the
//                      first '+' ends it. Lets several runs or tenants share one store without
//                      touching each other's keys.
//
// For a model name and salt made only of [A-Za-z0-9_-] the string is exactly LMCache's
// `_object_key_to_string` (salted form). Names with '/', '.' or other bytes differ: LMCache keeps
// them raw in Redis keys and maps '/' to "-SEP-" in file names, which is not injective ("a/b"
// and "a-SEP-b" collide), so this codec escapes instead.
//
// File-name limits are the connector's business: the fs connector splits a name longer than
// its component limit into directories (see lmcache/fs/fs_connector.h). On a case-insensitive
// file system two model names differing only in case would collide; Linux file systems are
// case-sensitive.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lmcache/core/object_key.h"

namespace lmcache::bridge {

class KeyCodec {
 public:
  static constexpr std::size_t kMaxNamespaceBytes = 64;

  // KeyCodec()
  //
  // A codec writing every key under `key_namespace` (empty: no namespace). Throws
  // std::invalid_argument naming the namespace when it is longer than kMaxNamespaceBytes or
  // holds a byte outside [A-Za-z0-9_-].
  explicit KeyCodec(std::string key_namespace = {});

  const std::string& key_namespace() const { return namespace_; }

  // encode()
  //
  // The string key of `key` (format above). Never throws for a valid ObjectKey.
  std::string encode(const ObjectKey& key) const;

  // decode()
  //
  // The ObjectKey whose encode() is exactly `encoded` under this codec's namespace; nullopt for
  // any other string (another namespace, a malformed or non-canonical form such as lower-case
  // escapes, an escaped safe byte, an unpadded rank, upper-case hex, an empty salt field).
  std::optional<ObjectKey> decode(std::string_view encoded) const;

  // is_valid_namespace()
  //
  // True for a string the constructor accepts.
  static bool is_valid_namespace(std::string_view key_namespace);

 private:
  std::string namespace_;
  std::string prefix_;  // namespace_ + '+', or empty
};

}  // namespace lmcache::bridge
