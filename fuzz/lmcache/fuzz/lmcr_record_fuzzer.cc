// lmcr_record_fuzzer: LMCR v1 records (docs/lmcr.md) from untrusted storage, and the encoder's
// round trip.
//
// Input: one op byte, then by op:
//   even: decode. The rest is a stored record (and whatever L2 gave back after it). Beyond ASan
//         and UBSan: every failure of lmcr_parse_header(), lmcr_validate_record() and
//         lmcr_decode() is an LmcrError; lmcr_decode() succeeds only on a record that
//         lmcr_validate_record() accepts; the "lmcr" deserializer agrees with lmcr_decode()
//         (the same verdict and bytes; std::invalid_argument exactly when the source is shorter
//         than the header or the record; its destination untouched then).
//   odd:  round trip. Three bytes choose framing (raw / gzip), chunk_size (16..1024, a multiple
//         of 16) and level (0..9); the rest is the input. The record fits
//         lmcr_max_record_size(), validates, and decodes (by lmcr_decode() and by the
//         deserializer) to the input.
// Decoded sizes are bounded by the record (a record's chunks inflate to at most what they
// declare), and a header claiming more than kMaxOut bytes is only parsed, not decoded.
#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/fuzz/fuzz_support.h"
#include "lmcache/serde/lmcr_record.h"
#include "lmcache/serde/lmcr_serde.h"

