// File: lmcache/fs/lmcache_file_names.h
//
// LMCache's own fs layout (its fs adapter's key codec; docs/decisions.md "fs file names"): the
// object of an ObjectKey is the file
//   {model, each '/' as "-SEP-"}@{kv_rank as Python's f"{r:#010x}"}@{object_group_id as
//   f"{g:x}"}@{chunk_hash as lower-case hex}[@{cache_salt}].data
// directly under the base directory: "0x" and at least 8 hex digits for a rank (a negative one
// "-0x" and at least 7), the salt part only when the salt is non-empty. The model and salt are
// written as they are otherwise, so the mapping is LMCache's, not injective ("a/b" and "a-SEP-b"
// share a name); FsConnector uses it only under FsLayout::kLmcache.
#pragma once

#include <string>

#include "lmcache/core/object_key.h"

namespace lmcache::fs {

// The longest name LMCache's layout can give a file (a file system's limit); FsConnector stores
// a key with a longer name (which LMCache cannot store at all) split into directories.
inline constexpr std::size_t kMaxLmcacheFileNameBytes = 255;

// lmcache_file_name()
//
// The file name of `key` in LMCache's layout ("<...>.data"), whatever its length; it may hold a
// NUL when the model name does (ObjectKey allows it, no file system does).
std::string lmcache_file_name(const ObjectKey& key);

}  // namespace lmcache::fs
