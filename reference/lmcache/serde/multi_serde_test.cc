#include "lmcache/serde/multi_serde.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache {
namespace {

using ::testing::HasSubstr;

constexpr std::byte kGuard{0xAB};

MemoryObjPtr bytes_obj(std::size_t n, std::uint8_t fill) {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  std::fill(obj->physical_bytes().begin(), obj->physical_bytes().end(), std::byte{fill});
  return obj;
}

using core_internal::expect_invalid;

// The toy "concat" codec of the Python test: N mask bytes (1 = present), N u32-LE payload
// lengths, then the present payloads in slot order. Every slot may be absent.
class ConcatSerializer : public MultiSerializer {
 public:
  explicit ConcatSerializer(int group_size) : n_(checked(group_size)) {}
  static std::size_t checked(int group_size) {
    if (group_size <= 0) {
      throw std::invalid_argument("group_size must be positive, got " + std::to_string(group_size));
    }
    return static_cast<std::size_t>(group_size);
  }
  std::size_t group_size() const override { return n_; }

  std::size_t serialize(const MemoryObjGroup& src, MemoryObj& dst, const ObjectKey& key) override {
    validate_group_size(src.size(), n_, "src");
    std::vector<std::byte> out(5 * n_);
    for (std::size_t i = 0; i < n_; ++i) {
      std::uint32_t len = src[i] ? static_cast<std::uint32_t>(src[i]->size()) : 0;
      out[i] = std::byte{static_cast<std::uint8_t>(src[i] ? 1 : 0)};
      for (int b = 0; b < 4; ++b)
        out[n_ + 4 * i + b] = std::byte{static_cast<std::uint8_t>(len >> (8 * b))};
      if (src[i]) out.insert(out.end(), src[i]->bytes().begin(), src[i]->bytes().end());
    }
    if (out.size() > dst.physical_size()) throw std::invalid_argument("dst too small");
    std::copy(out.begin(), out.end(), dst.data());
    return out.size();
  }

  std::size_t estimate_serialized_size(const LayoutDescGroup& layouts) const override {
    validate_group_size(layouts.size(), n_, "layout");
    std::size_t total = 5 * n_;
    for (const auto& l : layouts) total += l ? l->total_bytes() : 0;
    return total;
  }

 private:
  std::size_t n_;
};

class ConcatDeserializer : public MultiDeserializer {
 public:
  explicit ConcatDeserializer(int group_size) : n_(ConcatSerializer::checked(group_size)) {}
  std::size_t group_size() const override { return n_; }

  void deserialize(const MemoryObj& src, const MemoryObjGroup& dst, const ObjectKey& key) override {
    validate_group_size(dst.size(), n_, "dst");
    auto in = src.bytes();
    std::size_t offset = 5 * n_;
    for (std::size_t i = 0; i < n_; ++i) {
      if (in[i] == std::byte{0}) continue;
      std::uint32_t len = 0;
      for (int b = 0; b < 4; ++b)
        len |= std::to_integer<std::uint32_t>(in[n_ + 4 * i + b]) << (8 * b);
      if (dst[i]) std::copy_n(in.begin() + offset, len, dst[i]->data());
      offset += len;
    }
  }

