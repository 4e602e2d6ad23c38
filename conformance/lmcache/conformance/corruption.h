// File: lmcache/conformance/corruption.h
//
// Corruptions of a stored frame, one dimension of the conformance kit's input space: single bit
// flips, rewritten bytes, zeroed and scrambled ranges (every header field among them), truncations
// and junk tails. The integrity properties require an integrity serde to reject every in-place
// corruption and truncation; the differential property (MatchesReference) requires a serde of a
// type the reference knows to give the reference's verdict on every shape, tails included.
//
// Plans cover a frame whole while it is small (every bit, every length, every header window)
// and, past kSweepBytes, the first and last 64 bytes whole plus sampled positions in between:
// powers of two and their neighbours, page boundaries and random offsets, so that a hash or tag
// that stops covering the payload after some offset is found at any frame size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lmcache/core/memory_obj.h"

namespace lmcache::conformance {

// Frames up to this many bytes are swept whole.
inline constexpr std::size_t kSweepBytes = 256;
// Past this many bytes a plan flips one bit per byte of the head and tail, not all eight.
inline constexpr std::size_t kLargeFrameBytes = 64u << 10;

// Corruption
//
// One change to a frame of `n` bytes. Offsets and lengths are within the frame (truncate:
// the length kept, < n; append: bytes added after the frame, inside size()).
struct Corruption {
  enum class Kind { kFlipBit, kRewriteByte, kZeroRange, kScrambleRange, kTruncate, kAppend };
  Kind kind = Kind::kFlipBit;
  std::size_t offset = 0;  // byte offset (kFlipBit: bit offset)
  std::size_t length = 0;  // bytes of the range, kept (kTruncate) or added (kAppend)
  std::uint64_t seed = 0;  // the pattern of kScrambleRange / kAppend
  unsigned value = 0;      // kRewriteByte

  static Corruption flip_bit(std::size_t bit) { return {Kind::kFlipBit, bit, 1, 0, 0}; }
  static Corruption rewrite_byte(std::size_t at, unsigned value) {
    return {Kind::kRewriteByte, at, 1, 0, value & 0xffu};
  }
  static Corruption zero_range(std::size_t offset, std::size_t length) {
    return {Kind::kZeroRange, offset, length, 0, 0};
  }
  // Every byte of the range XORed with a non-zero pseudo-random byte: every byte changes.
  static Corruption scramble_range(std::size_t offset, std::size_t length, std::uint64_t seed) {
    return {Kind::kScrambleRange, offset, length, seed, 0};
  }
  static Corruption truncate(std::size_t keep) { return {Kind::kTruncate, 0, keep, 0, 0}; }
  static Corruption append(std::size_t length, std::uint64_t seed) {
    return {Kind::kAppend, 0, length, seed, 0};
  }
};

// describe()
//
// "bit 3 of byte 17 flipped", "bytes [0, 8) zeroed", "truncated to 12 bytes", ...
std::string describe(const Corruption& c);

// bit_flip_plan()
//
// Single-bit flips of a frame of `frame_bytes` bytes: every bit up to kSweepBytes; past it every
// bit of the first and last 64 bytes (one bit of each past kLargeFrameBytes) and one bit at
// each sampled offset (from `seed`).
std::vector<Corruption> bit_flip_plan(std::size_t frame_bytes, std::uint64_t seed);

// truncation_plan()
//
// Truncations to every shorter length up to kSweepBytes; past it lengths 0-64, the last 64,
// powers of two and their neighbours, and random lengths.
std::vector<Corruption> truncation_plan(std::size_t frame_bytes, std::uint64_t seed);

// range_plan()
//
// In-place range corruptions that change the frame: each byte of the first 48 rewritten;
// 2- and 4-byte windows over them, and 8-, 12- and 16-byte windows at every offset (every
// header field of the known frames is one of them), zeroed and scrambled; the last 16 bytes (a
// tag), the whole frame scrambled, and random payload ranges zeroed and scrambled. A zeroing of
// bytes that are already zero is left out.
std::vector<Corruption> range_plan(const MemoryObj& frame, std::uint64_t seed);

// tail_plan()
//
// Junk tails of 1, 7, 16 and 64 bytes appended after the frame, inside size().
std::vector<Corruption> tail_plan(std::uint64_t seed);

// CorruptibleCopy
//
// A byte copy of `frame` (size() bytes, room for a 64-byte tail) that takes one corruption at a
// time: apply() changes it, restore() brings back the original bytes and size.
class CorruptibleCopy {
 public:
  static constexpr std::size_t kMaxTail = 64;

  explicit CorruptibleCopy(const MemoryObj& frame);

  // Throws std::invalid_argument when `c` reaches past the frame (or a tail past kMaxTail).
  void apply(const Corruption& c);
  void restore();

  const MemoryObjPtr& obj() const { return obj_; }

 private:
  std::size_t size_ = 0;
  MemoryObjPtr obj_;
  std::size_t saved_offset_ = 0;
  std::vector<std::byte> saved_;
};

// plaintext_window_in()
//
// Empty when no 32-byte window of `plaintext` taken at its start, middle, end and random
// offsets (from `seed`) appears anywhere in `frame`; else which window was found where.
// `plaintext` shorter than 32 bytes: empty.
std::string plaintext_window_in(std::span<const std::byte> plaintext,
                                std::span<const std::byte> frame, std::uint64_t seed);

}  // namespace lmcache::conformance
