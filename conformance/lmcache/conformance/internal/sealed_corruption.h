// File: lmcache/conformance/internal/sealed_corruption.h
//
// Sealed corruptions: edits of a frame in a format that seals its own fields with checksums the
// kit can recompute (LMCR v1, docs/lmcr.md: a header CRC-32 over the header and descriptors, a
// payload CRC-32 over the chunks), each with those checksums recomputed. The kit's other
// corruptions (corruption.h) break a CRC first, so a reader's checks behind its CRCs -- each
// header field, each descriptor, each chunk's stream, the gaps -- never run; a record whose CRCs
// hold but whose fields lie is what a buggy writer or a hostile store hands a reader all the
// same. SerdeConformance.MatchesReference requires a serde of such a type to give the
// reference's verdict on every one. Internal to the suites library (and the self-test's
// mutants, which re-seal records as their bugs rewrite them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/core/memory_obj.h"

namespace lmcache::conformance_internal {

// BytePatch: bytes written at an offset of a frame.
struct BytePatch {
  std::size_t offset = 0;
  std::vector<std::byte> bytes;
};

// SealedCorruption: one edit and the re-sealed checksums, as patches of the frame.
struct SealedCorruption {
  std::string description;  // "header field record_size (bytes 12..19) set to 0 from 4160, ..."
  std::vector<BytePatch> patches;
};

// sealed_corruption_plan()
//
// The sealed corruptions of `frame`, a frame of the reference type `type`: for "lmcr", every
// header field but the two CRCs set to each of a handful of values (its neighbours, 0, the
// extremes, values a 16-byte alignment or a 24-byte descriptor away), the descriptors of the
// first, middle and last chunks likewise (offset, sizes, CRC, flags), a bit of the first and last
// chunks' streams flipped at their start, middle and end, and a non-zero byte in an alignment
// gap -- each with the header CRC (and, for payload edits, the payload CRC) recomputed. Empty for
// any other type and for a frame that holds no LMCR record whose header CRC holds. `seed` picks
// the middle chunk's stream position. A plan of more than `most` edits is sampled: every
// ceil(size / most)-th edit from a seeded start, so the sample spans every kind, and only the
// edits kept are built (each copies the header and runs the CRCs over the record).
std::vector<SealedCorruption> sealed_corruption_plan(
    std::string_view type, std::span<const std::byte> frame, std::uint64_t seed,
    std::size_t most = std::numeric_limits<std::size_t>::max());

// reseal_lmcr_header()
//
// Recomputes the header CRC of the LMCR record at the start of `record` (over its header_size
// bytes, the CRC field read as zero) after a caller changed header fields. Throws
// std::invalid_argument when `record` is shorter than 44 bytes or than its header_size.
void reseal_lmcr_header(std::span<std::byte> record);

// ScopedPatches
//
// Writes `patches` into `obj` (each inside obj.size(), else std::invalid_argument before any is
// written) and puts the original bytes back on destruction.
class ScopedPatches {
 public:
  ScopedPatches(MemoryObj& obj, const std::vector<BytePatch>& patches);
  ~ScopedPatches();
  ScopedPatches(const ScopedPatches&) = delete;
  ScopedPatches& operator=(const ScopedPatches&) = delete;

 private:
  MemoryObj& obj_;
  std::vector<BytePatch> saved_;
};

}  // namespace lmcache::conformance_internal
