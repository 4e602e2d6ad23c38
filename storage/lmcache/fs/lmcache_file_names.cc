#include "lmcache/fs/lmcache_file_names.h"

#include <cstdint>
#include <cstdio>

namespace lmcache::fs {

namespace {

// Python's format(v, spec) for spec "#010x" (alternate form, zero-padded to width 10 including
// the sign and "0x") and "x".
std::string python_hex(std::int64_t v, bool alternate_width_10) {
  const bool negative = v < 0;
  const std::uint64_t magnitude =
      negative ? ~static_cast<std::uint64_t>(v) + 1 : static_cast<std::uint64_t>(v);
  char digits[17];
  std::snprintf(digits, sizeof digits, "%llx", static_cast<unsigned long long>(magnitude));
  std::string body = digits;
  std::string prefix = negative ? "-" : "";
  if (alternate_width_10) {
    prefix += "0x";
    const std::size_t width = 10 - prefix.size();
    if (body.size() < width) body.insert(0, width - body.size(), '0');
  }
  return prefix + body;
}

}  // namespace

std::string lmcache_file_name(const ObjectKey& key) {
  std::string name;
  for (char c : key.model_name()) {
    if (c == '/') {
      name += "-SEP-";
    } else {
      name += c;
    }
  }
  name +=
      '@' + python_hex(key.kv_rank(), true) + '@' + python_hex(key.object_group_id(), false) + '@';
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char c : key.chunk_hash()) {
    name += kHex[c >> 4];
    name += kHex[c & 0xf];
  }
  // ObjectKey holds no '/' in a salt, so the name is one path component.
  if (!key.cache_salt().empty()) name += '@' + key.cache_salt();
  return name + ".data";
}

}  // namespace lmcache::fs
