// Byte-exact frames: the checksum, aesgcm, encrypt, fp8 and chain serializers against vectors
// computed in Python from the frame definitions alone (testdata/frame_vectors.json, made and
// re-checked in CI by reference/tools/lmcache_frame_vectors.py). aesgcm and encrypt vectors carry
// their IV; the serializer gets it through the test-only hook, so equality is exact. Each vector is
// also decoded back.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/hex.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/chain_serde.h"
#include "lmcache/serde/checksum_serde.h"

namespace lmcache {
namespace {

Json load_vectors() {
  std::ifstream in(LMCACHE_SERDE_TESTDATA_DIR "/frame_vectors.json");
  if (!in)
    throw std::runtime_error("cannot open " LMCACHE_SERDE_TESTDATA_DIR "/frame_vectors.json");
  return Json::parse(in);
}

// Hex fields of the vectors file; a malformed one fails the test by throwing.
std::string unhex(const std::string& hex) { return bytes_from_hex(hex).value(); }

MemoryObjPtr object_of(const std::string& bytes, std::size_t capacity) {
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(capacity)}, DType::kUInt8));
  std::memset(obj->data(), 0xA5, capacity);
  std::memcpy(obj->data(), bytes.data(), bytes.size());
  return obj;
}

std::string bytes_in(const MemoryObj& obj) {
  return std::string(reinterpret_cast<const char*>(obj.data()), obj.size());
}

TEST(FrameVectors, ChecksumFramesAreByteExact) {
  const Json vectors = load_vectors().at("checksum");
  ASSERT_FALSE(vectors.empty());
  for (const Json& v : vectors) {
    const std::string payload = unhex(v.at("payload"));
    const std::string want = unhex(v.at("frame"));
    const ObjectKey key(unhex(v.at("chunk_hash")), "m", 0);
    auto src = object_of(payload, payload.size());
    ChecksumSerializer ser;
    ASSERT_EQ(ser.estimate_serialized_size(src->layout()), want.size());
    auto frame = object_of("", want.size());
    frame->set_used_size(ser.serialize(*src, *frame, key));
    EXPECT_EQ(bytes_in(*frame), want) << "payload of " << payload.size() << " bytes";
    auto dst = object_of("", payload.size());
    ChecksumDeserializer().deserialize(*object_of(want, want.size()), *dst, key);
    EXPECT_EQ(bytes_in(*dst), payload);
  }
}

class AesGcmFrameVectors : public ::testing::TestWithParam<AesGcmFlavor> {};

