#include "lmcache/serde/aesgcm_serde.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/core/testing/test_objects.h"
#include "lmcache/serde/serde_registry.h"

namespace lmcache {
namespace {

using core_internal::expect_invalid;

using core_internal::bytes_of;

AesGcmOptions options(std::string master, int bits = 128, bool bind_key = false) {
  return {std::make_shared<AesGcmKeyring>(std::move(master), bits), bind_key};
}

AesGcmOptions encrypt_options(std::string master, int bits = 128) {
  return {std::make_shared<AesGcmKeyring>(std::move(master), bits, AesGcmFlavor::kEncrypt)};
}

MemoryObjPtr seal(AesGcmSerializer& ser, const MemoryObj& src, const ObjectKey& key) {
  auto frame = bytes_of(ser.estimate_serialized_size(src.layout()));
  frame->set_used_size(ser.serialize(src, *frame, key));
  return frame;
}

ObjectKey salted(std::uint8_t hash, std::string salt) {
  return ObjectKey(std::string(8, static_cast<char>(hash)), "m", 0, 0, std::move(salt));
}

TEST(AesGcmSerde, RoundTripsBothKeySizes) {
  for (int bits : {128, 256}) {
    AesGcmSerializer ser(options("master-key", bits));
    auto src = bytes_of(5000);
    auto frame = seal(ser, *src, salted(1, "tenant"));
    EXPECT_EQ(frame->size(), 5000u + 29u);
    EXPECT_NE(std::memcmp(frame->data() + 13, src->data(), 5000), 0) << "not encrypted";
    auto dst = bytes_of(5000, 50);
    AesGcmDeserializer(options("master-key", bits)).deserialize(*frame, *dst, salted(1, "tenant"));
    EXPECT_EQ(std::memcmp(dst->data(), src->data(), 5000), 0);
  }
}

TEST(AesGcmSerde, WrongMasterKeyOtherSaltAndTamperingFail) {
  AesGcmSerializer ser(options("master-key"));
  auto frame = seal(ser, *bytes_of(64), salted(1, "a"));
  auto dst = bytes_of(64);
  EXPECT_THROW(AesGcmDeserializer(options("other-key")).deserialize(*frame, *dst, salted(1, "a")),
               std::runtime_error);
  EXPECT_THROW(AesGcmDeserializer(options("master-key")).deserialize(*frame, *dst, salted(1, "b")),
               std::runtime_error);
  for (std::size_t bit = 0; bit < frame->size() * 8; bit += 13) {
    auto copy = bytes_of(frame->size());
    std::memcpy(copy->data(), frame->data(), frame->size());
    copy->data()[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    EXPECT_THROW(AesGcmDeserializer(options("master-key")).deserialize(*copy, *dst, salted(1, "a")),
                 std::runtime_error)
        << "bit " << bit;
  }
}

// "encrypt" is the same frame under another HKDF label: it round-trips at both key sizes, and a
// frame of one never opens under the other with the same master key, salt and key (a failed tag,
// which the processor reports as a miss), whatever the salt.
TEST(EncryptSerde, RoundTripsAndNeverReadsAesGcmFrames) {
  for (int bits : {128, 256}) {
    for (const char* salt : {"", "tenant"}) {
      const ObjectKey key = salted(2, salt);
      auto src = bytes_of(777, 3);
      AesGcmSerializer enc(encrypt_options("master-key", bits));
      AesGcmSerializer gcm(options("master-key", bits));
      auto encrypt_frame = seal(enc, *src, key);
      auto aesgcm_frame = seal(gcm, *src, key);
      EXPECT_EQ(encrypt_frame->size(), 777u + kAesGcmOverheadBytes);
      EXPECT_EQ(std::to_integer<int>(encrypt_frame->data()[0]), 1) << "frame version";
      auto dst = bytes_of(777, 9);
      AesGcmDeserializer(encrypt_options("master-key", bits))
          .deserialize(*encrypt_frame, *dst, key);
      EXPECT_EQ(std::memcmp(dst->data(), src->data(), 777), 0) << bits << " '" << salt << "'";
      EXPECT_THROW(
          AesGcmDeserializer(options("master-key", bits)).deserialize(*encrypt_frame, *dst, key),
          std::runtime_error)
          << "aesgcm opened an encrypt frame";
      try {
        AesGcmDeserializer(encrypt_options("master-key", bits))
            .deserialize(*aesgcm_frame, *dst, key);
        ADD_FAILURE() << "encrypt opened an aesgcm frame";
      } catch (const std::runtime_error& e) {
        EXPECT_THAT(e.what(), ::testing::StartsWith("encrypt deserializer: authentication failed"));
      }
    }
  }
  EXPECT_EQ(encrypt_options("k").keyring->type(), "encrypt");
  EXPECT_EQ(aesgcm_flavor_hkdf_label(AesGcmFlavor::kEncrypt), "lmcache-l2-encrypt-v1");
  EXPECT_EQ(aesgcm_flavor_hkdf_label(AesGcmFlavor::kAesGcm), "lmcache-l2-aesgcm-v1");
}

TEST(AesGcmSerde, BindKeyRejectsAFrameMovedToAnotherKey) {
  auto src = bytes_of(64);
  AesGcmSerializer plain(options("k"));
  auto frame = seal(plain, *src, salted(1, "a"));
  auto dst = bytes_of(64);
  // LMCache's frame: accepted under another key of the same tenant.
  EXPECT_NO_THROW(AesGcmDeserializer(options("k")).deserialize(*frame, *dst, salted(2, "a")));
  AesGcmSerializer bound(options("k", 128, true));
  auto bound_frame = seal(bound, *src, salted(1, "a"));
  EXPECT_THROW(
      AesGcmDeserializer(options("k", 128, true)).deserialize(*bound_frame, *dst, salted(2, "a")),
      std::runtime_error);
  EXPECT_NO_THROW(
      AesGcmDeserializer(options("k", 128, true)).deserialize(*bound_frame, *dst, salted(1, "a")));
}

TEST(AesGcmSerde, IvsAreFreshAndTheTestHookFixesThem) {
  AesGcmSerializer ser(options("k"));
  auto src = bytes_of(16);
  std::set<std::string> ivs;
  for (int i = 0; i < 1000; ++i) {
    auto f = seal(ser, *src, salted(1, ""));
    ivs.emplace(reinterpret_cast<const char*>(f->data()) + 1, kAesGcmIvBytes);
  }
  EXPECT_EQ(ivs.size(), 1000u);
  ser.set_fixed_iv_for_testing(std::array<std::uint8_t, 12>{});
  auto a = seal(ser, *src, salted(1, ""));
  auto b = seal(ser, *src, salted(1, ""));
  EXPECT_EQ(std::memcmp(a->data(), b->data(), a->size()), 0);
}

TEST(AesGcmSerde, CanonicalKeyEncoding) {
  const ObjectKey key(std::string("\xab", 1), "mo", -1, 2, "s");
  const std::string want = std::string("\0\0\0\1\xab", 5) + std::string("\0\0\0\2mo", 6) +
                           std::string(8, '\xff') + std::string("\0\0\0\0\0\0\0\2", 8) +
                           std::string("\0\0\0\1s", 5);
  EXPECT_EQ(aesgcm_key_aad(key), want);
}

class AesGcmConfig : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("aesgcm_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "key", std::ios::binary) << "0123456789abcdef";
    std::ofstream(dir_ / "empty", std::ios::binary);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(AesGcmConfig, ErrorsNameTheProblem) {
  auto make = [](Json j) { return make_aesgcm_serde_processor(j); };
  expect_invalid([&] { make(Json::object()); }, {"master_key_path", "required"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("missing")}});
      },
      {"master_key_path", "cannot be opened: No such file or directory"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("empty")}});
      },
      {"master_key_path", "is an empty file"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("key")}, {"key_provider", "kms"}});
      },
      {"key_provider", "kms"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("key")}, {"aes_bits", 192}});
      },
      {"aes_bits", "192"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("key")}, {"fixed_iv", "0"}});
      },
      {"fixed_iv"});
  EXPECT_NE(make({{"master_key_path", path("key")}, {"aes_bits", 256}, {"bind_key", true}}),
            nullptr);
}

