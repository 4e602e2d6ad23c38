#include "lmcache/serde/serde_utils.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

namespace lmcache {

namespace {

MemoryLayoutDesc byte_layout(std::size_t bytes) {
  return MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes)}, DType::kUInt8);
}

}  // namespace

MemoryLayoutDesc serialized_layout_desc(const MemoryLayoutDesc& layout, const Serializer& serde) {
  return byte_layout(serde.estimate_serialized_size(layout));
}

MemoryLayoutDesc serialized_layout_desc(const MemoryLayoutDesc& layout,
                                        const SerdeProcessor& serde) {
  return byte_layout(serde.estimate_serialized_size(layout));
}

void os_random_bytes(void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    ssize_t got = ::getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

ObjectKey make_temp_key(const ObjectKey& original) {
  std::string hash = original.chunk_hash();
  const std::size_t prefix = hash.size();
  hash.resize(prefix + kTempKeyRandomBytes);
  os_random_bytes(hash.data() + prefix, kTempKeyRandomBytes);
  return ObjectKey(std::move(hash), original.model_name(), original.kv_rank(),
                   original.object_group_id(), original.cache_salt());
}

}  // namespace lmcache
