// LMCR v1 records (docs/lmcr.md): LMCache's frozen fixtures byte for byte, round trips over sizes,
// chunk sizes and both framings, and every check named: each header and descriptor field, both
// CRCs, alignment gaps, truncation, and streams that end early, run long or carry trailing bytes.
#include "lmcache/serde/lmcr_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/hex.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/serde/lmcr_serde.h"
#include "lmcache/serde/serde_registry.h"

namespace lmcache {
namespace {

using Bytes = std::vector<std::byte>;
using core_internal::expect_invalid;

Bytes bytes_of_hex(const std::string& hex) {
  const std::string s = bytes_from_hex(hex).value();
  Bytes out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

Bytes pattern(std::size_t n, unsigned seed) {
  Bytes out(n);
  // Compressible runs and noise, so that chunks compress to varied sizes.
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::byte>(((i / 7) % 3 == 0) ? (i * 131 + seed) >> 3 : seed);
  }
  return out;
}

Bytes encode(const Bytes& in, LmcrEncodeOptions options) {
  Bytes out(lmcr_max_record_size(in.size(), options));
  out.resize(lmcr_encode(in, out, options));
  return out;
}

Bytes decode(const Bytes& record, std::size_t n) {
  Bytes out(n);
  lmcr_decode(record, out);
  return out;
}

std::uint32_t get_u32(const Bytes& b, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(b[at + i]);
  return v;
}

void put(Bytes& b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i, v >>= 8) b[at + i] = static_cast<std::byte>(v & 0xff);
}

std::uint32_t crc(const std::byte* p, std::size_t n, std::uint32_t c = 0) {
  return static_cast<std::uint32_t>(::crc32(c, reinterpret_cast<const Bytef*>(p), n));
}

// Recomputes both CRCs after an edit, so that the check behind them is what fails.
void reseal(Bytes& r) {
  const std::uint32_t header_size = get_u32(r, 8);
  if (header_size > r.size()) return;  // the size check comes first
  put(r, 36, crc(r.data() + header_size, r.size() - header_size), 4);
  put(r, 32, 0, 4);
  put(r, 32, crc(r.data(), header_size), 4);
}

void expect_lmcr_error(const Bytes& record, std::size_t n, const std::string& needle,
                       const std::string& what) {
  try {
    (void)decode(record, n);
    ADD_FAILURE() << what << ": accepted";
  } catch (const LmcrError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(needle)) << what;
  }
}

TEST(LmcrRecord, LmcachesFrozenFixturesByteForByte) {
  std::ifstream in(LMCACHE_SERDE_TESTDATA_DIR "/lmcr_vectors.json");
  ASSERT_TRUE(in) << "cannot open lmcr_vectors.json";
  const Json vectors = Json::parse(in).at("vectors");
  ASSERT_EQ(vectors.size(), 2u);
  for (const Json& v : vectors) {
    const Bytes payload = bytes_of_hex(v.at("payload"));
    const Bytes want = bytes_of_hex(v.at("record"));
    LmcrEncodeOptions options;
    options.framing = v.at("framing") == "gzip" ? LmcrFraming::kGzip : LmcrFraming::kRaw;
    EXPECT_EQ(encode(payload, options), want) << v.at("name");
    const LmcrRecordInfo info = lmcr_validate_record(want);
    EXPECT_EQ(info.framing, options.framing);
    EXPECT_EQ(info.record_size, want.size());
    ASSERT_EQ(info.chunks.size(), 1u);
    EXPECT_EQ(info.chunks[0].offset, 80u);
    EXPECT_EQ(decode(want, payload.size()), payload) << v.at("name");
  }
}

TEST(LmcrRecord, RoundTripsEverySizeChunkSizeAndFraming) {
  for (LmcrFraming framing : {LmcrFraming::kRaw, LmcrFraming::kGzip}) {
    for (std::size_t chunk : {16u, 48u, 4096u, 1u << 20}) {
      for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 47u, 4095u, 4096u, 4097u, 100003u}) {
        if ((n + chunk - 1) / chunk > kLmcrMaxChunks) continue;
        const Bytes in = pattern(n, static_cast<unsigned>(n + chunk));
        const LmcrEncodeOptions options{framing, chunk, 6};
        const Bytes record = encode(in, options);
        const std::string what = "n " + std::to_string(n) + ", chunk " + std::to_string(chunk);
        EXPECT_LE(record.size(), lmcr_max_record_size(n, options)) << what;
        const LmcrRecordInfo info = lmcr_validate_record(record);
        EXPECT_EQ(info.chunks.size(), (n + chunk - 1) / chunk) << what;
        EXPECT_EQ(info.uncompressed_size, n) << what;
        if (n == 0) {
          EXPECT_EQ(record.size(), kLmcrHeaderBytes);
        }
        for (const LmcrChunk& c : info.chunks) EXPECT_EQ(c.offset % kLmcrAlignment, 0u) << what;
        EXPECT_EQ(decode(record, n), in) << what;
        // A longer source decodes the same (the record says where it ends); another
        // destination size is refused by name.
        Bytes longer = record;
        longer.resize(record.size() + 9, std::byte{0x5a});
        EXPECT_EQ(decode(longer, n), in) << what;
        expect_lmcr_error(record, n + 1, "the destination", what);
      }
    }
  }
}

