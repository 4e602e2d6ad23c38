#include "lmcache/conformance/generators.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/conformance/depth.h"

namespace lmcache::conformance {

rc::Gen<Shape> gen_small_shape(std::size_t max_elements) {
  return rc::gen::exec([max_elements] {
    const int rank = *uniform_in_range(0, 4);
    Shape shape;
    for (int d = 0; d < rank; ++d) {
      // Zero, one and odd extents are where packing and indexing bugs live.
      std::int64_t dim = *rc::gen::weightedOneOf<std::int64_t>({
          {1, rc::gen::just<std::int64_t>(0)},
          {3, rc::gen::just<std::int64_t>(1)},
          {4, rc::gen::map(uniform_in_range<std::int64_t>(1, 9),
                           [](std::int64_t k) { return 2 * k + 1; })},
          {2, uniform_in_range<std::int64_t>(2, 17)},
      });
      shape.push_back(dim);
    }
    // Halve the largest extent until the shape fits the element cap.
    auto elements = [&] {
      std::size_t n = 1;
      for (auto d : shape) n *= static_cast<std::size_t>(d);
      return n;
    };
    while (elements() > max_elements) {
      auto it = std::max_element(shape.begin(), shape.end());
      *it = std::max<std::int64_t>(1, *it / 2);
    }
    return shape;
  });
}

rc::Gen<MemoryLayoutDesc> gen_small_layout(std::vector<DType> dtypes, LayoutLimits limits) {
  if (dtypes.empty()) throw std::invalid_argument("gen_small_layout: no dtypes to draw from");
  return rc::gen::exec([dtypes, limits] {
    const int groups = *uniform_in_range(limits.min_groups, limits.max_groups + 1);
    std::vector<Shape> shapes;
    std::vector<DType> types;
    for (int g = 0; g < groups; ++g) {
      shapes.push_back(*gen_small_shape(limits.max_group_elements));
      types.push_back(*rc::gen::elementOf(dtypes));
    }
    return MemoryLayoutDesc(std::move(shapes), std::move(types));
  });
}

namespace {

// Byte sizes where memory behaviour changes: a page, L1d (32 / 48 KiB), L2 (256 KiB - 2 MiB),
// an L3 slice (8 MiB).
constexpr std::size_t kCacheBytes[] = {4096,   32768,    49152,    262144,
                                       524288, 1u << 20, 2u << 20, 8u << 20};
// Vector widths in elements: 128- to 2048-bit registers over 8- to 32-bit lanes, and the block
// sizes chunked loops use.
constexpr std::size_t kLaneCounts[] = {4, 8, 16, 32, 64, 128, 256};

std::size_t clamp_count(std::size_t n, std::size_t max_elements) {
  return std::min(n, max_elements);
}

}  // namespace

rc::Gen<std::uint64_t> gen_seed() {
  return rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<std::uint64_t>());
}

SizeLimits size_limits() {
  const DepthProfile& p = current_profile();
  SizeLimits l;
  l.min_groups = 1;
  l.max_groups = 6;
  l.max_group_elements = p.max_group_elements;
  l.max_total_elements = 2 * p.max_group_elements;
  return l;
}

SizeLimits size_limits_with_chunks() {
  SizeLimits l = size_limits();
  l.max_chunk_bytes = current_profile().max_chunk_bytes;
  return l;
}

rc::Gen<std::size_t> gen_chunk_bytes(std::size_t max_bytes) {
  return rc::gen::exec([max_bytes]() -> std::size_t {
    constexpr std::size_t kMin = 256u << 10;
    if (max_bytes <= kMin) return std::max<std::size_t>(1, max_bytes);
    std::vector<std::size_t> sizes;
    for (std::size_t b = kMin; b <= max_bytes; b *= 2) sizes.push_back(b);
    const int kind = *rc::gen::weightedElement<int>({{4, 0}, {3, 1}, {3, 2}});
    std::size_t n = *rc::gen::elementOf(sizes);
    if (kind == 1) {
      n = static_cast<std::size_t>(static_cast<long long>(n) + *uniform_in_range(-1, 2));
    } else if (kind == 2) {
      n = *uniform_in_range<std::size_t>(n / 2 + 1, n + 1);
    }
    return std::clamp<std::size_t>(n, 1, max_bytes);
  });
}