namespace lmcache::fuzz_internal {
namespace {

constexpr std::size_t kMaxOut = std::size_t{16} << 20;
constexpr std::byte kCanary{0x5A};

std::span<const std::byte> as_bytes(std::span<const std::uint8_t> s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

MemoryObjPtr exact_object(std::size_t n, std::byte fill) {
  std::shared_ptr<std::byte[]> mem(new std::byte[n == 0 ? 1 : n]);
  std::fill_n(mem.get(), n == 0 ? 1 : n, fill);
  std::byte* data = mem.get();
  return std::make_shared<MemoryObj>(
      std::move(mem), data, n,
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
}

MemoryObjPtr object_of(std::span<const std::byte> bytes) {
  MemoryObjPtr o = exact_object(bytes.size(), std::byte{0});
  if (!bytes.empty()) std::memcpy(o->data(), bytes.data(), bytes.size());
  return o;
}

enum class Verdict { kOk, kLmcrError, kInvalidArgument };

template <class Fn>
Verdict verdict_of(const std::string& what, Fn&& fn, std::string* message = nullptr) {
  try {
    fn();
    return Verdict::kOk;
  } catch (const LmcrError& e) {
    if (message != nullptr) *message = e.what();
    return Verdict::kLmcrError;
  } catch (const std::invalid_argument& e) {
    if (message != nullptr) *message = e.what();
    return Verdict::kInvalidArgument;
  } catch (...) {
    LMCACHE_FUZZ_FAIL(what + " threw " + describe_current_exception());
  }
}

const ObjectKey& any_key() {
  static const ObjectKey key("lmcr-fuzz", "fuzz", 0, 0, "");
  return key;
}

void fuzz_decode(std::span<const std::byte> stored) {
  LmcrRecordInfo info;
  const Verdict header = verdict_of("lmcr_parse_header", [&] { info = lmcr_parse_header(stored); });
  LMCACHE_FUZZ_CHECK(header != Verdict::kInvalidArgument,
                     "lmcr_parse_header threw std::invalid_argument, not LmcrError");
  Verdict valid = Verdict::kLmcrError;
  if (header == Verdict::kOk && info.record_size <= stored.size()) {
    valid = verdict_of("lmcr_validate_record",
                       [&] { lmcr_validate_record(stored.first(info.record_size)); });
    LMCACHE_FUZZ_CHECK(valid != Verdict::kInvalidArgument,
                       "lmcr_validate_record threw std::invalid_argument, not LmcrError");
  }
  if (header != Verdict::kOk || info.uncompressed_size > kMaxOut) return;

  const std::size_t n = static_cast<std::size_t>(info.uncompressed_size);
  std::vector<std::byte> out(n);
  std::string decode_error;
  const Verdict decoded = verdict_of(
      "lmcr_decode", [&] { lmcr_decode(stored, out); }, &decode_error);
  LMCACHE_FUZZ_CHECK(decoded != Verdict::kInvalidArgument,
                     "lmcr_decode threw std::invalid_argument: " + decode_error);
  if (decoded == Verdict::kOk) {
    LMCACHE_FUZZ_CHECK(valid == Verdict::kOk,
                       "lmcr_decode accepted a record lmcr_validate_record refuses");
  }

  // The deserializer over the stored bytes, into a destination of the declared size.
  MemoryObjPtr src = object_of(stored);
  MemoryObjPtr dst = exact_object(n, kCanary);
  std::string message;
  const Verdict deser = verdict_of(
      "LmcrDeserializer", [&] { LmcrDeserializer().deserialize(*src, *dst, any_key()); }, &message);
  const bool short_source = stored.size() < info.header_size || stored.size() < info.record_size;
  if (short_source) {
    LMCACHE_FUZZ_CHECK(
        deser == Verdict::kInvalidArgument,
        "a source shorter than its record was not std::invalid_argument: " + message);
  } else {
    LMCACHE_FUZZ_CHECK(deser == decoded, "LmcrDeserializer and lmcr_decode disagree: " + message +
                                             " / " + decode_error);
  }
  if (deser == Verdict::kOk) {
    LMCACHE_FUZZ_CHECK(n == 0 || std::memcmp(dst->data(), out.data(), n) == 0,
                       "LmcrDeserializer's bytes differ from lmcr_decode's");
  } else if (deser == Verdict::kInvalidArgument) {
    const auto b = dst->physical_bytes();
    LMCACHE_FUZZ_CHECK(std::all_of(b.begin(), b.end(), [](std::byte x) { return x == kCanary; }),
                       "LmcrDeserializer wrote its destination on a short source");
  }
}

void fuzz_round_trip(FuzzInput& in) {
  LmcrEncodeOptions options;
  options.framing = (in.byte() & 1) != 0 ? LmcrFraming::kGzip : LmcrFraming::kRaw;
  options.chunk_size = 16 * (1 + in.byte() % 64);
  options.level = in.byte() % 10;
  const std::span<const std::byte> input = as_bytes(in.rest());
  const std::size_t bound = lmcr_max_record_size(input.size(), options);
  std::vector<std::byte> record(bound);
  const std::size_t size = lmcr_encode(input, record, options);
  LMCACHE_FUZZ_CHECK(size <= bound, "lmcr_encode wrote past lmcr_max_record_size");
  record.resize(size);
  const Verdict valid = verdict_of("lmcr_validate_record", [&] { lmcr_validate_record(record); });
  LMCACHE_FUZZ_CHECK(valid == Verdict::kOk, "lmcr_encode's record does not validate");
  std::vector<std::byte> out(input.size());
  lmcr_decode(record, out);
  LMCACHE_FUZZ_CHECK(std::equal(out.begin(), out.end(), input.begin(), input.end()),
                     "lmcr_decode(lmcr_encode(x)) != x");
  MemoryObjPtr src = object_of(record);
  MemoryObjPtr dst = exact_object(input.size(), kCanary);
  LmcrDeserializer().deserialize(*src, *dst, any_key());
  LMCACHE_FUZZ_CHECK(input.empty() || std::memcmp(dst->data(), input.data(), input.size()) == 0,
                     "the deserializer's round trip differs from the input");
}

void fuzz_one(FuzzInput& in) {
  if ((in.byte() & 1) == 0) {
    fuzz_decode(as_bytes(in.rest()));
  } else {
    fuzz_round_trip(in);
  }
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