// Any flipped bit in the header and descriptors fails the header CRC (or an earlier check), and
// any flipped bit after them the payload CRC: nothing damaged ever decodes.
TEST(LmcrRecord, EveryFlippedBitIsRefused) {
  const Bytes in = pattern(100, 3);
  const Bytes record = encode(in, {LmcrFraming::kGzip, 48, 6});
  ASSERT_EQ(lmcr_validate_record(record).chunks.size(), 3u);
  for (std::size_t bit = 0; bit < record.size() * 8; ++bit) {
    Bytes bad = record;
    bad[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    EXPECT_THROW((void)decode(bad, in.size()), LmcrError) << "bit " << bit;
  }
}

TEST(LmcrRecord, EachFieldsCheckIsNamed) {
  const Bytes in = pattern(100, 5);
  const Bytes good = encode(in, {LmcrFraming::kRaw, 48, 6});
  struct Case {
    const char* what;
    std::function<void(Bytes&)> edit;
    const char* needle;
  };
  const std::size_t d0 = kLmcrHeaderBytes;  // the first descriptor
  const std::vector<Case> cases = {
      {"magic", [](Bytes& r) { r[0] = std::byte{'X'}; }, "bad magic"},
      {"version", [](Bytes& r) { r[4] = std::byte{2}; }, "unknown version 2"},
      {"codec", [](Bytes& r) { r[5] = std::byte{2}; }, "unknown codec 2"},
      {"framing", [](Bytes& r) { r[6] = std::byte{3}; }, "unknown framing 3"},
      {"transform", [](Bytes& r) { r[7] = std::byte{1}; }, "transform 1"},
      {"header size", [](Bytes& r) { put(r, 8, 44 + 24 * 2, 4); }, "does not match 3 chunks"},
      {"header size past 1 MiB", [](Bytes& r) { put(r, 8, (1u << 20) + 4, 4); }, "outside"},
      {"record size", [](Bytes& r) { put(r, 12, r.size() + 1, 8); }, "record size"},
      {"uncompressed size", [](Bytes& r) { put(r, 20, 101, 8); }, "not the chunks' sum"},
      {"chunk count", [](Bytes& r) { put(r, 28, 2, 4); }, "does not match 2 chunks"},
      {"header flags", [](Bytes& r) { r[40] = std::byte{1}; }, "reserved header flags"},
      {"descriptor offset", [&](Bytes& r) { put(r, d0, 96, 8); }, "payload at offset 96"},
      {"empty chunk", [&](Bytes& r) { put(r, d0 + 8, 0, 4); }, "empty"},
      {"unaligned chunk size", [&](Bytes& r) { put(r, d0 + 12, 47, 4); }, "not a multiple of 16"},
      {"descriptor flags", [&](Bytes& r) { r[d0 + 20] = std::byte{1}; }, "reserved descriptor"},
      {"chunk CRC", [&](Bytes& r) { r[d0 + 16] ^= std::byte{1}; }, "CRC mismatch after inflating"},
      {"gap", [](Bytes& r) { r[get_u32(r, 8)] = std::byte{1}; }, "alignment gap"},
  };
  for (const Case& c : cases) {
    Bytes bad = good;
    c.edit(bad);
    reseal(bad);
    expect_lmcr_error(bad, in.size(), c.needle, c.what);
  }
  Bytes bad = good;
  bad[33] ^= std::byte{1};
  expect_lmcr_error(bad, in.size(), "header CRC mismatch", "header CRC");
  bad = good;
  bad.back() ^= std::byte{1};
  expect_lmcr_error(bad, in.size(), "payload CRC mismatch", "payload CRC");
}

// One chunk's stream edited (its descriptor and both CRCs kept consistent): trailing bytes, a
// stream cut short, and declared sizes below and above what it inflates to.
TEST(LmcrRecord, StreamsMustInflateToExactlyTheirChunk) {
  const Bytes in = pattern(40, 9);
  const Bytes good = encode(in, {LmcrFraming::kRaw, 1u << 20, 6});
  const std::size_t d0 = kLmcrHeaderBytes;
  const std::size_t csize = get_u32(good, d0 + 8);
  auto with_stream_size = [&](std::size_t size) {
    Bytes r = good;
    r.resize(80 + size, std::byte{0});
    put(r, 12, r.size(), 8);
    put(r, d0 + 8, size, 4);
    reseal(r);
    return r;
  };
  expect_lmcr_error(with_stream_size(csize + 3), in.size(), "after its stream's end",
                    "trailing bytes");
  expect_lmcr_error(with_stream_size(csize - 2), in.size(), "truncated", "cut stream");
  for (std::uint32_t declared : {39u, 41u}) {
    Bytes r = good;
    put(r, d0 + 12, declared, 4);
    put(r, 20, declared, 8);
    reseal(r);
    expect_lmcr_error(r, declared, declared < 40 ? "inflates past" : "inflates to 40",
                      "declared " + std::to_string(declared));
  }
  Bytes gzip_as_raw = encode(in, {LmcrFraming::kGzip, 1u << 20, 6});
  gzip_as_raw[6] = std::byte{1};
  reseal(gzip_as_raw);
  expect_lmcr_error(gzip_as_raw, in.size(), "no valid raw Deflate stream", "framing mismatch");
}

TEST(LmcrRecord, TruncationAtEveryLengthIsRefused) {
  const Bytes in = pattern(70, 1);
  const Bytes record = encode(in, {LmcrFraming::kGzip, 32, 6});
  for (std::size_t n = 0; n < record.size(); ++n) {
    const Bytes cut(record.begin(), record.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_THROW((void)decode(cut, in.size()), LmcrError) << n << " bytes";
  }
}

TEST(LmcrRecord, OptionsAndOutputSizeAreChecked) {
  const Bytes in = pattern(64, 2);
  Bytes out(1024);
  expect_invalid([&] { (void)lmcr_encode(in, out, {LmcrFraming::kRaw, 24, 6}); }, {"chunk_size"});
  expect_invalid([&] { (void)lmcr_encode(in, out, {LmcrFraming::kRaw, 0, 6}); }, {"chunk_size"});
  expect_invalid([&] { (void)lmcr_encode(in, out, {LmcrFraming::kRaw, 16, 10}); }, {"level"});
  expect_invalid(
      [&] {
        (void)lmcr_encode(in, out, {static_cast<LmcrFraming>(3), 16, 6});
      },
      {"framing"});
  Bytes no_header(60);
  expect_invalid(
      [&] {
        (void)lmcr_encode(in, no_header, {LmcrFraming::kRaw, 16, 6});
      },
      {"cannot hold the header"});
  Bytes no_payload(160);
  expect_invalid(
      [&] {
        (void)lmcr_encode(in, no_payload, {LmcrFraming::kRaw, 16, 6});
      },
      {"bytes too small for chunk"});
  expect_invalid(
      [&] {
        (void)lmcr_max_record_size(16 * (kLmcrMaxChunks + 1), {LmcrFraming::kRaw, 16, 6});
      },
      {"43688"});
  (void)lmcr_max_record_size(16 * kLmcrMaxChunks, {LmcrFraming::kRaw, 16, 6});
}

MemoryObjPtr object_of(const Bytes& bytes, std::size_t capacity) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(capacity)}, DType::kUInt8));
  std::memset(obj->data(), 0, capacity);
  if (!bytes.empty()) std::memcpy(obj->data(), bytes.data(), bytes.size());
  return obj;
}

