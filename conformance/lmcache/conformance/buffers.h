// File: lmcache/conformance/buffers.h
//
// Buffer tools the properties are built from: element access for every dtype (float16, bfloat16
// and fp8 included, without libtorch), value filling with zeros, subnormals, extremes, infinities
// and NaNs, and GuardedObject, a MemoryObj that sits between two guard zones of known bytes so
// that a write outside the object (an overrun) is detected without relying on a sanitizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lmcache/conformance/plain_objects.h"
#include "lmcache/conformance/probe_keys.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"

namespace lmcache::conformance {

// Exact-as-possible conversions (round to nearest, ties to even) between float and the 16-bit
// float formats, as raw bits.
std::uint16_t float_to_half_bits(float value);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bf16_bits(float value);
float bf16_bits_to_float(std::uint16_t bits);

// is_float_dtype()
//
// float16, bfloat16, float32 and the fp8 dtypes (everything but uint8).
bool is_float_dtype(DType dtype);

// read_element()
//
// The value of the element at `p` (element_size(dtype) bytes, any alignment) as a double; exact
// for every dtype. uint8 reads as its integer value.
double read_element(DType dtype, const std::byte* p);

// write_element()
//
// Stores `value` at `p`, rounded to nearest-even into `dtype`. uint8 takes the value modulo 256.
void write_element(DType dtype, std::byte* p, double value);

// max_finite() / min_subnormal() / min_normal()
//
// The dtype's largest finite value, smallest positive subnormal and smallest positive normal
// (uint8: 255, 1, 1).
double max_finite(DType dtype);
double min_subnormal(DType dtype);
double min_normal(DType dtype);

// ValueSpec
//
// Which values a generator may produce for a serde: finite values with |x| <= max_abs (nullopt:
// the dtype's whole range), plus NaN and +-inf when allowed.
struct ValueSpec {
  std::optional<double> max_abs;
  bool allow_nan = true;
  bool allow_inf = true;
};

// fill_values()
//
// Fills every group of `obj` deterministically from `seed`: about a quarter of the elements are
// special values (+-0, +-1, the smallest subnormal and normal, the largest value allowed, NaN
// and +-inf when allowed), the rest spread over every exponent the dtype and `spec` allow, so
// subnormals and extremes are common. uint8 and fp8 groups get arbitrary bytes within `spec`.
void fill_values(MemoryObj& obj, const ValueSpec& spec, std::uint64_t seed);

// fill_bytes()
//
// Deterministic pseudo-random bytes from `seed`.
void fill_bytes(std::span<std::byte> bytes, std::uint64_t seed);

// same_bytes()
//
// Whether the `n` bytes at `a` and at `b` are equal; true for n == 0 whatever the pointers (an
// empty object's data() may be null, which memcmp must never see).
bool same_bytes(const void* a, const void* b, std::size_t n);

// GuardedObject
//
// A MemoryObj of `layout` whose physical_size() is `physical_size` (at least the layout's bytes)
// and whose buffer lies between two kGuardBytes guard zones of pseudo-random bytes, all in one
// allocation. The payload starts filled with pseudo-random bytes too, so "left untouched" can be
// checked for any region.
class GuardedObject {
 public:
  static constexpr std::size_t kGuardBytes = 64;

  // Throws std::invalid_argument when physical_size < layout.total_bytes(). `guard_bytes`
  // (at least kGuardBytes) sizes each guard zone: make it as large as the worst overrun a test
  // provokes, so that the overrun stays inside this allocation.
  GuardedObject(MemoryLayoutDesc layout, std::size_t physical_size, std::uint64_t fill_seed = 1,
                std::size_t guard_bytes = kGuardBytes);

  // A byte buffer: one 1-D uint8 group of `bytes` bytes (physical size `bytes` as well).
  static GuardedObject Bytes(std::size_t bytes, std::uint64_t fill_seed = 1,
                             std::size_t guard_bytes = kGuardBytes);

  const MemoryObjPtr& obj() const { return obj_; }
  MemoryObj& operator*() const { return *obj_; }
  MemoryObj* operator->() const { return obj_.get(); }

  // The whole payload (physical size), before any narrowing.
  std::span<const std::byte> payload() const;

  // A copy of the payload, to compare against later.
  std::vector<std::byte> snapshot() const;

  // check_guards()
  //
  // Empty when both guard zones still hold their bytes; otherwise a message naming the first
  // damaged byte ("3 bytes past the end were written, first at +0").
  std::string check_guards() const;

  // check_payload_unchanged()
  //
  // Empty when payload bytes [from, to) still equal `before` there; otherwise names the first
  // changed offset.
  std::string check_payload_unchanged(const std::vector<std::byte>& before, std::size_t from,
                                      std::size_t to) const;

 private:
  std::shared_ptr<std::byte[]> storage_;
  std::size_t guard_ = kGuardBytes;
  std::size_t physical_size_ = 0;
  std::vector<std::byte> guard_before_;
  std::vector<std::byte> guard_after_;
  MemoryObjPtr obj_;
};

// DescribeElementMismatch()
//
// "group 1 element 7 (bfloat16): expected 0.5, got 0.625" for diagnostics.
std::string describe_element(const MemoryLayoutDesc& layout, std::size_t group, std::size_t index,
                             double expected, double got);

// hex_preview()
//
// The first `max_bytes` bytes as hex, for messages.
std::string hex_preview(std::span<const std::byte> bytes, std::size_t max_bytes = 16);

// bytes_difference()
//
// Empty when `got` and `want` are equal; else where they first differ and both from there, for
// messages ("first difference at byte 1048576 of 2097152: 00 00 ... instead of 4a 91 ...").
std::string bytes_difference(std::span<const std::byte> got, std::span<const std::byte> want);

}  // namespace lmcache::conformance