rc::Gen<std::size_t> gen_element_count(std::size_t max_elements) {
  return rc::gen::exec([max_elements]() -> std::size_t {
    const int top_bit = std::max(1, static_cast<int>(std::bit_width(max_elements)) - 1);
    const int kind =
        *rc::gen::weightedElement<int>({{20, 0}, {22, 1}, {18, 2}, {10, 3}, {20, 4}, {6, 5}});
    std::size_t n = 0;
    switch (kind) {
      case 0:  // tiny, zero included
        n = *uniform_in_range<std::size_t>(0, 18);
        break;
      case 1: {  // around a multiple of a vector width
        std::size_t w = *rc::gen::elementOf(
            std::vector<std::size_t>(std::begin(kLaneCounts), std::end(kLaneCounts)));
        std::size_t k = *uniform_in_range<std::size_t>(1, 9);
        int d = *uniform_in_range(-1, 2);
        n = static_cast<std::size_t>(static_cast<long long>(w * k) + d);
        break;
      }
      case 2: {  // 2^k - 1, 2^k, 2^k + 1
        int k = *uniform_in_range(2, top_bit + 1);
        int d = *uniform_in_range(-1, 2);
        n = static_cast<std::size_t>(static_cast<long long>(std::size_t{1} << k) + d);
        break;
      }
      case 3: {  // a cache size in bytes, for 1-, 2- and 4-byte elements
        std::size_t bytes = *rc::gen::elementOf(
            std::vector<std::size_t>(std::begin(kCacheBytes), std::end(kCacheBytes)));
        std::size_t per = *rc::gen::elementOf(std::vector<std::size_t>{1, 2, 4});
        int d = *uniform_in_range(-1, 2);
        n = static_cast<std::size_t>(static_cast<long long>(bytes / per) + d);
        break;
      }
      case 4: {  // anything up to a few thousand, log-uniform
        int k = *uniform_in_range(0, std::min(top_bit, 12) + 1);
        n = *uniform_in_range<std::size_t>(std::size_t{1} << k, (std::size_t{2} << k) + 1);
        break;
      }
      default: {  // anything up to the maximum, log-uniform
        int k = *uniform_in_range(0, top_bit + 1);
        n = *uniform_in_range<std::size_t>(std::size_t{1} << k, (std::size_t{2} << k) + 1);
        break;
      }
    }
    return clamp_count(n, max_elements);
  });
}

rc::Gen<Shape> gen_shape_of(std::size_t elements) {
  return rc::gen::exec([elements]() -> Shape {
    const auto n = static_cast<std::int64_t>(elements);
    if (n == 1) {
      return *rc::gen::elementOf(std::vector<Shape>{{}, {1}, {1, 1}});
    }
    const int rank = *uniform_in_range(1, 4);
    if (n == 0) {
      std::int64_t other = *uniform_in_range<std::int64_t>(1, 6);
      if (rank == 1) return {0};
      if (rank == 2) return *rc::gen::elementOf(std::vector<Shape>{{0, other}, {other, 0}});
      return {other, 0, 3};
    }
    if (rank == 1) return {n};
    // Split off a small factor that divides n (head dims, a layer count).
    auto factor = [](std::int64_t m) -> std::int64_t {
      for (std::int64_t f : {2, 3, 4, 8, 16, 5, 7}) {
        if (m % f == 0 && m / f > 1) return f;
      }
      return 1;
    };
    const std::int64_t a = factor(n);
    if (rank == 2 || a == 1) return {a, n / a};
    const std::int64_t b = factor(n / a);
    return {a, b, n / a / b};
  });
}

rc::Gen<MemoryLayoutDesc> gen_layout(std::vector<DType> dtypes, SizeLimits limits) {
  if (dtypes.empty()) throw std::invalid_argument("gen_layout: no dtypes to draw from");
  return rc::gen::exec([dtypes = std::move(dtypes), limits] {
    const int groups = *uniform_in_range(limits.min_groups, limits.max_groups + 1);
    std::vector<Shape> shapes;
    std::vector<DType> types;
    std::size_t room = limits.max_total_elements;
    // A KV chunk: one group of 256 KiB and more, the rest of the layout kept small.
    int chunk_group = -1;
    if (limits.max_chunk_bytes > 0 && groups > 0 && *uniform_in_range(0, 25) == 0) {
      chunk_group = *uniform_in_range(0, groups);
      room = std::min<std::size_t>(room, 1u << 12);
    }
    for (int g = 0; g < groups; ++g) {
      const DType dtype = *rc::gen::elementOf(dtypes);
      std::size_t n = 0;
      if (g == chunk_group) {
        n = std::max<std::size_t>(1,
                                  *gen_chunk_bytes(limits.max_chunk_bytes) / element_size(dtype));
      } else {
        n = *gen_element_count(std::min(limits.max_group_elements, room));
        room -= std::min(room, n);
      }
      if (n == 0 && !limits.allow_empty_groups) n = 1;
      shapes.push_back(*gen_shape_of(n));
      types.push_back(dtype);
    }
    return MemoryLayoutDesc(std::move(shapes), std::move(types));
  });
}

