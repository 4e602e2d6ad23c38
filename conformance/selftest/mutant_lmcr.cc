// The LMCR family: the reference lmcr reader with a check skipped behind the record's CRCs,
// caught only by MatchesReference's sealed corruptions (docs/lmcr.md). Each reader rewrites a
// field of a copy and re-seals the header CRC before the reference reads it, so the bug is the
// only difference from its base.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/probe_keys.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/serde/lmcr_record.h"
#include "lmcache/serde/lmcr_serde.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

// An lmcr reader that "normalizes" a record before checking it: when the record's header CRC
// holds, `rewrite` changes fields of a copy and the header CRC is re-sealed, so the reference
// checks behind it never see what was stored. The bug lives in `rewrite`.
using LmcrRewrite = void (*)(std::span<std::byte> record);

std::uint64_t le_at(std::span<const std::byte> b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= static_cast<std::uint64_t>(std::to_integer<unsigned>(b[at + i])) << (8 * i);
  }
  return v;
}

void put_le(std::span<std::byte> b, std::size_t at, std::size_t width, std::uint64_t v) {
  for (std::size_t i = 0; i < width; ++i)
    b[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}

// The chunk count of a record whose descriptors all lie inside it, else 0.
std::size_t lmcr_chunks(std::span<const std::byte> b) {
  const std::size_t n = static_cast<std::size_t>(le_at(b, 28, 4));
  return kLmcrHeaderBytes + kLmcrDescriptorBytes * n <= b.size() ? n : 0;
}

// Recomputes the header CRC of the record in `b` (zlib's CRC-32 of its header_size bytes, the
// CRC field zeroed); a header_size outside `b` leaves it as it is.
void reseal_header(std::span<std::byte> b) {
  const std::size_t hs = static_cast<std::size_t>(le_at(b, 8, 4));
  if (hs < kLmcrHeaderBytes || hs > b.size()) return;
  put_le(b, 32, 4, 0);
  put_le(b, 32, 4, ::crc32(0, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(hs)));
}

bool lmcr_header_crc_holds(std::span<const std::byte> record) {
  std::vector<std::byte> copy(record.begin(), record.end());
  reseal_header(copy);
  return std::equal(copy.begin() + 32, copy.begin() + 36, record.begin() + 32);
}

struct LmcrRewritingDeserializer final : Deserializer {
  explicit LmcrRewritingDeserializer(LmcrRewrite r) : rewrite(r) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    MemoryObjPtr copy = make_object(byte_layout(src.size()));
    if (src.size() > 0) std::memcpy(copy->data(), src.data(), src.size());
    const std::span<std::byte> b(copy->data(), copy->size());
    if (b.size() >= kLmcrHeaderBytes && lmcr_header_crc_holds(b)) {
      rewrite(b);
      reseal_header(b);
    }
    inner.deserialize(*copy, dst, key);
  }
  LmcrRewrite rewrite;
  LmcrDeserializer inner;
};

// Reads records with features it does not know: the transform byte and every flags field
// (header and descriptors) are cleared instead of checked.
void clear_reserved_fields(std::span<std::byte> b) {
  b[7] = std::byte{0};
  put_le(b, 40, 4, 0);
  for (std::size_t i = 0; i < lmcr_chunks(b); ++i) put_le(b, 44 + 24 * i + 20, 4, 0);
}

// Takes the record's total from its descriptors: the header's uncompressed_size is replaced by
// the chunks' sum, never compared with it.
void total_from_descriptors(std::span<std::byte> b) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < lmcr_chunks(b); ++i) sum += le_at(b, 44 + 24 * i + 12, 4);
  put_le(b, 20, 8, sum);
}

// A frame of `impl`'s lmcr with `edit` applied and the header CRC re-sealed: loaded?
bool loads_resealed(const Impl& impl, void (*edit)(std::span<std::byte>)) {
  MemoryObjPtr frame = frame_of(impl.serde, probe_key(1));
  const std::span<std::byte> b(frame->data(), frame->size());
  edit(b);
  reseal_header(b);
  return loads(impl.serde, *frame, probe_key(1));
}

}  // namespace

void add_lmcr_mutants(std::vector<Mutant>& out) {
  const Impl lmcr = serde_impl(reference_lmcr_serde());
  {
    Impl i = lmcr;
    i.serde.make_deserializer = [] {
      return std::make_shared<LmcrRewritingDeserializer>(&clear_reserved_fields);
    };
    out.push_back(mutant("lmcr_reserved_fields_ignored", ImplementationKind::kSerde,
                         BugClass::kData, "MatchesReference",
                         "the transform byte and the flags fields are cleared, not checked: a "
                         "record using a feature it does not know loads as if it had none",
                         i, lmcr, [](const Impl& impl) -> std::string {
                           return loads_resealed(
                                      impl, [](std::span<std::byte> b) { b[40] = std::byte{1}; })
                                      ? "a record with header flags 1 loaded"
                                      : "";
                         }));
  }
  {
    Impl i = lmcr;
    i.serde.make_deserializer = [] {
      return std::make_shared<LmcrRewritingDeserializer>(&total_from_descriptors);
    };
    out.push_back(mutant(
        "lmcr_header_total_unchecked", ImplementationKind::kSerde, BugClass::kData,
        "MatchesReference",
        "the header's uncompressed_size is taken from the descriptors, never compared with them", i,
        lmcr, [](const Impl& impl) -> std::string {
          return loads_resealed(
                     impl, [](std::span<std::byte> b) { put_le(b, 20, 8, le_at(b, 20, 8) + 16); })
                     ? "a record whose header says 16 bytes more than its chunks hold loaded"
                     : "";
        }));
  }
}

}  // namespace lmcache::conformance::selftest
