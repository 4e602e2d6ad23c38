#include "lmcache/storage_fault/storage_campaign.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "lmcache/bridge/key_codec.h"
#include "lmcache/fs/fs_connector.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/temp_dir.h"

namespace lmcache::fault {

namespace {

using storage_testing::RedisServer;
using storage_testing::TempDir;

// The storage the campaign made: kept alive by StorageCampaign::storage.
struct OwnedStorage {
  std::unique_ptr<RedisServer> server;
  std::unique_ptr<TempDir> dir;
};

// Whether directory permissions bind this process (not root, no CAP_DAC_OVERRIDE).
bool permissions_bind() {
  TempDir probe("lmcache-perm-probe-");
  UnwritableDir dir(probe.path());
  return dir.effective();
}

class RealStorageFaults final : public StorageFaultSource {
 public:
  RealStorageFaults(std::shared_ptr<OwnedStorage> storage, std::vector<StorageFaultKind> kinds,
                    std::filesystem::path base_path, bool checksum, std::uint64_t seed)
      : storage_(std::move(storage)), base_path_(std::move(base_path)), checksum_(checksum) {
    for (StorageFaultKind k : kinds) {
      if (k == StorageFaultKind::kFsUnwritable && !permissions_bind()) {
        skipped_.push_back(
            "fs_unwritable: this process ignores directory permissions (root or "
            "CAP_DAC_OVERRIDE), so a read-only directory would change nothing");
        continue;
      }
      kinds_.push_back(k);
    }
    if (!kinds_.empty()) turn_ = seed % kinds_.size();
  }

  ~RealStorageFaults() override {
    try {
      heal();
    } catch (...) {
      // The server or directory goes with the storage anyway.
    }
  }

  std::vector<std::string> kinds() const override {
    std::vector<std::string> names;
    for (StorageFaultKind k : kinds_) names.emplace_back(storage_fault_name(k));
    return names;
  }
  std::vector<std::string> skipped() const override { return skipped_; }

  std::optional<StorageStrike> strike(std::uint64_t draw, const std::vector<ObjectKey>& stored,
                                      const std::string& key_namespace) override {
    if (kinds_.empty()) return std::nullopt;
    const StorageFaultKind kind = kinds_[turn_ % kinds_.size()];
    std::optional<StorageStrike> s = strike_kind(kind, draw, stored, key_namespace);
    if (s) {
      ++turn_;
      s->kind = std::string(storage_fault_name(kind));
    }
    return s;
  }

  void heal() override {
    if (resumer_.joinable()) resumer_.join();
    limit_.reset();
    unwritable_.reset();
    RedisServer* server = storage_->server.get();
    if (server == nullptr) return;
    if (server->paused()) server->resume();
    if (!server->running()) server->start();
    if (maxmemory_set_) {
      redis_set_maxmemory(*server, 0);
      maxmemory_set_ = false;
    }
  }

 private:
  RedisServer& server() {
    if (!storage_->server) throw std::logic_error("a Redis fault without the campaign's server");
    return *storage_->server;
  }

  // The file of `key` under the epoch's namespace, when it exists.
  std::optional<std::filesystem::path> file_of(const ObjectKey& key,
                                               const std::string& key_namespace) const {
    const std::string name = bridge::KeyCodec(key_namespace).encode(key);
    std::filesystem::path p = fs::FsConnector::object_path(base_path_, name);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
    return p;
  }

  std::optional<StorageStrike> strike_kind(StorageFaultKind kind, std::uint64_t draw,
                                           const std::vector<ObjectKey>& stored,
                                           const std::string& key_namespace) {
    StorageStrike s;
    switch (kind) {
      case StorageFaultKind::kRedisKill:
        s.detail = "SIGKILL of redis-server pid " + std::to_string(server().pid()) +
                   "; down for the next wave, then restarted empty";
        server().kill();
        s.disturbed_waves = 1;
        s.loses_stored = true;
        return s;
      case StorageFaultKind::kRedisPause: {
        const auto pause = std::chrono::milliseconds(20 + draw % 201);
        s.detail = "SIGSTOP of redis-server pid " + std::to_string(server().pid()) + ", SIGCONT " +
                   std::to_string(pause.count()) + " ms later";
        server().pause();
        resumer_ = std::thread([this, pause] {
          std::this_thread::sleep_for(pause);
          storage_->server->resume();
        });
        return s;
      }
      case StorageFaultKind::kRedisClientKill:
        s.detail = "CLIENT KILL closed " + std::to_string(redis_client_kill(server())) +
                   " client connections";
        return s;
      case StorageFaultKind::kRedisMaxmemory:
        redis_set_maxmemory(server(), 1);
        maxmemory_set_ = true;
        s.detail = "maxmemory 1 byte (noeviction) for this wave and the next";
        s.disturbed_waves = 1;
        return s;
      case StorageFaultKind::kFsFull:
        limit_.emplace(1);
        s.detail = "RLIMIT_FSIZE 1 byte (writes fail with EFBIG) for this wave and the next";
        s.disturbed_waves = 1;
        return s;
      case StorageFaultKind::kFsUnwritable:
        unwritable_.emplace(base_path_);
        s.detail = base_path_.string() + " made read-only for this wave and the next";
        s.disturbed_waves = 1;
        return s;
      case StorageFaultKind::kFsTruncate:
      case StorageFaultKind::kFsFlip:
      case StorageFaultKind::kFsDelete:
        break;
    }
    // One stored object's file, damaged underneath; no task in flight owns its key.
    if (stored.empty()) return std::nullopt;
    const ObjectKey& key = stored[draw % stored.size()];
    std::optional<std::filesystem::path> file = file_of(key, key_namespace);
    if (!file) return std::nullopt;
    const std::uint64_t size = std::filesystem::file_size(*file);
    s.disturbs_tasks = false;
    if (kind == StorageFaultKind::kFsDelete) {
      delete_file(*file);
      s.detail = "deleted " + file->filename().string();
      s.gone.push_back(key);
    } else if (kind == StorageFaultKind::kFsTruncate) {
      truncate_file(*file, size / 2);
      s.detail = "cut " + file->filename().string() + " from " + std::to_string(size) + " to " +
                 std::to_string(size / 2) + " bytes";
      s.lost.push_back(key);
    } else {
      if (size == 0) return std::nullopt;
      const std::uint64_t offset = (draw >> 8) % size;
      flip_byte(*file, offset);
      s.detail = "flipped byte " + std::to_string(offset) + " of " + file->filename().string() +
                 (checksum_ ? " (crc32: must miss)" : " (no checksum: may load wrong bytes)");
      (checksum_ ? s.lost : s.damaged).push_back(key);
    }
    return s;
  }