rc::Gen<MemoryLayoutDesc> gen_layout_of_any_size(std::vector<DType> dtypes,
                                                 std::size_t max_chunk_bytes) {
  if (dtypes.empty()) throw std::invalid_argument("gen_layout_of_any_size: no dtypes");
  return rc::gen::exec([dtypes = std::move(dtypes), max_chunk_bytes] {
    auto group = [&](std::size_t budget_bytes) -> std::pair<Shape, DType> {
      const DType dtype = *rc::gen::elementOf(dtypes);
      const std::size_t es = element_size(dtype);
      const int cls = *rc::gen::weightedElement<int>(
          {{3, 0}, {2, 1}, {3, 2}, {2, 3}, {max_chunk_bytes > 0 ? 1 : 0, 4}});
      std::size_t bytes = 0;
      switch (cls) {
        case 0:
          bytes = *uniform_in_range<std::size_t>(0, 18) * es;
          break;
        case 1:
          bytes = *uniform_in_range<std::size_t>(18, 257);
          break;
        case 2:
          bytes = *rc::gen::weightedOneOf<std::size_t>(
              {{1, rc::gen::element<std::size_t>(4095, 4096, 4097, 32768)},
               {3, uniform_in_range<std::size_t>(257, (64u << 10) + 1)}});
          break;
        case 3:
          bytes = *rc::gen::weightedOneOf<std::size_t>(
              {{1, rc::gen::element<std::size_t>(65535, 65536, 65537, 65600)},
               {2, uniform_in_range<std::size_t>(64u << 10, (2u << 20) + 1)}});
          break;
        default:
          bytes = *gen_chunk_bytes(max_chunk_bytes);
          break;
      }
      bytes = std::min(bytes, budget_bytes);
      return {*gen_shape_of(bytes / es), dtype};
    };
    std::vector<Shape> shapes;
    std::vector<DType> types;
    const std::size_t budget = std::max<std::size_t>(max_chunk_bytes, 2u << 20);
    auto [shape, dtype] = group(budget);
    shapes.push_back(shape);
    types.push_back(dtype);
    if (*uniform_in_range(0, 4) == 0) {
      auto [shape2, dtype2] = group(1u << 12);
      shapes.push_back(shape2);
      types.push_back(dtype2);
    }
    return MemoryLayoutDesc(std::move(shapes), std::move(types));
  });
}

rc::Gen<std::size_t> gen_batch_size(std::size_t max_batch) {
  if (max_batch == 0) throw std::invalid_argument("gen_batch_size: max_batch is 0");
  return rc::gen::exec([max_batch]() -> std::size_t {
    std::vector<std::size_t> edges = {7, 8, 9, 15, 16, 17, 63, 64, 65};
    std::erase_if(edges, [&](std::size_t e) { return e > max_batch; });
    const int kind = *rc::gen::weightedElement<int>({{3, 0}, {5, 1}, {4, 2}, {3, 3}});
    if (kind == 0 || max_batch == 1) return 1;
    if (kind == 1)
      return *uniform_in_range<std::size_t>(1, std::min<std::size_t>(max_batch, 6) + 1);
    if (kind == 2 && !edges.empty()) return *rc::gen::elementOf(edges);
    return *uniform_in_range<std::size_t>(1, max_batch + 1);
  });
}

namespace {

std::string hash_bytes(std::uint64_t seed, std::size_t length) {
  std::string h(length, '\0');
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i < length; ++i) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    h[i] = static_cast<char>(x >> 56);
  }
  return h;
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"m",
                                                 "conformance-model",
                                                 "meta-llama/Llama-3.1-8B-Instruct",
                                                 "model with spaces",
                                                 "mod\xc3\xa8le-\xe6\xa8\xa1\xe5\x9e\x8b",
                                                 std::string(200, 'n')};
  return names;
}

