#include "lmcache/testing/stored_objects.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "lmcache/testing/adapter_waits.h"

namespace lmcache::storage_testing {

MemoryObjPtr fp8_exact_bf16_object(std::size_t elements, std::size_t seed) {
  // 1, 0.5, -2, 0, 8, -0.25: each one e4m3fn code.
  static constexpr std::uint16_t kValues[] = {0x3F80, 0x3F00, 0xC000, 0x0000, 0x4100, 0xBE80};
  constexpr std::size_t kCount = sizeof kValues / sizeof kValues[0];
  MemoryObjPtr o = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(elements)}, DType::kBFloat16));
  auto* p = reinterpret_cast<std::uint16_t*>(o->data());
  for (std::size_t i = 0; i < elements; ++i) p[i] = kValues[(i + seed) % kCount];
  return o;
}

StoredSample store_fp8_exact_sample(L2AdapterInterface& a, std::size_t elements) {
  MemoryObjPtr object = fp8_exact_bf16_object(elements);
  ObjectKey key(int_hash_to_bytes(1), "meta-llama/Llama-3.1-8B", 3, 0, "tenant");
  std::optional<L2StoreResult> stored = wait_store(a, a.submit_store_task({key}, {object}));
  return {std::move(object), std::move(key), std::move(stored)};
}

std::string loads_back(L2AdapterInterface& a, const ObjectKey& key, const MemoryObj& want) {
  MemoryObjPtr got = MemoryObj::allocate(want.layout());
  const std::optional<Bitmap> bits = wait_load(a, a.submit_load_task({key}, {got}));
  if (!bits) return "the load did not complete";
  if (bits->to_string() != "1") return "a miss (bitmap " + bits->to_string() + ")";
  if (std::memcmp(got->data(), want.data(), want.layout().total_bytes()) != 0) {
    return "a hit with other bytes than were stored";
  }
  return {};
}

}  // namespace lmcache::storage_testing