 private:
  std::size_t n_;
};

// Ported from LMCache's Python tests.
TEST(MultiSerde, GroupSizeIsFixed) {
  EXPECT_EQ(ConcatSerializer(2).group_size(), 2u);
  EXPECT_EQ(ConcatDeserializer(2).group_size(), 2u);
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, ToyCodecRejectsNonPositiveGroupSize) {
  EXPECT_THROW(ConcatSerializer(0), std::invalid_argument);
  EXPECT_THROW(ConcatSerializer(-1), std::invalid_argument);
  EXPECT_THROW(ConcatDeserializer(0), std::invalid_argument);
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, ValidateGroupSizeMessage) {
  EXPECT_NO_THROW(validate_group_size(2, 2, "src"));
  expect_invalid([] { validate_group_size(3, 2, "src"); },
                 {"MultiSerde src group length 3 does not match expected 2"});
  expect_invalid([] { validate_group_size(0, 1, "dst"); },
                 {"MultiSerde dst group length 0 does not match expected 1"});
  ConcatSerializer s(2);
  auto dst = bytes_obj(64, 0);
  expect_invalid([&] { s.serialize({bytes_obj(1, 1)}, *dst, test_key()); }, {"src"});
  ConcatDeserializer d(2);
  expect_invalid([&] { d.deserialize(*dst, {nullptr, nullptr, nullptr}, test_key()); }, {"dst"});
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, TwoSlotRoundTripAllPresent) {
  ConcatSerializer s(2);
  ConcatDeserializer d(2);
  auto k = bytes_obj(6, 0x11), v = bytes_obj(4, 0x22);
  const std::size_t estimate = s.estimate_serialized_size({k->layout(), v->layout()});
  auto buf = bytes_obj(estimate, 0);
  std::size_t n = s.serialize({k, v}, *buf, test_key());
  EXPECT_LE(n, estimate);
  EXPECT_EQ(n, 10u + 6u + 4u);
  buf->set_used_size(n);
  auto k2 = bytes_obj(6, 0), v2 = bytes_obj(4, 0);
  d.deserialize(*buf, {k2, v2}, test_key());
  EXPECT_TRUE(std::equal(k2->bytes().begin(), k2->bytes().end(), k->bytes().begin()));
  EXPECT_TRUE(std::equal(v2->bytes().begin(), v2->bytes().end(), v->bytes().begin()));
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, NoneSlotSkipsItsPayload) {
  ConcatSerializer s(2);
  ConcatDeserializer d(2);
  auto v = bytes_obj(4, 0x22);
  const std::size_t estimate = s.estimate_serialized_size({std::nullopt, v->layout()});
  auto buf = bytes_obj(estimate, 0);
  std::size_t n = s.serialize({nullptr, v}, *buf, test_key());
  EXPECT_EQ(n, 10u + 4u);
  buf->set_used_size(n);
  auto v2 = bytes_obj(4, 0);
  d.deserialize(*buf, {nullptr, v2}, test_key());
  EXPECT_TRUE(std::equal(v2->bytes().begin(), v2->bytes().end(), v->bytes().begin()));
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, NoneDestinationSlotIsLeftUntouched) {
  ConcatSerializer s(2);
  ConcatDeserializer d(2);
  auto k = bytes_obj(6, 0x11), v = bytes_obj(4, 0x22);
  auto buf = bytes_obj(64, 0);
  buf->set_used_size(s.serialize({k, v}, *buf, test_key()));
  auto caller_k = bytes_obj(6, 0xAB);  // the caller's own K, sourced elsewhere
  auto v2 = bytes_obj(4, 0);
  d.deserialize(*buf, {nullptr, v2}, test_key());
  EXPECT_TRUE(std::all_of(caller_k->bytes().begin(), caller_k->bytes().end(),
                          [](std::byte b) { return b == kGuard; }));
  EXPECT_TRUE(std::equal(v2->bytes().begin(), v2->bytes().end(), v->bytes().begin()));
}

// --- The length-1 bridges over the fp8 serde. -----------------------------------------------

MemoryObjPtr kv_object() {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc({{2, 5}, {3}}, {DType::kBFloat16, DType::kFloat32}));
  const float values[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, -1.0f, 0.25f, -2.0f};
  auto* bf16 = reinterpret_cast<std::uint16_t*>(obj->group_bytes(0).data());
  for (int i = 0; i < 10; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    bf16[i] = static_cast<std::uint16_t>(bits >> 16);
  }
  std::memcpy(obj->group_bytes(1).data(), values, 12);
  return obj;
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, SingleToMultiBridgeIsByteIdenticalToADirectCall) {
  auto ser = std::make_shared<Fp8Serializer>();
  auto deser = std::make_shared<Fp8Deserializer>();
  MultiSerializerPtr ms = single_to_multi_serializer(ser);
  MultiDeserializerPtr md = single_to_multi_deserializer(deser);
  EXPECT_EQ(ms->group_size(), 1u);
  EXPECT_EQ(md->group_size(), 1u);

  auto src = kv_object();
  EXPECT_EQ(ms->estimate_serialized_size({src->layout()}),
            ser->estimate_serialized_size(src->layout()));
  auto direct = bytes_obj(32, 0xAB), bridged = bytes_obj(32, 0xAB);
  std::size_t n_direct = ser->serialize(*src, *direct, test_key());
  std::size_t n_bridged = ms->serialize({src}, *bridged, test_key());
  EXPECT_EQ(n_bridged, n_direct);
  EXPECT_TRUE(std::equal(direct->physical_bytes().begin(), direct->physical_bytes().end(),
                         bridged->physical_bytes().begin()))
      << "same bytes, guard bytes included";

  bridged->set_used_size(n_bridged);
  direct->set_used_size(n_direct);
  auto out_direct = MemoryObj::allocate(src->layout());
  auto out_bridged = MemoryObj::allocate(src->layout());
  deser->deserialize(*direct, *out_direct, test_key());
  md->deserialize(*bridged, {out_bridged}, test_key());
  EXPECT_TRUE(std::equal(out_direct->bytes().begin(), out_direct->bytes().end(),
                         out_bridged->bytes().begin()));
  EXPECT_TRUE(
      std::equal(out_bridged->bytes().begin(), out_bridged->bytes().end(), src->bytes().begin()));
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, SingleToMultiSerializerRejectsNonUnitGroup) {
  MultiSerializerPtr ms = single_to_multi_serializer(std::make_shared<Fp8Serializer>());
  auto dst = bytes_obj(64, 0xAB);
  expect_invalid(
      [&] {
        ms->serialize({kv_object(), kv_object()}, *dst, test_key());
      },
      {"size 1", "got 2"});
  expect_invalid([&] { ms->serialize({}, *dst, test_key()); }, {"size 1", "got 0"});
  EXPECT_TRUE(std::all_of(dst->bytes().begin(), dst->bytes().end(),
                          [](std::byte b) { return b == kGuard; }));
  expect_invalid(
      [&] {
        ms->estimate_serialized_size({std::nullopt, std::nullopt});
      },
      {"size 1", "got 2"});
}

