// File: lmcache/conformance/generators.h
//
// RapidCheck generators for the conformance properties. The input space they cover:
//   - element counts of a group from 0 to millions (the depth's max_group_elements), with most
//     weight on boundaries: tiny counts, SIMD widths (k*w - 1, k*w, k*w + 1 for w = 4..256),
//     2^k - 1, 2^k, 2^k + 1, and byte sizes around a page and the L1 / L2 / L3 cache sizes;
//   - shapes of rank 0-3 for each count (zero-element groups keep a zero dimension);
//   - layouts of several groups mixing the declared dtypes;
//   - batch sizes from 1 to past 64, weighted on 1 and on the bitmap byte boundaries 8k +- 1;
//   - KV-chunk-sized groups (256 KiB up to the depth's max_chunk_bytes: 16 MiB at standard, past
//     2^24 elements at exhaustive), drawn rarely, one group per layout;
//   - object keys over the whole key domain (hash lengths 1-64 with NUL bytes anywhere, model
//     names with '/', spaces and UTF-8, extreme kv_ranks and group ids, salts of 0-128 bytes
//     that share prefixes), keys that differ from a given key in exactly one field (a hash byte
//     at any position, the hash's length, the model, the rank, the group, the salt's last byte
//     or length), and key families whose members differ in exactly one field;
//   - serde cases: a layout, a data seed, slack (junk bytes past the layout in the source) and
//     the key both directions are called with.
// Values are filled from a seed (buffers.h fill_values) rather than generated element by
// element: a case stays cheap to generate and print, and shrinking still minimises the layout.
//
// gen_small_shape / gen_small_layout (small, tidy shapes) are kept for callers that want only
// those.
//
// Choices are uniform from the first case on: RapidCheck scales rc::gen::inRange and
// rc::gen::arbitrary with the case's size (size 0 draws the minimum), which would leave the
// first cases of a property, and every command of a short state machine, with the smallest
// values only. The kit draws through uniform_in_range() and gen_seed() instead; how often large
// values come is decided by the generators' weights, not by the case index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/descriptors.h"
#include "lmcache/core/object_key.h"

namespace lmcache::conformance {

// LayoutLimits
//
// Bounds of generated layouts; the element cap keeps each case small and fast.
struct LayoutLimits {
  int min_groups = 1;
  int max_groups = 4;
  std::size_t max_group_elements = 300;
};

// gen_small_shape()
//
// A shape of rank 0-3 whose dims are 0, 1, odd or small even numbers, with at most
// `max_elements` elements.
rc::Gen<Shape> gen_small_shape(std::size_t max_elements);

// gen_small_layout()
//
// A layout of limits.min_groups..limits.max_groups groups, each with a dtype drawn from `dtypes`
// (which must not be empty).
rc::Gen<MemoryLayoutDesc> gen_small_layout(std::vector<DType> dtypes, LayoutLimits limits = {});

// uniform_in_range()
//
// rc::gen::inRange(min, max) at RapidCheck's nominal size: any value of [min, max) in every
// case. Shrinking still goes towards `min`.
template <class T>
rc::Gen<T> uniform_in_range(T min, T max) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(min, max));
}

// gen_seed()
//
// A 64-bit seed with every bit random in every case.
rc::Gen<std::uint64_t> gen_seed();

// SizeLimits
//
// Bounds of the boundary-emphasis layouts (gen_layout). size_limits() gives the depth's.
struct SizeLimits {
  int min_groups = 1;
  int max_groups = 4;
  std::size_t max_group_elements = 1u << 14;
  // The whole layout; later groups shrink to fit.
  std::size_t max_total_elements = 1u << 22;
  // Whether a group may have zero elements.
  bool allow_empty_groups = true;
  // When non-zero, about one layout in 25 has one KV-chunk-sized group (gen_chunk_bytes()),
  // whatever max_group_elements says; the other groups of that layout stay small.
  std::size_t max_chunk_bytes = 0;
};

// size_limits() / size_limits_with_chunks()
//
// The current depth's limits (depth.h): groups up to max_group_elements, 1-6 groups; the second
// also draws KV-chunk-sized groups up to the depth's max_chunk_bytes, for properties whose
// instances get memory enough for them (a wrapper's L1, an adapter's capacity are bounded).
SizeLimits size_limits();
SizeLimits size_limits_with_chunks();

// gen_chunk_bytes()
//
// The byte size of a KV chunk: 256 KiB, 512 KiB, 1, 2, 4, 8, 16 MiB ... up to `max_bytes`, each
// exactly, one element either side, or anywhere in between (log-uniform). At least 1.
rc::Gen<std::size_t> gen_chunk_bytes(std::size_t max_bytes);

// gen_element_count()
//
// 0..max_elements with most weight on the boundaries listed at the top of this file.
rc::Gen<std::size_t> gen_element_count(std::size_t max_elements);

// gen_shape_of()
//
// A shape of rank 0-3 with exactly `elements` elements (rank >= 1 when `elements` != 1; a zero
// count keeps one zero dimension).
rc::Gen<Shape> gen_shape_of(std::size_t elements);

// gen_layout()
//
// A layout within `limits` whose group dtypes are drawn from `dtypes` (not empty).
rc::Gen<MemoryLayoutDesc> gen_layout(std::vector<DType> dtypes, SizeLimits limits);

