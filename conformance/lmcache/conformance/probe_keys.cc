#include "lmcache/conformance/probe_keys.h"

#include <string>
#include <utility>

namespace lmcache::conformance {

ObjectKey probe_key(std::uint64_t i) {
  std::string hash(8, '\0');
  for (int b = 0; b < 8; ++b) hash[7 - b] = static_cast<char>((i >> (8 * b)) & 0xff);
  return ObjectKey(std::move(hash), "conformance-probe", 0, 0, "");
}

std::vector<ObjectKey> probe_keys(std::size_t n) {
  std::vector<ObjectKey> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) keys.push_back(probe_key(i));
  return keys;
}

}  // namespace lmcache::conformance