  std::shared_ptr<OwnedStorage> storage_;
  std::filesystem::path base_path_;
  bool checksum_;
  std::vector<StorageFaultKind> kinds_;
  std::vector<std::string> skipped_;
  std::size_t turn_ = 0;
  std::thread resumer_;
  std::optional<FileSizeLimit> limit_;
  std::optional<UnwritableDir> unwritable_;
  bool maxmemory_set_ = false;
};

}  // namespace

std::vector<StorageFaultKind> parse_storage_fault_kinds(std::string_view list,
                                                        std::string_view adapter_type) {
  std::vector<StorageFaultKind> kinds;
  if (list.empty() || list == "none") return kinds;
  if (list == "all") {
    for (StorageFaultKind k : all_storage_fault_kinds()) {
      if (storage_fault_adapter_type(k) == adapter_type) kinds.push_back(k);
    }
    if (kinds.empty()) {
      throw std::invalid_argument("storage faults: adapter type '" + std::string(adapter_type) +
                                  "' has none (they are for resp and fs)");
    }
    return kinds;
  }
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string_view name = list.substr(pos, comma - pos);
    std::optional<StorageFaultKind> k = storage_fault_from_name(name);
    if (!k) throw std::invalid_argument("unknown storage fault '" + std::string(name) + "'");
    if (storage_fault_adapter_type(*k) != adapter_type) {
      throw std::invalid_argument("storage fault '" + std::string(name) +
                                  "' is for adapter type '" +
                                  std::string(storage_fault_adapter_type(*k)) + "', not '" +
                                  std::string(adapter_type) + "'");
    }
    kinds.push_back(*k);
    pos = comma + 1;
  }
  return kinds;
}

StorageCampaign make_storage_campaign(const Json& inner, const std::vector<StorageFaultKind>& kinds,
                                      std::uint64_t seed) {
  StorageCampaign c;
  c.inner = inner;
  const std::string type = inner.value("type", "");
  for (StorageFaultKind k : kinds) {
    if (storage_fault_adapter_type(k) != type) {
      throw std::invalid_argument(
          "storage fault '" + std::string(storage_fault_name(k)) + "' is for adapter type '" +
          std::string(storage_fault_adapter_type(k)) + "', not '" + type + "'");
    }
  }
  if (type != "resp" && type != "fs") return c;
  auto owned = std::make_shared<OwnedStorage>();
  std::filesystem::path base_path;
  bool checksum = false;
  if (type == "resp") {
    if (!inner.contains("port")) {
      storage_testing::RedisServerOptions options;
      if (inner.contains("password")) options.password = inner.at("password").get<std::string>();
      owned->server = std::make_unique<RedisServer>(options);
      c.inner["host"] = owned->server->host();
      c.inner["port"] = owned->server->port();
    } else if (!kinds.empty()) {
      throw std::invalid_argument(
          "storage faults over resp need the campaign's own redis-server: leave out \"port\" "
          "(the campaign never kills or fills a server it did not start)");
    }
  } else {
    if (!inner.contains("base_path")) {
      owned->dir = std::make_unique<TempDir>("lmcache-campaign-");
      c.inner["base_path"] = owned->dir->path().string();
    } else if (!kinds.empty()) {
      throw std::invalid_argument(
          "storage faults over fs need the campaign's own directory: leave out \"base_path\" "
          "(the campaign never fills or damages a directory it did not create)");
    }
    base_path = c.inner.at("base_path").get<std::string>();
    checksum = c.inner.value("checksum", std::string("none")) == "crc32";
  }
  if (!kinds.empty()) {
    c.faults = std::make_shared<RealStorageFaults>(owned, kinds, base_path, checksum, seed);
  }
  c.storage = std::move(owned);
  return c;
}

}  // namespace lmcache::fault