// Ported from LMCache's Python tests.
TEST(MultiSerde, SingleToMultiSerializerRejectsNoneSlot) {
  MultiSerializerPtr ms = single_to_multi_serializer(std::make_shared<Fp8Serializer>());
  auto dst = bytes_obj(64, 0xAB);
  expect_invalid([&] { ms->serialize({nullptr}, *dst, test_key()); }, {"None src"});
  expect_invalid([&] { ms->estimate_serialized_size({std::nullopt}); },
                 {"non-None layout descriptor"});
}

// A deserializer that records calls: the skip must not read src at all.
class SpyDeserializer : public Deserializer {
 public:
  void deserialize(const MemoryObj&, MemoryObj&, const ObjectKey&) override { calls.fetch_add(1); }
  std::atomic<int> calls{0};
};

// Ported from LMCache's Python tests.
TEST(MultiSerde, SingleToMultiDeserializerTreatsNoneSlotAsSkip) {
  auto spy = std::make_shared<SpyDeserializer>();
  MultiDeserializerPtr md = single_to_multi_deserializer(spy);
  auto empty_src = bytes_obj(0, 0);  // would be too short for any real decode
  EXPECT_NO_THROW(md->deserialize(*empty_src, {nullptr}, test_key()));
  EXPECT_EQ(spy->calls.load(), 0) << "nothing is read";
  md->deserialize(*empty_src, {bytes_obj(1, 0)}, test_key());
  EXPECT_EQ(spy->calls.load(), 1);

  // With the real fp8 deserializer: a skip does not even check the source size.
  MultiDeserializerPtr fp8 = single_to_multi_deserializer(std::make_shared<Fp8Deserializer>());
  EXPECT_NO_THROW(fp8->deserialize(*empty_src, {nullptr}, test_key()));
}

TEST(MultiSerde, SingleToMultiDeserializerRejectsNonUnitGroup) {
  auto spy = std::make_shared<SpyDeserializer>();
  MultiDeserializerPtr md = single_to_multi_deserializer(spy);
  auto src = bytes_obj(4, 0);
  expect_invalid(
      [&] {
        md->deserialize(*src, {nullptr, nullptr}, test_key());
      },
      {"size 1", "got 2"});
  expect_invalid([&] { md->deserialize(*src, {}, test_key()); }, {"size 1", "got 0"});
  EXPECT_EQ(spy->calls.load(), 0);
}

TEST(MultiSerde, BridgesRejectNullInner) {
  EXPECT_THROW(single_to_multi_serializer(nullptr), std::invalid_argument);
  EXPECT_THROW(single_to_multi_deserializer(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache
