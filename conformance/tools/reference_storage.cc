#include "reference_storage.h"

#include <unistd.h>

#include <exception>
#include <filesystem>
#include <optional>
#include <string_view>

#include "adapter_config_source.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/connector/native_connector_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/testing/memory_connector.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/storage_descriptors.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::conformance::tools {
namespace {

L2AdapterPtr bridge_over_memory() {
  return connector::make_native_connector_adapter(
      std::make_unique<storage_testing::MemoryConnector>());
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
    AdapterUnderTest bridge =
        storage_testing::bridge_descriptor("bridge_memory", &bridge_over_memory);
    // Two bridges over one in-memory store: the reference native-connector format.
    bridge.reference.type = "bridge";
    bridge.reference.make_pair = [] {
      auto store = std::make_shared<storage_testing::MemoryStore>();
      return std::pair<L2AdapterPtr, L2AdapterPtr>{
          connector::make_native_connector_adapter(
              std::make_unique<storage_testing::MemoryConnector>(store)),
          connector::make_native_connector_adapter(
              std::make_unique<storage_testing::MemoryConnector>(store))};
    };
    registry.add_adapter(std::move(bridge));
    registry.add_adapter(
        storage_testing::fp8_wrapped_descriptor("bridge_memory_fp8", &fp8_wrapper_over_bridge));
  } catch (const std::exception& e) {
    return std::string("reference storage: ") + e.what();
  }
  std::vector<std::pair<std::string, Json>> stores;
  if (spec.contains("redis_port")) {
    stores.emplace_back("resp", Json{{"type", "resp"},
                                     {"host", spec.value("redis_host", "127.0.0.1")},
                                     {"port", spec["redis_port"]}});
  }
  if (spec.contains("fs_dir")) {
    stores.emplace_back("fs", Json{{"type", "fs"}, {"base_path", spec["fs_dir"]}});
  }
  for (const auto& [type, config] : stores) {
    Json with_serde = config;
    with_serde["serde"] = Json{{"type", "fp8"}};
    for (const Json& c : {config, with_serde}) {
      if (std::string e = register_adapter_config(c, type, registry); !e.empty()) {
        return "reference storage (" + type + "): " + e;
      }
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

struct ReferenceStorage::Parts {
  std::optional<storage_testing::RedisServer> redis;
  storage_testing::TempDir dir{"lmcache-conform-fs-", fs_root()};
};

ReferenceStorage::ReferenceStorage() : parts_(std::make_unique<Parts>()) {
  if (storage_testing::RedisServer::find_executable()) {
    parts_->redis.emplace();
  } else {
    note_ = "resp left out: redis-server is not installed (scripts/install-deps.sh installs it)";
  }
}

ReferenceStorage::~ReferenceStorage() = default;

std::string ReferenceStorage::source() const {
  Json spec{{"fs_dir", parts_->dir.path().string()}};
  if (parts_->redis) {
    spec["redis_host"] = parts_->redis->host();
    spec["redis_port"] = parts_->redis->port();
  }
  return kReferenceStoragePrefix + spec.dump();
}

}  // namespace lmcache::conformance::tools
