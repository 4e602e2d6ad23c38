#include "reference_storage.h"

#include <unistd.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "adapter_config_source.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/testing/storage_descriptors.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/testing/memory_connector.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::conformance::tools {
namespace {

L2AdapterPtr bridge_over_memory() {
  return bridge::make_native_connector_adapter(
      std::make_unique<storage_testing::MemoryConnector>());
}

L2AdapterPtr bridge_over_memory_with_capacity(std::uint64_t bytes) {
  bridge::NativeConnectorAdapterOptions options;
  options.max_capacity_bytes = bytes;
  return bridge::make_native_connector_adapter(std::make_unique<storage_testing::MemoryConnector>(),
                                               std::move(options));
}

L2AdapterPtr fp8_wrapper_over_bridge() {
  auto serde = std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                     std::make_shared<Fp8Deserializer>());
  return std::make_unique<SerdeL2AdapterWrapper>(bridge_over_memory(), std::move(serde),
                                                 std::make_shared<L1Manager>(256u << 20));
}

}  // namespace

bool is_reference_storage_source(const std::string& source) {
  return source.rfind(kReferenceStoragePrefix, 0) == 0;
}

std::string load_reference_storage_source(const std::string& source, Registry& registry) {
  Json spec;
  try {
    spec = Json::parse(source.substr(std::string_view(kReferenceStoragePrefix).size()));
  } catch (const std::exception& e) {
    return std::string("reference storage: unreadable source: ") + e.what();
  }
  try {
    AdapterUnderTest bridge = conformance::bridge_descriptor("bridge_memory", &bridge_over_memory);
    // Two bridges over one in-memory store: the reference native-connector format.
    bridge.make_with_capacity = &bridge_over_memory_with_capacity;
    bridge.reference.type = "bridge";
    bridge.reference.make_pair = [] {
      auto store = std::make_shared<storage_testing::MemoryStore>();
      return std::pair<L2AdapterPtr, L2AdapterPtr>{
          bridge::make_native_connector_adapter(
              std::make_unique<storage_testing::MemoryConnector>(store)),
          bridge::make_native_connector_adapter(
              std::make_unique<storage_testing::MemoryConnector>(store))};
    };
    registry.add_adapter(std::move(bridge));
    // The older connector shape (no per-key GET flags, no delete): the bridge probes before
    // it gets. No reference pair: without a connector delete, a delete hides a key from the
    // adapter that made it only.
    AdapterUnderTest legacy = conformance::bridge_descriptor("bridge_legacy_memory", [] {
      return bridge::make_native_connector_adapter(
          std::make_unique<storage_testing::LegacyMemoryConnector>());
    });
    registry.add_adapter(std::move(legacy));
    registry.add_adapter(
        conformance::fp8_wrapped_descriptor("bridge_memory_fp8", &fp8_wrapper_over_bridge));
  } catch (const std::exception& e) {
    return std::string("reference storage: ") + e.what();
  }
  std::vector<std::pair<std::string, Json>> stores;
  if (spec.contains("redis_port")) {
    Json resp{{"type", "resp"},
              {"host", spec.value("redis_host", "127.0.0.1")},
              {"port", spec["redis_port"]}};
    if (spec.contains("redis_password")) resp["password"] = spec["redis_password"];
    stores.emplace_back("resp", std::move(resp));
  }
  if (spec.contains("fs_dir")) {
    stores.emplace_back("fs", Json{{"type", "fs"}, {"base_path", spec["fs_dir"]}});
  }
  for (const auto& [type, config] : stores) {
    Json with_serde = config;
    with_serde["serde"] = Json{{"type", "fp8"}};
    // Under fp8 both also load through LMCache's read pool (read_io_depth readers, a 4 MiB
    // budget that a batch of chunk-sized objects meets), and fs keeps a DiskGuard whose limits
    // do not bind on a disk with room (its accounting runs on every store).
    with_serde["read_io_depth"] = 4;
    with_serde["read_max_bytes_in_flight"] = 4 << 20;
    if (type == "fs") {
      with_serde["high_watermark"] = 1.0;
      with_serde["min_free_bytes"] = 0;
    }
    // fs bare on LMCache's own file names, under fp8 on this project's: both layouts run.
    Json bare = config;
    if (type == "fs") bare["layout"] = "lmcache";
    for (const Json& c : {bare, with_serde}) {
      if (std::string e = register_adapter_config(c, type, registry); !e.empty()) {
        return "reference storage (" + type + "): " + e;
      }
    }
  }
  // fs's other options, bare: the crc32 trailer and O_DIRECT (on a disk's directory, where the
  // kernel may grant it; where it refuses, the buffered fallback runs).
  if (spec.contains("fs_disk_dir")) {
    const Json c{{"type", "fs"},
                 {"base_path", spec["fs_disk_dir"]},
                 {"checksum", "crc32"},
                 {"use_odirect", true}};
    if (std::string e = register_adapter_config(c, "fs_crc32_odirect", registry); !e.empty()) {
      return "reference storage (fs_crc32_odirect): " + e;
    }
  }
  // Processors built from configs that read a key file, as a deployment's "serde" object does:
  // each held to the reference serde of its own config (which reads the same file).
  if (spec.contains("aesgcm_key_path")) {
    const std::string key = spec["aesgcm_key_path"].get<std::string>();
    const std::vector<std::tuple<std::string, Json, SerdeUnderTest>> configs = {
        {"aesgcm_128_bind_key_file",
         Json{{"type", "aesgcm"},
              {"master_key_path", key},
              {"aes_bits", 128},
              {"bind_key", true},
              {"max_workers", 2}},
         reference_aes_gcm_serde(128, true)},
        // LMCache's encrypt, from its own keys.
        {"encrypt_256_file",
         Json{{"type", "encrypt"}, {"master_key_path", key}, {"aes_bits", 256}, {"max_workers", 2}},
         reference_encrypt_serde(256)},
        // aesgcm after two stages (checksum's exact size sizes the middle frame) ...
        {"chain_fp8_checksum_aesgcm_file",
         Json{
             {"type", "chain"},
             {"stages",
              Json::array({Json{{"type", "fp8"}}, Json{{"type", "checksum"}},
                           Json{{"type", "aesgcm"}, {"master_key_path", key}, {"aes_bits", 256}}})},
             {"max_workers", 2}},
         reference_fp8_aes_gcm_chain()},
        // ... and before one (its own exact size sizes the inner frame).
        {"chain_aesgcm_checksum_file",
         Json{{"type", "chain"},
              {"stages", Json::array({Json{{"type", "aesgcm"}, {"master_key_path", key}},
                                      Json{{"type", "checksum"}}})},
              {"max_workers", 2}},
         reference_aes_gcm_serde(128, false)},
    };
    try {
      for (const auto& [name, config, like] : configs) {
        ProcessorUnderTest p = reference_registry_processor(name, config.dump(), like);
        p.reference = reference_serde(config.dump());
        registry.add_processor(std::move(p));
      }
    } catch (const std::exception& e) {
      return std::string("reference storage (key file processors): ") + e.what();
    }
    // A deployment's whole serde stack in one adapter config: a chain ending in aesgcm with its
    // key file, and the wrapper's own options. The config properties reach every stage's keys and
    // the "serde_wrapper" object; the rest of the suite runs the stack over the mock.
    const Json stack{
        {"type", "mock"},
        {"max_size_gb", 1},
        {"mock_bandwidth_gb", 1024},
        {"serde",
         {{"type", "chain"},
          {"stages", Json::array({Json{{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}},
                                  Json{{"type", "checksum"}},
                                  Json{{"type", "aesgcm"},
                                       {"master_key_path", key},
                                       {"aes_bits", 256},
                                       {"bind_key", true}}})},
          {"max_workers", 2}}},
        {"serde_wrapper",
         {{"inline_serialize_max_bytes", "auto"},
          {"inline_deserialize_max_bytes", 1 << 20},
          {"handoff_cost_us", 20},
          {"finish_on_submit", true},
          {"poll_timeout_ms", 50}}}};
    if (std::string e = register_adapter_config(stack, "mock", registry); !e.empty()) {
      return "reference storage (mock_fp8_chain): " + e;
    }
  }
  return {};
}