// "encrypt" takes LMCache's keys and no others: no bind_key, "hkdf" only (LMCache's "keyring"
// provider is refused by name); its errors name it.
TEST_F(AesGcmConfig, EncryptTakesLmcacheKeysOnly) {
  auto make = [](Json j) { return make_encrypt_serde_processor(j); };
  expect_invalid([&] { make(Json::object()); }, {"encrypt serde config", "master_key_path"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("key")}, {"bind_key", true}});
      },
      {"encrypt serde config", "bind_key"});
  expect_invalid(
      [&] {
        make({{"master_key_path", path("key")}, {"key_provider", "keyring"}});
      },
      {"key_provider", "keyring"});
  EXPECT_NE(make({{"master_key_path", path("key")}, {"aes_bits", 256}, {"max_workers", 2}}),
            nullptr);
  EXPECT_NE(create_serde_processor(Json{{"type", "encrypt"}, {"master_key_path", path("key")}}),
            nullptr);
}

// The key file is opened and fstat()ed before anything is read: a directory or a device is refused
// by name (not a std::ios_base::failure, not a read of /dev/zero until memory runs out), and a
// file past kAesGcmMaxKeyFileBytes is refused without being read whole.
TEST_F(AesGcmConfig, KeyFileMustBeASmallRegularFile) {
  auto make = [](Json j) { return make_aesgcm_serde_processor(j); };
  expect_invalid(
      [&] {
        make({{"master_key_path", dir_.string()}});
      },
      {"'master_key_path'", "is a directory, not a regular file"});
  expect_invalid(
      [&] {
        make({{"master_key_path", "/dev/zero"}});
      },
      {"'master_key_path'", "'/dev/zero' is a character device"});
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  expect_invalid(
      [&] {
        make({{"master_key_path", path("fifo")}});
      },
      {"'master_key_path'", "is a FIFO"});
  std::ofstream(dir_ / "large", std::ios::binary) << std::string(kAesGcmMaxKeyFileBytes + 1, 'k');
  expect_invalid(
      [&] {
        make({{"master_key_path", path("large")}});
      },
      {"'master_key_path'", "holds 4097 bytes, more than the 4096 allowed"});
  std::ofstream(dir_ / "largest", std::ios::binary) << std::string(kAesGcmMaxKeyFileBytes, 'k');
  EXPECT_NE(make({{"master_key_path", path("largest")}}), nullptr);
  // A symbolic link to a key file is followed (keys are often links into a secrets mount).
  std::filesystem::create_symlink(path("key"), path("link"));
  EXPECT_NE(make({{"master_key_path", path("link")}}), nullptr);
}

}  // namespace
}  // namespace lmcache
