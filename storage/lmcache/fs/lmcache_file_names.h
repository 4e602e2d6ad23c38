// File: lmcache/fs/lmcache_file_names.h
//
// LMCache's own fs layout (its fs adapter's key codec, docs/l2-adapter.md "fs: LMCache's
// layout"): the object of an ObjectKey is the file
//   {model, each '/' as "-SEP-"}@{kv_rank as Python's f"{r:#010x}"}@{object_group_id as
//   f"{g:x}"}@{chunk_hash as lower-case hex}[@{cache_salt}].data
// directly under the base directory: "0x" and at least 8 hex digits for a rank (a negative one
// "-0x" and at least 7), the salt part only when the salt is non-empty. The model and salt are
// written as they are otherwise, so the mapping is LMCache's, not injective ("a/b" and "a-SEP-b"
// share a name); FsConnector uses it only under FsLayout::kLmcache.
#pragma once

#include <optional>
#include <string>

#include "lmcache/core/object_key.h"

namespace lmcache::fs {

// lmcache_file_name()
//
// The file name of `key` in LMCache's layout, or nullopt (with `why` set) when it is no file
// name: a NUL in the model name, or more than 255 bytes.
std::optional<std::string> lmcache_file_name(const ObjectKey& key, std::string* why = nullptr);

}  // namespace lmcache::fs
