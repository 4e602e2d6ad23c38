// The "fs" L2 adapter type: its config, its registration, composition with the fp8 serde
// wrapper, the bridge checks over real files, and loads through the bridge over a damaged
// directory (every kind of storage_testing::fs_damages()).
#include "lmcache/fs/fs_adapter.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lmcache/bridge/key_codec.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/adapter_registry.h"
#include "lmcache/testing/adapter_waits.h"
#include "lmcache/testing/bridge_checks.h"
#include "lmcache/testing/fs_damage.h"
#include "lmcache/testing/stored_objects.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fs {
namespace {

using namespace std::chrono_literals;
using storage_testing::TempDir;
using storage_testing::wait_load;
using storage_testing::wait_store;

TEST(FsAdapterConfig, ReadsLmcacheKeysAndDefaults) {
  FsAdapterConfig c = FsAdapterConfig::parse({{"type", "fs"}, {"base_path", "/x/y"}});
  EXPECT_EQ(c.connector.base_path, "/x/y");
  EXPECT_FALSE(c.connector.use_odirect);
  EXPECT_EQ(c.connector.checksum, FsChecksum::kNone);
  EXPECT_EQ(c.connector.num_workers, 4u);
  EXPECT_EQ(c.bridge.type_name, "fs");
  EXPECT_EQ(c.connector.layout, FsLayout::kProject);
  EXPECT_EQ(FsAdapterConfig::parse({{"base_path", "/x"}, {"layout", "lmcache"}}).connector.layout,
            FsLayout::kLmcache);
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
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_pth", "/x"}})
                .find("unknown key 'base_pth'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>(Json::object()).find("'base_path'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_path", ""}}).find("'base_path'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"checksum", "md5"}})
                .find("'checksum'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"use_odirect", 1}})
                .find("'use_odirect'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"num_workers", 0}})
                .find("'num_workers'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"type", "resp"}, {"base_path", "/x"}})
                .find("'type'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"layout", "flat"}})
                .find("'layout'"),
            std::string::npos);
  EXPECT_NE(core_internal::parse_error<FsAdapterConfig>(
                {{"base_path", "/x"}, {"layout", "lmcache"}, {"checksum", "crc32"}})
                .find("'checksum' must be \"none\""),
            std::string::npos);
  for (const Json& hw : {Json(0), Json(1.5), Json(-0.2), Json("0.9")}) {
    EXPECT_NE(
        core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"high_watermark", hw}})
            .find("'high_watermark'"),
        std::string::npos)
        << hw.dump();
  }
  EXPECT_NE(
      core_internal::parse_error<FsAdapterConfig>({{"base_path", "/x"}, {"min_free_bytes", -1}})
          .find("'min_free_bytes'"),
      std::string::npos);
}

TEST(FsAdapterConfig, ReadsLmcachesDiskGuardKeys) {
  FsAdapterConfig c = FsAdapterConfig::parse({{"base_path", "/x"}});
  EXPECT_FALSE(c.connector.disk_guard.enabled());
  c = FsAdapterConfig::parse({{"base_path", "/x"}, {"high_watermark", 0.9}});
  EXPECT_EQ(c.connector.disk_guard.high_watermark, 0.9);
  EXPECT_FALSE(c.connector.disk_guard.min_free_bytes.has_value());
  c = FsAdapterConfig::parse({{"base_path", "/x"}, {"min_free_bytes", 1024}});
  EXPECT_EQ(c.connector.disk_guard.min_free_bytes, 1024u);
}

