// File: lmcache/core/bitmap.h
//
// A fixed-size bit set, LSB first inside each byte (bit i lives in byte i/8 at position i%8),
// as LMCache's native Bitmap. Out-of-range set()/clear() are ignored and test() is false.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lmcache {

class Bitmap {
 public:
  // Bitmap()
  //
  // `size` bits; the first min(prefix_ones, size) are set, the rest clear.
  explicit Bitmap(std::size_t size = 0, std::size_t prefix_ones = 0);

  std::size_t size() const { return size_; }
  void set(std::size_t i);
  void clear(std::size_t i);
  bool test(std::size_t i) const;
  std::size_t popcount() const;
  bool all() const { return popcount() == size_; }
  bool none() const { return popcount() == 0; }

  // Indices of the set bits, ascending.
  std::vector<std::size_t> set_indices() const;

  // The result has the smaller of the two sizes.
  Bitmap operator&(const Bitmap& other) const;
  Bitmap operator|(const Bitmap& other) const;
  // Flips every bit; bits past size() stay clear.
  Bitmap operator~() const;

  // '0'/'1' per bit, index 0 first.
  std::string to_string() const;

  friend bool operator==(const Bitmap&, const Bitmap&) = default;

 private:
  std::size_t size_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace lmcache