TEST(LmcrSerde, RoundTripsAndRefusesShortSources) {
  LmcrSerializer ser({LmcrFraming::kGzip, 64, 6});
  const Bytes in = pattern(300, 4);
  auto src = object_of(in, in.size());
  const std::size_t estimate = ser.estimate_serialized_size(src->layout());
  auto frame = object_of({}, estimate);
  const std::size_t n = ser.serialize(*src, *frame, ObjectKey("h", "m", 0));
  EXPECT_LE(n, estimate);
  auto dst = object_of({}, in.size());
  LmcrDeserializer().deserialize(*frame, *dst, ObjectKey("other", "m", 1));
  EXPECT_EQ(std::memcmp(dst->data(), in.data(), in.size()), 0);
  for (std::size_t cut : {std::size_t{0}, std::size_t{43}, std::size_t{100}, n - 1}) {
    frame->set_used_size(cut);
    EXPECT_THROW(LmcrDeserializer().deserialize(*frame, *dst, ObjectKey("h", "m", 0)),
                 std::invalid_argument)
        << cut;
  }
  auto tiny = object_of({}, estimate - 1);
  EXPECT_THROW((void)ser.serialize(*src, *tiny, ObjectKey("h", "m", 0)), std::invalid_argument);
}

TEST(LmcrSerde, ConfigErrorsNameTheKey) {
  auto make = [](Json j) { return make_lmcr_serde_processor(j); };
  expect_invalid([&] { make({{"framing", "zstd"}}); }, {"framing", "zstd"});
  expect_invalid([&] { make({{"chunk_size", 100}}); }, {"chunk_size", "100"});
  expect_invalid([&] { make({{"level", 11}}); }, {"level"});
  expect_invalid([&] { make({{"bind_key", true}}); }, {"bind_key"});
  EXPECT_NE(create_serde_processor(
                Json{{"type", "lmcr"}, {"framing", "gzip"}, {"chunk_size", 4096}, {"level", 1}}),
            nullptr);
}

}  // namespace
}  // namespace lmcache
