#include "lmcache/serde/checksum_serde.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/core/testing/test_objects.h"

namespace lmcache {
namespace {

using core_internal::expect_invalid;

using core_internal::bytes_of;

MemoryObjPtr frame_of(const MemoryObj& src, const ObjectKey& key) {
  ChecksumSerializer ser;
  auto frame = MemoryObj::allocate(MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(ser.estimate_serialized_size(src.layout()))}, DType::kUInt8));
  frame->set_used_size(ser.serialize(src, *frame, key));
  return frame;
}

TEST(ChecksumSerde, FrameLayoutIsLmcaches) {
  // XXH3-64("abc", seed 0) = 0x78af5f94892f3950 (xxHash's reference value).
  auto src = MemoryObj::allocate(MemoryLayoutDesc::single({3}, DType::kUInt8));
  std::memcpy(src->data(), "abc", 3);
  const ObjectKey key(std::string("\x01\x02\x03", 3), "m", 0);
  auto frame = frame_of(*src, key);
  ASSERT_EQ(frame->size(), 3u + 17u);
  const auto* b = reinterpret_cast<const std::uint8_t*>(frame->data());
  EXPECT_EQ(b[0], 1);
  const std::uint8_t fingerprint[8] = {1, 2, 3, 0, 0, 0, 0, 0};  // zero-padded
  EXPECT_EQ(std::memcmp(b + 1, fingerprint, 8), 0);
  const std::uint8_t hash[8] = {0x78, 0xaf, 0x5f, 0x94, 0x89, 0x2f, 0x39, 0x50};
  EXPECT_EQ(std::memcmp(b + 9, hash, 8), 0);
  EXPECT_EQ(std::memcmp(b + 17, "abc", 3), 0);
}

TEST(ChecksumSerde, RoundTripsAndSourceMayBeLonger) {
  auto src = bytes_of(1000);
  auto frame = frame_of(*src, test_key(3));
  frame->set_used_size(frame->physical_size());  // a longer source: its tail is ignored
  auto dst = bytes_of(1000, 99);
  ChecksumDeserializer().deserialize(*frame, *dst, test_key(3));
  EXPECT_EQ(std::memcmp(dst->data(), src->data(), 1000), 0);
}

TEST(ChecksumSerde, EveryBitFlipAndTruncationFails) {
  auto src = bytes_of(40);
  const auto frame = frame_of(*src, test_key(1));
  const std::size_t n = frame->size();
  for (std::size_t bit = 0; bit < n * 8; ++bit) {
    auto copy = bytes_of(n);
    std::memcpy(copy->data(), frame->data(), n);
    copy->data()[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    auto dst = bytes_of(40);
    EXPECT_THROW(ChecksumDeserializer().deserialize(*copy, *dst, test_key(1)), std::runtime_error)
        << "bit " << bit;
  }
  for (std::size_t len = 0; len < n; ++len) {
    auto cut = bytes_of(len);
    std::memcpy(cut->data(), frame->data(), len);
    auto dst = bytes_of(40);
    EXPECT_THROW(ChecksumDeserializer().deserialize(*cut, *dst, test_key(1)), std::invalid_argument)
        << "length " << len;
  }
}

TEST(ChecksumSerde, AnotherChunksFrameFailsNamingTheCheck) {
  auto frame = frame_of(*bytes_of(16), test_key(1));
  auto dst = bytes_of(16);
  try {
    ChecksumDeserializer().deserialize(*frame, *dst, test_key(2));
    FAIL() << "a frame of another chunk hash was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("fingerprint"));
  }
  frame->data()[0] = std::byte{2};
  EXPECT_THROW(ChecksumDeserializer().deserialize(*frame, *dst, test_key(1)), std::runtime_error);
}

TEST(ChecksumSerde, EstimateIsExactAndSmallDestinationRejected) {
  ChecksumSerializer ser;
  auto src = bytes_of(100);
  EXPECT_EQ(ser.estimate_serialized_size(src->layout()), 117u);
  auto small = bytes_of(116);
  expect_invalid([&] { ser.serialize(*src, *small, test_key()); }, {"too small", "116", "117"});
}

TEST(ChecksumSerde, ConfigRejectsUnknownKeys) {
  expect_invalid([] { make_checksum_serde_processor(Json::parse(R"({"bogus": 1})")); }, {"bogus"});
  EXPECT_NE(make_checksum_serde_processor(Json::parse(R"({"max_workers": 2})")), nullptr);
}

}  // namespace
}  // namespace lmcache