// The fs adapter's directory: in memory (/dev/shm) where there is one, so that the run measures
// the adapter and not the disk; else $TMPDIR.
std::filesystem::path fs_root() {
  std::error_code ec;
  const std::filesystem::path shm = "/dev/shm";
  return std::filesystem::is_directory(shm, ec) && ::access(shm.c_str(), W_OK) == 0
             ? shm
             : std::filesystem::path();
}

// The private redis-server requires a password, as a deployment's does: the resp adapters
// authenticate on every connection.
constexpr const char* kRedisPassword = "lmcache-conform";

struct ReferenceStorage::Parts {
  std::optional<storage_testing::RedisServer> redis;
  storage_testing::TempDir dir{"lmcache-conform-fs-", fs_root()};
  storage_testing::TempDir disk_dir{"lmcache-conform-fs-disk-"};
  storage_testing::TempDir key_dir{"lmcache-conform-key-"};
  std::filesystem::path key_file = key_dir.path() / "master.key";
};

ReferenceStorage::ReferenceStorage() : parts_(std::make_unique<Parts>()) {
  {
    std::ofstream key(parts_->key_file, std::ios::binary);
    key << "lmcache-conform reference master key";
    if (!key.flush()) {
      throw std::runtime_error("cannot write the reference key file " + parts_->key_file.string());
    }
  }
  if (storage_testing::RedisServer::find_executable()) {
    storage_testing::RedisServerOptions options;
    options.password = kRedisPassword;
    parts_->redis.emplace(std::move(options));
  } else {
    note_ = "resp left out: redis-server is not installed (scripts/install-deps.sh installs it)";
  }
}

ReferenceStorage::~ReferenceStorage() = default;

std::string ReferenceStorage::source() const {
  Json spec{{"fs_dir", parts_->dir.path().string()},
            {"fs_disk_dir", parts_->disk_dir.path().string()},
            {"aesgcm_key_path", parts_->key_file.string()}};
  if (parts_->redis) {
    spec["redis_host"] = parts_->redis->host();
    spec["redis_port"] = parts_->redis->port();
    spec["redis_password"] = kRedisPassword;
  }
  return kReferenceStoragePrefix + spec.dump();
}

}  // namespace lmcache::conformance::tools