const std::vector<std::int64_t>& kv_ranks() {
  static const std::vector<std::int64_t> ranks = {0,
                                                  1,
                                                  -1,
                                                  compute_kv_rank(8, 3, 4, 1),
                                                  std::numeric_limits<std::int64_t>::max(),
                                                  std::numeric_limits<std::int64_t>::min()};
  return ranks;
}

const std::vector<std::int64_t>& group_ids() {
  static const std::vector<std::int64_t> ids = {0, 1, 7, std::int64_t{1} << 31,
                                                std::numeric_limits<std::int64_t>::max()};
  return ids;
}

// Salts whose members share prefixes and lengths: a key cache indexed by a salt's prefix, length
// or a weak hash of it hands one tenant another's key.
const std::vector<std::string>& cache_salts() {
  static const std::vector<std::string> salts = [] {
    constexpr std::size_t kMax = ObjectKey::kMaxCacheSaltBytes;
    std::vector<std::string> v = {"",          "t",          "tenant",      "tenant-a", "tenant-b",
                                  "tenant-a1", "tenant-a-1", "s\xc3\xa4lt", "salt b"};
    v.push_back(std::string(kMax - 1, 'x') + "y");
    v.push_back(std::string(kMax - 1, 'x') + "z");
    v.push_back(std::string(kMax - 1, 'x'));
    v.push_back(std::string(kMax, 'z'));
    return v;
  }();
  return salts;
}

// A hash of `length` bytes with NUL bytes anywhere: none, one, a run, or only NULs.
std::string gen_hash(std::size_t length) {
  std::string hash = hash_bytes(*gen_seed(), length);
  switch (*uniform_in_range(0, 6)) {
    case 0:  // a NUL at any position
      hash[*uniform_in_range<std::size_t>(0, length)] = '\0';
      break;
    case 1: {  // a run of NULs
      const auto from = *uniform_in_range<std::size_t>(0, length);
      const auto n = *uniform_in_range<std::size_t>(1, length - from + 1);
      std::fill_n(hash.begin() + static_cast<std::ptrdiff_t>(from), n, '\0');
      break;
    }
    case 2:  // only NULs
      if (*uniform_in_range(0, 3) == 0) hash.assign(length, '\0');
      break;
    default:
      break;
  }
  return hash;
}

// A salt of the family above, or a random one that extends a member (a shared prefix).
std::string gen_salt() {
  std::string salt = *rc::gen::elementOf(cache_salts());
  if (*uniform_in_range(0, 4) == 0 && salt.size() < ObjectKey::kMaxCacheSaltBytes) {
    const auto extra =
        *uniform_in_range<std::size_t>(1, ObjectKey::kMaxCacheSaltBytes - salt.size() + 1);
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789-_.:";
    std::uint64_t x = *gen_seed();
    for (std::size_t i = 0; i < extra; ++i, x = x * 6364136223846793005ull + 1) {
      salt += kChars[(x >> 33) % (sizeof(kChars) - 1)];
    }
  }
  return salt;
}

}  // namespace

rc::Gen<ObjectKey> gen_object_key() {
  return rc::gen::exec([] {
    const std::size_t length = *rc::gen::weightedOneOf<std::size_t>(
        {{3, rc::gen::elementOf(std::vector<std::size_t>{1, 7, 8, 9, 16, 32, 64})},
         {2, uniform_in_range<std::size_t>(1, 65)}});
    return ObjectKey(gen_hash(length), *rc::gen::elementOf(model_names()),
                     *rc::gen::elementOf(kv_ranks()), *rc::gen::elementOf(group_ids()), gen_salt());
  });
}

const char* key_field_name(KeyField field) {
  switch (field) {
    case KeyField::kChunkHash:
      return "chunk_hash";
    case KeyField::kModelName:
      return "model_name";
    case KeyField::kKvRank:
      return "kv_rank";
    case KeyField::kObjectGroupId:
      return "object_group_id";
    case KeyField::kCacheSalt:
      return "cache_salt";
  }
  return "?";
}

namespace {

// `v` with one bit of its upper half flipped (the sign bit too when `sign`): a value equal to `v`
// in its low 32 bits, which a field encoded or compared as 32 bits cannot tell from it.
std::int64_t flip_high_bit(std::int64_t v, bool sign) {
  const int bit = *uniform_in_range(32, sign ? 64 : 63);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(v) ^ (std::uint64_t{1} << bit));
}

}  // namespace