TEST_P(AesGcmFrameVectors, FramesAreByteExactWithTheVectorsIv) {
  const AesGcmFlavor flavor = GetParam();
  const Json vectors = load_vectors().at(std::string(aesgcm_flavor_type(flavor)));
  ASSERT_FALSE(vectors.empty());
  for (const Json& v : vectors) {
    const std::string payload = unhex(v.at("payload"));
    const std::string want = unhex(v.at("frame"));
    const std::string iv = unhex(v.at("iv"));
    const ObjectKey key(unhex(v.at("chunk_hash")), v.at("model_name").get<std::string>(),
                        v.at("kv_rank").get<std::int64_t>(),
                        v.at("object_group_id").get<std::int64_t>(),
                        v.at("cache_salt").get<std::string>());
    const AesGcmOptions options{std::make_shared<AesGcmKeyring>(
                                    unhex(v.at("master_key")), v.at("aes_bits").get<int>(), flavor),
                                v.at("bind_key").get<bool>()};
    const std::string what = std::string(options.keyring->type()) + " aes-" +
                             std::to_string(options.keyring->aes_bits()) + ", salt '" +
                             key.cache_salt() + "', bind_key " + (options.bind_key ? "on" : "off");
    AesGcmSerializer ser(options);
    std::array<std::uint8_t, kAesGcmIvBytes> fixed{};
    ASSERT_EQ(iv.size(), fixed.size());
    std::memcpy(fixed.data(), iv.data(), fixed.size());
    ser.set_fixed_iv_for_testing(fixed);
    auto src = object_of(payload, payload.size());
    ASSERT_EQ(ser.estimate_serialized_size(src->layout()), want.size()) << what;
    auto frame = object_of("", want.size());
    frame->set_used_size(ser.serialize(*src, *frame, key));
    EXPECT_EQ(bytes_in(*frame), want) << what;
    auto dst = object_of("", payload.size());
    AesGcmDeserializer(options).deserialize(*object_of(want, want.size()), *dst, key);
    EXPECT_EQ(bytes_in(*dst), payload) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(BothSerdes, AesGcmFrameVectors,
                         ::testing::Values(AesGcmFlavor::kAesGcm, AesGcmFlavor::kEncrypt),
                         [](const auto& info) {
                           return std::string(aesgcm_flavor_type(info.param));
                         });

// fp8 and chain vectors: float32, float16 or bfloat16 inputs, one frame, the values it decodes to
// in the same dtype (the reference's NaN bits, docs/fp8.md section 4, so the comparison is byte
// for byte). A decode-only vector (fp8's 256 codes) is only read.
void expect_value_vector(const ChainStage& pair, const Json& v, const ObjectKey& key,
                         const std::string& what) {
  const std::string input = unhex(v.at("input"));
  const std::string want = unhex(v.at("frame"));
  const std::string decoded = unhex(v.at("decoded"));
  const auto elements = v.at("elements").get<std::int64_t>();
  const DType dtype = dtype_from_name(v.at("dtype").get<std::string>());
  ASSERT_EQ(input.size(), element_size(dtype) * static_cast<std::size_t>(elements));
  const MemoryLayoutDesc layout = MemoryLayoutDesc::single({elements}, dtype);
  if (!v.value("decode_only", false)) {
    auto src = MemoryObj::allocate(layout);
    std::memcpy(src->data(), input.data(), input.size());
    auto frame = object_of("", pair.serializer->estimate_serialized_size(layout));
    frame->set_used_size(pair.serializer->serialize(*src, *frame, key));
    EXPECT_EQ(bytes_in(*frame), want) << what;
  }
  auto dst = MemoryObj::allocate(layout);
  pair.deserializer->deserialize(*object_of(want, want.size()), *dst, key);
  EXPECT_EQ(bytes_in(*dst), decoded) << what;
}

TEST(FrameVectors, Fp8FramesAreByteExactInEveryMode) {
  const Json vectors = load_vectors().at("fp8");
  ASSERT_EQ(vectors.size(), 9u);
  for (const Json& v : vectors) {
    const Json config{
        {"type", "fp8"}, {"fp8_dtype", v.at("fp8_dtype")}, {"overflow", v.at("overflow")}};
    expect_value_vector(make_serde_pair(config), v, ObjectKey("k", "m", 0),
                        config.dump() + " over " + v.at("dtype").get<std::string>());
  }
}

// A chain stage of the vectors: a built-in config, or an aesgcm stage under the vector's own
// master key ("master_key_hex") whose serializer writes the frame's IV (its bytes 1-12).
ChainStage vector_stage(const Json& stage, const std::string& frame) {
  if (!stage.contains("master_key_hex")) return make_chain_stage(stage);
  const AesGcmOptions options{
      std::make_shared<AesGcmKeyring>(unhex(stage.at("master_key_hex")),
                                      stage.at("aes_bits").get<int>(), AesGcmFlavor::kAesGcm),
      false};
  auto ser = std::make_shared<AesGcmSerializer>(options);
  std::array<std::uint8_t, kAesGcmIvBytes> iv{};
  std::memcpy(iv.data(), frame.data() + 1, iv.size());
  ser->set_fixed_iv_for_testing(iv);
  ChainStage s;
  s.serializer = ser;
  s.deserializer = std::make_shared<AesGcmDeserializer>(options);
  s.exact_size = [](const MemoryLayoutDesc& l) { return l.total_bytes() + kAesGcmOverheadBytes; };
  return s;
}

TEST(FrameVectors, ChainFramesAreByteExact) {
  const Json vectors = load_vectors().at("chain");
  ASSERT_EQ(vectors.size(), 2u);
  for (const Json& v : vectors) {
    const std::string frame = unhex(v.at("frame"));
    std::vector<ChainStage> stages;
    for (const Json& stage : v.at("stages")) stages.push_back(vector_stage(stage, frame));
    ChainStage chain;
    chain.serializer = std::make_shared<ChainSerializer>(stages);
    chain.deserializer = std::make_shared<ChainDeserializer>(stages);
    expect_value_vector(chain, v, ObjectKey(unhex(v.at("chunk_hash")), "m", 0),
                        v.at("stages").dump());
  }
}

}  // namespace
}  // namespace lmcache
