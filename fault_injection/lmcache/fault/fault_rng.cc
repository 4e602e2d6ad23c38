#include "lmcache/fault/fault_rng.h"

namespace lmcache::fault {

Fnv1a64& Fnv1a64::add(std::span<const std::byte> bytes) {
  for (std::byte b : bytes) {
    h_ ^= static_cast<std::uint8_t>(b);
    h_ *= 0x100000001b3ULL;
  }
  return *this;
}

Fnv1a64& Fnv1a64::add(std::string_view text) {
  add_u64(text.size());  // length first, so ("ab","c") and ("a","bc") differ
  return add(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

Fnv1a64& Fnv1a64::add_u64(std::uint64_t v) {
  std::byte raw[8];
  for (int i = 0; i < 8; ++i) raw[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFF);
  return add(std::span<const std::byte>(raw, 8));
}

std::uint64_t digest_keys(const std::vector<ObjectKey>& keys) {
  Fnv1a64 h;
  h.add_u64(keys.size());
  for (const auto& k : keys) {
    h.add(k.chunk_hash())
        .add(k.model_name())
        .add_u64(static_cast<std::uint64_t>(k.kv_rank()))
        .add_u64(static_cast<std::uint64_t>(k.object_group_id()))
        .add(k.cache_salt());
  }
  return h.value();
}

std::uint64_t digest_objects(const std::vector<MemoryObjPtr>& objects) {
  Fnv1a64 h;
  h.add_u64(objects.size());
  for (const auto& o : objects) {
    if (!o) {
      h.add_u64(~0ULL);
      continue;
    }
    auto bytes = std::as_const(*o).bytes();
    h.add_u64(bytes.size()).add(bytes);
  }
  return h.value();
}

std::uint64_t FaultRng::draw(std::string_view site, std::uint64_t a, std::uint64_t b) const {
  std::uint64_t s = Fnv1a64().add(site).value();
  return splitmix64(seed_ ^ splitmix64(s ^ splitmix64(a ^ splitmix64(b))));
}

double FaultRng::uniform(std::string_view site, std::uint64_t a, std::uint64_t b) const {
  return static_cast<double>(draw(site, a, b) >> 11) * 0x1.0p-53;
}

bool FaultRng::chance(double p, std::string_view site, std::uint64_t a, std::uint64_t b) const {
  if (p <= 0.0) return false;
  if (p >= 1.0) return true;
  return uniform(site, a, b) < p;
}

std::uint64_t FaultRng::below(std::uint64_t n, std::string_view site, std::uint64_t a,
                              std::uint64_t b) const {
  return n == 0 ? 0 : draw(site, a, b) % n;
}

std::uint64_t OccurrenceCounter::next(std::uint64_t stream, std::uint64_t digest) {
  std::uint64_t nth;
  {
    std::lock_guard lock(mu_);
    nth = seen_[{stream, digest}]++;
  }
  return splitmix64(digest ^ splitmix64(stream)) ^ (nth * 0x9E3779B97F4A7C15ULL);
}

}  // namespace lmcache::fault