rc::Gen<ObjectKey> gen_key_varied_in(ObjectKey key, KeyField field) {
  return rc::gen::exec([key = std::move(key), field] {
    std::string hash = key.chunk_hash();
    std::string model = key.model_name();
    std::int64_t rank = key.kv_rank();
    std::int64_t group = key.object_group_id();
    std::string salt = key.cache_salt();
    constexpr auto kMaxI64 = std::numeric_limits<std::int64_t>::max();
    constexpr auto kMinI64 = std::numeric_limits<std::int64_t>::min();
    switch (field) {
      case KeyField::kChunkHash:
        switch (hash.empty() ? 1 : *uniform_in_range(0, 5)) {
          case 0:
          case 1: {  // one byte changed, at any position (first 8 bytes as often as the rest)
            if (hash.empty()) hash.push_back('\0');
            const std::size_t at =
                *uniform_in_range(0, 2) == 0
                    ? *uniform_in_range<std::size_t>(0, std::min<std::size_t>(8, hash.size()))
                    : *uniform_in_range<std::size_t>(0, hash.size());
            hash[at] = static_cast<char>(hash[at] ^ *uniform_in_range(1, 256));
            break;
          }
          case 2:  // one byte appended
            hash.push_back(static_cast<char>(*uniform_in_range(0, 256)));
            break;
          case 3:  // the last byte removed
            if (hash.size() > 1) {
              hash.pop_back();
            } else {
              hash.push_back('\0');
            }
            break;
          default:  // a NUL appended (zero padding must not make two hashes one)
            hash.push_back('\0');
            break;
        }
        break;
      case KeyField::kModelName:
        if (model.empty() || *uniform_in_range(0, 2) == 0) {
          model += *rc::gen::element('x', '/', ' ', '0');
        } else {
          model.back() = static_cast<char>(model.back() == 'q' ? 'r' : 'q');
        }
        break;
      case KeyField::kKvRank: {
        const std::int64_t options[] = {
            rank == kMaxI64 ? rank - 1 : rank + 1, rank == kMinI64 ? rank + 1 : rank - 1,
            rank == 0 ? 1 : (rank == kMinI64 ? kMaxI64 : -rank),
            rank == kMaxI64 ? kMinI64 : kMaxI64, flip_high_bit(rank, true)};
        rank = options[*uniform_in_range(0, 5)];
        break;
      }
      case KeyField::kObjectGroupId: {
        const std::int64_t options[] = {group == kMaxI64 ? group - 1 : group + 1,
                                        group == 0 ? 1 : group - 1, group == kMaxI64 ? 0 : kMaxI64,
                                        flip_high_bit(group, false)};  // never negative
        group = options[*uniform_in_range(0, 4)];
        break;
      }
      case KeyField::kCacheSalt: {
        const int how = salt.empty() ? 1 : *uniform_in_range(0, 5);
        if (how == 0) {  // the last byte changed: same length, same prefix
          salt.back() = static_cast<char>(salt.back() == 'q' ? 'r' : 'q');
        } else if (how == 1) {  // one byte appended, or the last replaced at the limit
          if (salt.size() < ObjectKey::kMaxCacheSaltBytes) {
            salt += 'q';
          } else {
            salt.back() = static_cast<char>(salt.back() == 'q' ? 'r' : 'q');
          }
        } else if (how == 2) {  // the last byte removed: a prefix of the original
          salt.pop_back();
        } else if (how == 3) {  // emptied
          salt.clear();
        } else {  // the letters' case flipped: a key cache on a case-folded salt confuses them
          bool flipped = false;
          for (char& ch : salt) {
            if (std::isalpha(static_cast<unsigned char>(ch))) {
              ch = static_cast<char>(ch ^ 0x20);
              flipped = true;
            }
          }
          if (!flipped) salt.back() = static_cast<char>(salt.back() == 'q' ? 'r' : 'q');
        }
        break;
      }
    }
    return ObjectKey(std::move(hash), std::move(model), rank, group, std::move(salt));
  });
}

bool padded_prefix_differs(const std::string& a, const std::string& b, std::size_t n) {
  if (n == 0) return a != b;
  for (std::size_t i = 0; i < n; ++i) {
    const char x = i < a.size() ? a[i] : '\0';
    const char y = i < b.size() ? b[i] : '\0';
    if (x != y) return true;
  }
  return false;
}

