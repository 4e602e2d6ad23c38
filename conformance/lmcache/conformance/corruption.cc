#include "lmcache/conformance/corruption.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "lmcache/conformance/buffers.h"

namespace lmcache::conformance {

namespace {

// splitmix64: the plans' pseudo-random offsets and patterns.
std::uint64_t next(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::size_t below(std::uint64_t& x, std::size_t n) { return n == 0 ? 0 : next(x) % n; }

// Sampled byte offsets of a frame past kSweepBytes: powers of two and their neighbours, page
// boundaries and their neighbours, the middle and random offsets, all inside (64, n - 64).
std::vector<std::size_t> sampled_offsets(std::size_t n, std::uint64_t& x) {
  std::vector<std::size_t> out;
  auto add = [&](std::size_t at) {
    if (at >= 64 && at + 64 < n) out.push_back(at);
  };
  for (std::size_t p = 64; p < n; p *= 2) {
    add(p - 1);
    add(p);
    add(p + 1);
  }
  for (std::size_t page = 4096; page < n && page <= (64u << 10); page += 4096) add(page);
  add(n / 2);
  // Fewer random offsets in large frames: each one costs a whole deserialize.
  const std::size_t randoms = n <= (1u << 20) ? 64 : 16;
  for (std::size_t i = 0; i < randoms; ++i) add(64 + below(x, n - 128));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::byte pattern_byte(std::uint64_t& x) {
  return static_cast<std::byte>((next(x) & 0xff) | 1);  // never 0: XOR always changes a byte
}

}  // namespace

std::string describe(const Corruption& c) {
  const std::string range =
      "bytes [" + std::to_string(c.offset) + ", " + std::to_string(c.offset + c.length) + ")";
  switch (c.kind) {
    case Corruption::Kind::kFlipBit:
      return "bit " + std::to_string(c.offset % 8) + " of byte " + std::to_string(c.offset / 8) +
             " flipped";
    case Corruption::Kind::kRewriteByte:
      return "byte " + std::to_string(c.offset) + " rewritten to " + std::to_string(c.value);
    case Corruption::Kind::kZeroRange:
      return range + " zeroed";
    case Corruption::Kind::kScrambleRange:
      return range + " rewritten with other bytes";
    case Corruption::Kind::kTruncate:
      return "the frame truncated to " + std::to_string(c.length) + " bytes";
    case Corruption::Kind::kAppend:
      return std::to_string(c.length) + " junk bytes appended (inside size())";
  }
  return "?";
}

std::vector<Corruption> bit_flip_plan(std::size_t n, std::uint64_t seed) {
  std::vector<Corruption> plan;
  std::uint64_t x = seed;
  // Every bit of the bytes [from, to), or one random bit of each in a large frame (each flip
  // costs a whole deserialize).
  const bool large = n > kLargeFrameBytes;
  auto bits_of = [&](std::size_t from, std::size_t to) {
    for (std::size_t at = from; at < to; ++at) {
      if (large) {
        plan.push_back(Corruption::flip_bit(at * 8 + below(x, 8)));
      } else {
        for (std::size_t b = 0; b < 8; ++b) plan.push_back(Corruption::flip_bit(at * 8 + b));
      }
    }
  };
  if (n <= kSweepBytes) {
    bits_of(0, n);
    return plan;
  }
  bits_of(0, 64);
  for (std::size_t at : sampled_offsets(n, x)) {
    plan.push_back(Corruption::flip_bit(at * 8 + below(x, 8)));
  }
  bits_of(n - 64, n);
  return plan;
}

std::vector<Corruption> truncation_plan(std::size_t n, std::uint64_t seed) {
  std::vector<Corruption> plan;
  if (n <= kSweepBytes) {
    for (std::size_t keep = 0; keep < n; ++keep) plan.push_back(Corruption::truncate(keep));
    return plan;
  }
  std::vector<std::size_t> keeps;
  for (std::size_t k = 0; k <= 64; ++k) keeps.push_back(k);
  std::uint64_t x = seed;
  for (std::size_t at : sampled_offsets(n, x)) keeps.push_back(at);
  for (std::size_t k = n - 64; k < n; ++k) keeps.push_back(k);
  std::sort(keeps.begin(), keeps.end());
  keeps.erase(std::unique(keeps.begin(), keeps.end()), keeps.end());
  for (std::size_t keep : keeps) plan.push_back(Corruption::truncate(keep));
  return plan;
}

std::vector<Corruption> range_plan(const MemoryObj& frame, std::uint64_t seed) {
  const std::size_t n = frame.size();
  const std::byte* data = frame.data();
  std::vector<Corruption> plan;
  if (n == 0) return plan;
  std::uint64_t x = seed;
  auto all_zero = [&](std::size_t from, std::size_t len) {
    return std::all_of(data + from, data + from + len,
                       [](std::byte b) { return b == std::byte{0}; });
  };
  auto zero = [&](std::size_t from, std::size_t len) {
    if (len > 0 && !all_zero(from, len)) plan.push_back(Corruption::zero_range(from, len));
  };
  auto scramble = [&](std::size_t from, std::size_t len) {
    if (len > 0) plan.push_back(Corruption::scramble_range(from, len, next(x)));
  };
  const std::size_t head = std::min<std::size_t>(n, 48);
  for (std::size_t at = 0; at < head; ++at) {
    const unsigned old = std::to_integer<unsigned>(data[at]);
    plan.push_back(Corruption::rewrite_byte(at, old ^ (1u + below(x, 255))));
  }
  // Windows of the widths of header fields (a 64-bit hash or fingerprint, a 96-bit IV, a
  // 128-bit tag) at every offset of the head, so that each field is zeroed or rewritten exactly
  // wherever it sits; in a large frame at every second offset.
  const std::size_t step = n > kLargeFrameBytes ? 2 : 1;
  for (std::size_t width : {2u, 4u, 8u, 12u, 16u}) {
    for (std::size_t at = 0; at + width <= head; at += width < 8 ? width / 2 : step) {
      zero(at, width);
      scramble(at, width);
    }
  }
  zero(n - std::min<std::size_t>(n, 16), std::min<std::size_t>(n, 16));
  scramble(n - std::min<std::size_t>(n, 16), std::min<std::size_t>(n, 16));
  scramble(0, n);
  if (n > 1) zero(1, n - 1);
  const int randoms = n <= kSweepBytes ? 8 : 16;
  for (int i = 0; i < randoms; ++i) {
    const std::size_t from = below(x, n);
    const std::size_t len = 1 + below(x, std::min<std::size_t>(n - from, 4096));
    if (i % 2 == 0) {
      zero(from, len);
    } else {
      scramble(from, len);
    }
  }
  return plan;
}

std::vector<Corruption> tail_plan(std::uint64_t seed) {
  std::uint64_t x = seed;
  std::vector<Corruption> plan;
  for (std::size_t len : {1u, 7u, 16u, 64u}) plan.push_back(Corruption::append(len, next(x)));
  return plan;
}

CorruptibleCopy::CorruptibleCopy(const MemoryObj& frame)
    : size_(frame.size()), obj_(make_object(byte_layout(frame.size() + kMaxTail))) {
  if (size_ > 0) std::memcpy(obj_->data(), frame.data(), size_);
  obj_->set_used_size(size_);
}

void CorruptibleCopy::apply(const Corruption& c) {
  restore();
  std::byte* data = obj_->data();
  auto save = [&](std::size_t from, std::size_t len) {
    if (from + len > size_) {
      throw std::invalid_argument("corruption past the frame: " + describe(c) + " of a " +
                                  std::to_string(size_) + "-byte frame");
    }
    saved_offset_ = from;
    saved_.assign(data + from, data + from + len);
  };
  std::uint64_t x = c.seed;
  switch (c.kind) {
    case Corruption::Kind::kFlipBit:
      save(c.offset / 8, 1);
      data[c.offset / 8] ^= static_cast<std::byte>(1u << (c.offset % 8));
      break;
    case Corruption::Kind::kRewriteByte:
      save(c.offset, 1);
      data[c.offset] = static_cast<std::byte>(c.value);
      break;
    case Corruption::Kind::kZeroRange:
      save(c.offset, c.length);
      std::memset(data + c.offset, 0, c.length);
      break;
    case Corruption::Kind::kScrambleRange:
      save(c.offset, c.length);
      for (std::size_t i = 0; i < c.length; ++i) data[c.offset + i] ^= pattern_byte(x);
      break;
    case Corruption::Kind::kTruncate:
      if (c.length > size_) throw std::invalid_argument("truncation past the frame");
      obj_->set_used_size(c.length);
      break;
    case Corruption::Kind::kAppend:
      if (c.length > kMaxTail) throw std::invalid_argument("a tail longer than kMaxTail");
      for (std::size_t i = 0; i < c.length; ++i) data[size_ + i] = pattern_byte(x);
      obj_->set_used_size(size_ + c.length);
      break;
  }
}

void CorruptibleCopy::restore() {
  if (!saved_.empty()) {
    std::memcpy(obj_->data() + saved_offset_, saved_.data(), saved_.size());
    saved_.clear();
  }
  obj_->set_used_size(size_);
}

std::string plaintext_window_in(std::span<const std::byte> plaintext,
                                std::span<const std::byte> frame, std::uint64_t seed) {
  constexpr std::size_t kWindow = 32;
  const std::size_t n = plaintext.size();
  if (n < kWindow) return {};
  std::uint64_t x = seed;
  std::vector<std::size_t> starts = {0, n / 2 - std::min(n / 2, kWindow / 2), n - kWindow};
  for (int i = 0; i < 8; ++i) starts.push_back(below(x, n - kWindow + 1));
  for (std::size_t at : starts) {
    auto window = plaintext.subspan(at, kWindow);
    auto it = std::search(frame.begin(), frame.end(),
                          std::boyer_moore_horspool_searcher(window.begin(), window.end()));
    if (it != frame.end()) {
      return "the " + std::to_string(kWindow) + " payload bytes at offset " + std::to_string(at) +
             " appear at frame offset " + std::to_string(it - frame.begin());
    }
  }
  return {};
}

}  // namespace lmcache::conformance