// DiskGuard over the real file system: a limit the disk is past refuses every store, whole and
// before a file is written; limits it is within let stores through.
TEST(FsAdapter, DiskGuardRefusesAStorePastEitherLimit) {
  TempDir dir;
  const DiskSpace space = DiskGuard::statvfs_of(dir.path())();
  const ObjectKey k1(int_hash_to_bytes(1), "m", 0), k2(int_hash_to_bytes(2), "m", 0);
  auto obj = [](std::uint8_t fill) {
    MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({4096}, DType::kUInt8));
    std::memset(o->data(), fill, 4096);
    return o;
  };
  const Json past_min_free = {{"min_free_bytes", space.available + (std::uint64_t{1} << 40)}};
  // A watermark below what is already in use (every file system holds some metadata).
  const Json past_watermark = {{"high_watermark", 1e-12}};
  for (const Json& limit : {past_min_free, past_watermark}) {
    SCOPED_TRACE(limit.dump());
    Json config = {{"base_path", dir.path().string()}, {"num_workers", 1}};
    config.update(limit);
    auto a = create_fs_adapter(config);
    const auto r = wait_store(*a, a->submit_store_task({k1, k2}, {obj(1), obj(2)}));
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(r->is_successful());
    EXPECT_EQ(wait_load(*a, a->submit_load_task({k1, k2}, {obj(0), obj(0)}))->to_string(), "00");
    const Json status = a->report_status();
    EXPECT_GE(status["connector"]["disk_guard"]["refused_writes"].get<int>(), 1) << status.dump();
    ASSERT_TRUE(a->last_connector_error().has_value());
    EXPECT_NE(a->last_connector_error()->error.find("disk guard"), std::string::npos)
        << a->last_connector_error()->describe();
    std::size_t data_files = 0;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
      data_files += e.is_regular_file() ? 1 : 0;
    }
    EXPECT_EQ(data_files, 0u) << "a refused store wrote files";
    a->close();
  }
  auto a = create_fs_adapter(
      {{"base_path", dir.path().string()}, {"high_watermark", 1.0}, {"min_free_bytes", 0}});
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({k1}, {obj(1)}))->is_successful());
  EXPECT_EQ(a->report_status()["connector"]["disk_guard"]["refused_writes"], 0);
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
  constexpr std::size_t kElems = 4096;
  const storage_testing::StoredSample sample = storage_testing::store_fp8_exact_sample(*a, kElems);
  ASSERT_TRUE(sample.stored && sample.stored->is_successful());
  EXPECT_EQ(sample.stored->bytes_transferred(), kElems);
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.file_size(), kElems + 8) << "one fp8 byte per element plus the crc32 trailer";
  }
  EXPECT_EQ(files, 1u);
  EXPECT_EQ(storage_testing::loads_back(*a, sample.key, *sample.object), "");
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
  rig.make_connector = [&dir, v = variant]() -> bridge::ErasedConnectorPtr {
    FsConnectorOptions o;
    o.base_path = dir.path();
    o.checksum = v.checksum;
    o.use_odirect = v.odirect;
    o.num_workers = 2;
    return bridge::erase_connector(std::make_unique<FsConnector>(o));
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

// --- A damaged directory under the bridge -----------------------------------------------------

class FsAdapterDamage
    : public ::testing::TestWithParam<std::tuple<FsVariant, storage_testing::FsDamageInfo>> {};

TEST_P(FsAdapterDamage, LoadEndsByItselfTheDamagedKeyMissesIntactKeysLoad) {
  const auto& [variant, damage] = GetParam();
  TempDir dir;
  Json config = {{"type", "fs"},
                 {"base_path", dir.path().string()},
                 {"checksum", variant.checksum == FsChecksum::kCrc32 ? "crc32" : "none"},
                 {"use_odirect", variant.odirect},
                 {"num_workers", 2},
                 // Far above what a load takes: a load that ends by this deadline (all misses)
                 // instead of by itself is counted in stats().deadline_failures.
                 {"task_deadline_ms", 60000}};
  auto a = create_fs_adapter(config);
  constexpr std::size_t kElems = 2048;  // 4096 bytes
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> src;
  for (int i = 0; i < 3; ++i) {
    keys.emplace_back(int_hash_to_bytes(100 + i), "model", 0, 0);
    src.push_back(MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16)));
    auto* p = reinterpret_cast<std::uint8_t*>(src.back()->data());
    for (std::size_t j = 0; j < kElems * 2; ++j) p[j] = static_cast<std::uint8_t>(i * 31 + j);
  }
  const std::optional<L2StoreResult> stored = wait_store(*a, a->submit_store_task(keys, src));
  ASSERT_TRUE(stored && stored->is_successful());
  const bridge::KeyCodec codec;
  auto file_of = [&](const ObjectKey& k) {
    return FsConnector::object_path(dir.path(), codec.encode(k));
  };
  const std::string why_not =
      storage_testing::damage_file(file_of(keys[0]), damage.kind, file_of(keys[1]));
  if (!why_not.empty()) GTEST_SKIP() << damage.name << " cannot be done here: " << why_not;

  std::vector<MemoryObjPtr> dst;
  for (int i = 0; i < 3; ++i) {
    dst.push_back(MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16)));
  }
  const std::optional<Bitmap> bits = wait_load(*a, a->submit_load_task(keys, dst));
  ASSERT_TRUE(bits.has_value()) << "the load did not complete";
  EXPECT_EQ(bits->to_string(), "011");
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(std::memcmp(src[i]->data(), dst[i]->data(), kElems * 2), 0) << "key " << i;
  }
  EXPECT_EQ(a->stats().deadline_failures, 0u) << "the load ended by its deadline, not by itself";
  a->close();  // prompt: no worker is stuck on what it found
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, FsAdapterDamage,
    ::testing::Combine(::testing::Values(FsVariant{"crc32", FsChecksum::kCrc32, false},
                                         FsVariant{"crc32_odirect", FsChecksum::kCrc32, true}),
                       ::testing::ValuesIn(storage_testing::fs_damages())),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
    });

}  // namespace
}  // namespace lmcache::fs