std::vector<ObjectKey> key_family(std::uint64_t seed, std::size_t n) {
  std::vector<ObjectKey> keys;
  keys.reserve(n);
  // Field values indexed by how many times a field has been varied, so every key is new.
  // The base hash's length by seed: LMCache's 16 and 32 bytes and lengths past them, so that a
  // key cut to a prefix of its hash (the first 32 bytes of a 64-byte hash) confuses siblings
  // whose last byte differs.
  static constexpr std::size_t kBaseHashLengths[] = {16, 64, 33, 32, 48, 16, 40};
  const std::size_t base_length = kBaseHashLengths[seed % std::size(kBaseHashLengths)];
  for (std::size_t i = 0; i < n; ++i) {
    if (i == 0) {
      keys.emplace_back(hash_bytes(seed, base_length), "conformance-model", 0, 0, "");
      continue;
    }
    const ObjectKey& from = keys[(i - 1) / 2];  // a tree: each key has a parent one field away
    const std::size_t round = i / 6 + 1;
    std::string hash = from.chunk_hash();
    std::string model = from.model_name();
    std::int64_t rank = from.kv_rank();
    std::int64_t group = from.object_group_id();
    std::string salt = from.cache_salt();
    switch (i % 6) {
      case 0:  // same length, last byte changed
        hash.back() = static_cast<char>(hash.back() ^ static_cast<char>(round));
        break;
      case 1:  // a prefix or an extension of the parent's hash
        hash = round % 2 ? hash.substr(0, hash.size() - 1 - (round % 4))
                         : hash + std::string(round % 5 + 1, '\0');
        if (hash.empty()) hash = std::string(1, static_cast<char>(round));
        break;
      case 2:
        model += "-" + std::to_string(round);
        break;
      case 3:
        rank = rank == 0 ? -static_cast<std::int64_t>(round) : rank + 1000 * round;
        break;
      case 4:
        group += static_cast<std::int64_t>(round);
        break;
      default:
        salt = (salt.size() + 8 > ObjectKey::kMaxCacheSaltBytes ? std::string() : salt) + "s" +
               std::to_string(round);
        break;
    }
    ObjectKey key(std::move(hash), std::move(model), rank, group, std::move(salt));
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
      key = ObjectKey(hash_bytes(seed + i, 16), "conformance-model", 0, 0, "");  // never a copy
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

std::ostream& operator<<(std::ostream& os, const SerdeCase& c) {
  os << "layout " << c.layout.to_string() << ", data seed " << c.data_seed;
  if (c.slack > 0) os << ", " << c.slack << " junk bytes past the layout";
  if (!(c.key == probe_key())) os << ", key " << c.key.to_string();
  return os;
}

rc::Gen<SerdeCase> gen_small_serde_case(std::vector<DType> dtypes, LayoutLimits limits) {
  // A braced list evaluates left to right: the layout is drawn before the seed.
  return rc::gen::exec([dtypes = std::move(dtypes), limits] {
    return SerdeCase{.layout = *gen_small_layout(dtypes, limits), .data_seed = *gen_seed()};
  });
}

rc::Gen<SerdeCase> gen_serde_case(std::vector<DType> dtypes, SizeLimits limits) {
  return rc::gen::exec([dtypes = std::move(dtypes), limits] {
    SerdeCase c;
    c.layout = *gen_layout(dtypes, limits);
    c.data_seed = *gen_seed();
    if (*uniform_in_range(0, 4) != 0) c.key = *gen_object_key();
    c.slack = *rc::gen::weightedOneOf<std::size_t>({{2, rc::gen::just<std::size_t>(0)},
                                                    {2, uniform_in_range<std::size_t>(1, 64)},
                                                    {1, rc::gen::just<std::size_t>(4096)}});
    return c;
  });
}

ValueSpec value_spec_for(const SerdeUnderTest& serde) {
  return ValueSpec{serde.max_abs_input, serde.preserves_nan, serde.preserves_inf};
}

MemoryObjPtr make_source(const SerdeCase& c, const ValueSpec& spec) {
  const std::size_t bytes = c.layout.total_bytes();
  MemoryObjPtr obj = make_object(c.layout, bytes + c.slack);
  fill_values(*obj, spec, c.data_seed);
  if (obj->physical_size() > bytes) {
    fill_bytes(obj->physical_bytes().subspan(bytes), c.data_seed ^ 0x5A5A5A5Aull);
  }
  return obj;
}

}  // namespace lmcache::conformance

namespace lmcache {
void showValue(const MemoryLayoutDesc& layout, std::ostream& os) { os << layout.to_string(); }
}  // namespace lmcache
