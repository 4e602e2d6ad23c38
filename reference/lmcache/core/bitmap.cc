#include "lmcache/core/bitmap.h"

#include <algorithm>
#include <bit>

namespace lmcache {

Bitmap::Bitmap(std::size_t size, std::size_t prefix_ones) : size_(size), bytes_((size + 7) / 8) {
  std::size_t n = std::min(prefix_ones, size);
  for (std::size_t i = 0; i < n; ++i) set(i);
}

void Bitmap::set(std::size_t i) {
  if (i < size_) bytes_[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
}

void Bitmap::clear(std::size_t i) {
  if (i < size_) bytes_[i / 8] &= static_cast<std::uint8_t>(~(1u << (i % 8)));
}

bool Bitmap::test(std::size_t i) const {
  return i < size_ && ((bytes_[i / 8] >> (i % 8)) & 1u) != 0;
}

std::size_t Bitmap::popcount() const {
  std::size_t n = 0;
  for (std::uint8_t b : bytes_) n += static_cast<std::size_t>(std::popcount(b));
  return n;
}

std::vector<std::size_t> Bitmap::set_indices() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < size_; ++i) {
    if (test(i)) out.push_back(i);
  }
  return out;
}

Bitmap Bitmap::operator&(const Bitmap& other) const {
  Bitmap out(std::min(size_, other.size_));
  for (std::size_t b = 0; b < out.bytes_.size(); ++b) out.bytes_[b] = bytes_[b] & other.bytes_[b];
  return out;
}

Bitmap Bitmap::operator|(const Bitmap& other) const {
  Bitmap out(std::min(size_, other.size_));
  for (std::size_t b = 0; b < out.bytes_.size(); ++b) out.bytes_[b] = bytes_[b] | other.bytes_[b];
  // Bits past the smaller size may be set in the larger operand's last byte: mask them.
  if (out.size_ % 8 != 0)
    out.bytes_.back() &= static_cast<std::uint8_t>((1u << (out.size_ % 8)) - 1);
  return out;
}

Bitmap Bitmap::operator~() const {
  Bitmap out(size_);
  for (std::size_t b = 0; b < bytes_.size(); ++b)
    out.bytes_[b] = static_cast<std::uint8_t>(~bytes_[b]);
  if (size_ % 8 != 0) out.bytes_.back() &= static_cast<std::uint8_t>((1u << (size_ % 8)) - 1);
  return out;
}

std::string Bitmap::to_string() const {
  std::string out(size_, '0');
  for (std::size_t i = 0; i < size_; ++i) {
    if (test(i)) out[i] = '1';
  }
  return out;
}

}  // namespace lmcache
