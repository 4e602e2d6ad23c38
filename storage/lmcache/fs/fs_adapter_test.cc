// The "fs" L2 adapter type: its config, its registration, composition with the fp8 serde
// wrapper, and the bridge checks over real files.
#include "lmcache/fs/fs_adapter.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/adapter_waits.h"
#include "lmcache/testing/bridge_checks.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fs {
namespace {

using namespace std::chrono_literals;
using storage_testing::TempDir;
using storage_testing::wait_load;
using storage_testing::wait_store;

std::string error_of(const Json& config) {
  try {
    FsAdapterConfig::parse(config);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FsAdapterConfig, ReadsLmcacheKeysAndDefaults) {
  FsAdapterConfig c = FsAdapterConfig::parse({{"type", "fs"}, {"base_path", "/x/y"}});
  EXPECT_EQ(c.connector.base_path, "/x/y");
  EXPECT_FALSE(c.connector.use_odirect);
  EXPECT_EQ(c.connector.checksum, FsChecksum::kNone);
  EXPECT_EQ(c.connector.num_workers, 4u);
  EXPECT_EQ(c.bridge.type_name, "fs");
  c = FsAdapterConfig::parse({{"base_path", "/x"},
                              {"use_odirect", true},
                              {"checksum", "crc32"},
                              {"max_capacity_gb", 1.5},
                              {"num_workers", 3},
                              {"task_deadline_ms", 50},
                              {"key_namespace", "n"}});
  EXPECT_TRUE(c.connector.use_odirect);
  EXPECT_EQ(c.connector.checksum, FsChecksum::kCrc32);
  EXPECT_EQ(c.connector.num_workers, 3u);
  EXPECT_EQ(c.bridge.max_capacity_bytes, 3ull << 29);
  EXPECT_EQ(c.bridge.task_deadline, 50ms);
}

TEST(FsAdapterConfig, ErrorsNameTheKey) {
  EXPECT_NE(error_of({{"base_pth", "/x"}}).find("unknown key 'base_pth'"), std::string::npos);
  EXPECT_NE(error_of(Json::object()).find("'base_path'"), std::string::npos);
  EXPECT_NE(error_of({{"base_path", ""}}).find("'base_path'"), std::string::npos);
  EXPECT_NE(error_of({{"base_path", "/x"}, {"checksum", "md5"}}).find("'checksum'"),
            std::string::npos);
  EXPECT_NE(error_of({{"base_path", "/x"}, {"use_odirect", 1}}).find("'use_odirect'"),
            std::string::npos);
  EXPECT_NE(error_of({{"base_path", "/x"}, {"num_workers", 0}}).find("'num_workers'"),
            std::string::npos);
  EXPECT_NE(error_of({{"type", "resp"}, {"base_path", "/x"}}).find("'type'"), std::string::npos);
}

TEST(FsAdapter, IsRegisteredUnderLmcachesName) {
  const auto types = registered_l2_adapter_types();
  EXPECT_NE(std::find(types.begin(), types.end(), "fs"), types.end());
  register_fs_adapter_type();  // idempotent
}

TEST(FsAdapter, ComposesWithTheFp8SerdeThroughItsConfig) {
  TempDir dir;
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);
  L2AdapterPtr a = create_l2_adapter({{"type", "fs"},
                                      {"base_path", dir.path().string()},
                                      {"checksum", "crc32"},
                                      {"serde", {{"type", "fp8"}}}},
                                     ctx);
  const std::uint16_t values[] = {0x3F80, 0x3F00, 0xC000, 0x0000, 0x4100, 0xBE80};
  constexpr std::size_t kElems = 4096;
  MemoryObjPtr src = MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16));
  auto* p = reinterpret_cast<std::uint16_t*>(src->data());
  for (std::size_t i = 0; i < kElems; ++i) p[i] = values[i % 6];
  const ObjectKey key(int_hash_to_bytes(1), "meta-llama/Llama-3.1-8B", 3, 0, "tenant");
  const std::optional<L2StoreResult> stored = wait_store(*a, a->submit_store_task({key}, {src}));
  ASSERT_TRUE(stored && stored->is_successful());
  EXPECT_EQ(stored->bytes_transferred(), kElems);
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.file_size(), kElems + 8) << "one fp8 byte per element plus the crc32 trailer";
  }
  EXPECT_EQ(files, 1u);
  MemoryObjPtr dst = MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16));
  const std::optional<Bitmap> bits = wait_load(*a, a->submit_load_task({key}, {dst}));
  ASSERT_TRUE(bits.has_value());
  EXPECT_EQ(bits->to_string(), "1");
  EXPECT_EQ(std::memcmp(src->data(), dst->data(), kElems * 2), 0);
  a->close();
}

// --- The bridge checks over real files -------------------------------------------------------

struct FsVariant {
  std::string name;
  FsChecksum checksum;
  bool odirect;
};

class FsBridgeChecks
    : public ::testing::TestWithParam<std::tuple<FsVariant, storage_testing::BridgeCheck>> {};

TEST_P(FsBridgeChecks, Hold) {
  const auto& [variant, check] = GetParam();
  TempDir dir;
  storage_testing::BridgeRig rig;
  rig.name = "fs_" + variant.name;
  rig.make_connector = [&dir, v = variant]() -> connector::ErasedConnectorPtr {
    FsConnectorOptions o;
    o.base_path = dir.path();
    o.checksum = v.checksum;
    o.use_odirect = v.odirect;
    o.num_workers = 2;
    return connector::erase_connector(std::make_unique<FsConnector>(o));
  };
  EXPECT_EQ(check.run(rig), "");
}

INSTANTIATE_TEST_SUITE_P(
    All, FsBridgeChecks,
    ::testing::Combine(::testing::Values(FsVariant{"plain", FsChecksum::kNone, false},
                                         FsVariant{"crc32_odirect", FsChecksum::kCrc32, true}),
                       ::testing::ValuesIn(storage_testing::all_bridge_checks())),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(std::get<1>(info.param).name);
    });

}  // namespace
}  // namespace lmcache::fs
