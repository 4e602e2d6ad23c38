#include "lmcache/serde/chain_serde.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache {
namespace {

using core_internal::expect_invalid;

std::vector<ChainStage> stages(const char* json) {
  std::vector<ChainStage> out;
  for (const Json& s : Json::parse(json)) out.push_back(make_chain_stage(s));
  return out;
}

MemoryObjPtr floats(std::size_t n) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kFloat32));
  auto* f = reinterpret_cast<float*>(obj->data());
  for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
  return obj;
}

TEST(ChainSerde, Fp8ThenChecksumIsTheChecksumFrameOfTheFp8Bytes) {
  const char* cfg = R"([{"type": "fp8"}, {"type": "checksum"}])";
  ChainSerializer ser(stages(cfg));
  auto src = floats(256);
  // fp8's estimate (1.5 n) composed with checksum's (+17).
  EXPECT_EQ(ser.estimate_serialized_size(src->layout()), 256u * 3 / 2 + 17u);
  auto frame = MemoryObj::allocate(MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(ser.estimate_serialized_size(src->layout()))}, DType::kUInt8));
  frame->set_used_size(ser.serialize(*src, *frame, test_key(4)));
  EXPECT_EQ(frame->size(), 256u + 17u);

  // The same bytes as the two serdes run by hand.
  auto fp8 = MemoryObj::allocate(MemoryLayoutDesc::single({384}, DType::kUInt8));
  fp8->set_used_size(Fp8Serializer().serialize(*src, *fp8, test_key(4)));
  auto by_hand = MemoryObj::allocate(MemoryLayoutDesc::single({256 + 17}, DType::kUInt8));
  ChecksumSerializer().serialize(*fp8, *by_hand, test_key(4));
  EXPECT_EQ(std::memcmp(by_hand->data(), frame->data(), frame->size()), 0);

  auto back = floats(256);
  std::memset(back->data(), 0, back->size());
  ChainDeserializer(stages(cfg)).deserialize(*frame, *back, test_key(4));
  EXPECT_EQ(std::memcmp(back->data(), src->data(), back->size()), 0) << "values fp8 keeps exactly";

  frame->data()[100] ^= std::byte{0x10};
  EXPECT_THROW(ChainDeserializer(stages(cfg)).deserialize(*frame, *back, test_key(4)),
               std::runtime_error);
}

TEST(ChainSerde, ConfigErrorsNameTheStage) {
  expect_invalid([] { make_chain_serde_processor(Json::object()); }, {"stages", "required"});
  expect_invalid([] { make_chain_serde_processor(Json::parse(R"({"stages": []})")); },
                 {"non-empty"});
  expect_invalid(
      [] { make_chain_serde_processor(Json::parse(R"({"stages": [{"type": "zstd"}]})")); },
      {"stage 0", "zstd"});
  expect_invalid(
      [] {
        make_chain_serde_processor(
            Json::parse(R"({"stages": [{"type": "fp8"}, {"type": "chain", "stages": []}]})"));
      },
      {"stage 1", "cannot be chains"});
  expect_invalid(
      [] {
        make_chain_serde_processor(
            Json::parse(R"({"stages": [{"type": "checksum", "max_workers": 2}]})"));
      },
      {"stage 0", "max_workers"});
}

}  // namespace
}  // namespace lmcache