// gen_layout_of_any_size()
//
// A layout of one group (two now and then) of the declared dtypes whose byte size comes from
// a size class drawn first, so every class is as likely in the first case as in the last:
// tiny (0-17 elements), up to 256 bytes, up to 64 KiB, 64 KiB to 2 MiB (with 64 KiB - 1, 64 KiB
// and 64 KiB + 1 bytes often), and KV chunks (gen_chunk_bytes(max_chunk_bytes); left out when it
// is 0). For properties whose cost is per byte of a frame, where gen_layout()'s weights would
// rarely reach the large classes.
rc::Gen<MemoryLayoutDesc> gen_layout_of_any_size(std::vector<DType> dtypes,
                                                 std::size_t max_chunk_bytes);

// gen_batch_size()
//
// 1..max_batch, weighted on 1, small batches and 8k-1, 8k, 8k+1 (bitmap byte boundaries),
// 63, 64, 65 where they fit.
rc::Gen<std::size_t> gen_batch_size(std::size_t max_batch);

// gen_object_key()
//
// A valid ObjectKey over the whole key domain: hash lengths 1-64 (every length, weighted on 1,
// 7-9, 16, 32 and 64) with NUL bytes anywhere (none, one, a run, all) and high bytes; model names
// with '/', spaces, UTF-8 and 200 bytes; kv_rank 0, +-1, a packed rank and the extremes; group
// ids 0 to 2^63-1; cache salts of 0 to ObjectKey::kMaxCacheSaltBytes bytes from a family whose
// members share prefixes ("", "t", "tenant", "tenant-a", "tenant-a-1", 127 and 128 bytes that
// differ in the last byte ...).
rc::Gen<ObjectKey> gen_object_key();

// KeyField
//
// The fields of an ObjectKey, for keys that differ from another in exactly one field.
enum class KeyField { kChunkHash, kModelName, kKvRank, kObjectGroupId, kCacheSalt };
inline constexpr KeyField kAllKeyFields[] = {KeyField::kChunkHash, KeyField::kModelName,
                                             KeyField::kKvRank, KeyField::kObjectGroupId,
                                             KeyField::kCacheSalt};

// key_field_name()
//
// "chunk_hash", "model_name", "kv_rank", "object_group_id" or "cache_salt".
const char* key_field_name(KeyField field);

// gen_key_varied_in()
//
// A valid key equal to `key` in every field but `field`, where it differs: the chunk hash with
// one byte changed at any position (the first 8 and past them), a byte appended or removed, or
// a NUL appended; the model name with its last byte changed or one appended; kv_rank +-1,
// negated or an extreme; object_group_id +-1 or an extreme; the cache salt with its last byte
// changed, one byte appended or removed (a shared prefix), emptied / filled, or its letters'
// case flipped ("Tenant-A" for "tenant-a").
rc::Gen<ObjectKey> gen_key_varied_in(ObjectKey key, KeyField field);

// padded_prefix_differs()
//
// Whether the first `n` bytes of `a` and `b`, each zero-padded to `n`, differ (n == 0: whether
// `a` != `b`). How a frame bound to a hash prefix (checksum's 8-byte fingerprint) tells keys
// apart.
bool padded_prefix_differs(const std::string& a, const std::string& b, std::size_t n);

// key_family()
//
// `n` distinct valid keys built from `seed`: key 0 is a base key (its hash 16 to 64 bytes long,
// by seed) and each next key differs from
// an earlier one in exactly one field (cycling through chunk_hash content, chunk_hash length,
// model_name, kv_rank, object_group_id, cache_salt), so an implementation that ignores a field
// confuses two keys of the family.
std::vector<ObjectKey> key_family(std::uint64_t seed, std::size_t n);

// SerdeCase
//
// One generated serde input: a layout, the seed its values are filled from, `slack` bytes of
// junk that the source buffer holds past its layout (physical_size() > layout bytes, as an
// object carved from a larger allocation has), and the key serialize() and deserialize() get.
struct SerdeCase {
  MemoryLayoutDesc layout;
  std::uint64_t data_seed = 0;
  std::size_t slack = 0;
  ObjectKey key = probe_key();
};
std::ostream& operator<<(std::ostream& os, const SerdeCase& c);

// gen_small_serde_case()
//
// A case whose layout comes from gen_small_layout(dtypes, limits) (small shapes), no slack.
rc::Gen<SerdeCase> gen_small_serde_case(std::vector<DType> dtypes, LayoutLimits limits = {});

// gen_serde_case()
//
// A case whose layout comes from gen_layout(dtypes, limits), with slack 0, 1-63 or a page, and
// a key from gen_object_key() (probe_key(0) one case in four).
rc::Gen<SerdeCase> gen_serde_case(std::vector<DType> dtypes, SizeLimits limits);

// value_spec_for()
//
// The values a serde accepts, from its declarations (max_abs_input, preserves_nan / _inf).
ValueSpec value_spec_for(const SerdeUnderTest& serde);

// make_source()
//
// A fresh object of `c.layout` filled from `c.data_seed` within `spec`, with `c.slack` junk
// bytes past the layout.
MemoryObjPtr make_source(const SerdeCase& c, const ValueSpec& spec);

}  // namespace lmcache::conformance

namespace lmcache {
// showValue()
//
// How RapidCheck prints a generated layout in a counterexample (found by argument-dependent
// lookup, hence in the layout's namespace): its to_string().
void showValue(const MemoryLayoutDesc& layout, std::ostream& os);
}  // namespace lmcache
