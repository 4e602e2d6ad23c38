// File: lmcache/conformance/testing/stored_damage.h
//
// The damage functions of AdapterConformance.StoredDamageContained
// (AdapterUnderTest::make_damageable) for the storage types lmcache-conform builds from configs:
// "fs" (the objects' files, with lmcache/testing/fs_damage.h) and "resp" (the objects' values,
// over a client of the config's own server). Each adapter gets a part of the store nobody else
// uses (fs: a fresh subdirectory of base_path; resp: a fresh key namespace), so what is damaged
// is only what the kit stored there. The kit's own test support, kept with the kit (as
// storage_descriptors.h): header-only, never installed; its includers link lmcache::conformance,
// lmcache::resp and lmcache::storage_testing.
#pragma once

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/key_namespace.h"
#include "lmcache/core/config.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/resp/resp_client.h"
#include "lmcache/testing/fs_damage.h"

namespace lmcache::conformance {

namespace stored_damage_internal {

namespace fs = std::filesystem;

// The regular files below `dir` that hold objects (temporary files, "<name>.tmp.<pid>-<n>", are
// a store in progress, not an object), in a stable order.
inline std::vector<fs::path> object_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) &&
        it->path().filename().string().find(".tmp.") == std::string::npos) {
      out.push_back(it->path());
    }
  }
  if (ec) throw std::runtime_error("cannot list " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// `rotation` picks which replacement the first file gets (the next ones follow in turn), so that
// successive calls replace each file by each kind.
inline std::size_t damage_files(const fs::path& dir, StoredDamage damage, std::size_t rotation) {
  using storage_testing::FsDamage;
  const std::vector<fs::path> files = object_files(dir);
  constexpr FsDamage kReplacements[] = {FsDamage::kFifo, FsDamage::kDirectory, FsDamage::kSymlink};
  for (std::size_t i = 0; i < files.size(); ++i) {
    FsDamage kind = FsDamage::kTruncated;
    switch (damage) {
      case StoredDamage::kTruncated:
        kind = FsDamage::kTruncated;
        break;
      case StoredDamage::kExtended:
        kind = FsDamage::kExtended;
        break;
      case StoredDamage::kFlipped:
        kind = FsDamage::kFlipped;
        break;
      case StoredDamage::kReplaced:
        kind = kReplacements[(rotation + i) % std::size(kReplacements)];
        break;
    }
    if (std::string why = storage_testing::damage_file(files[i], kind); !why.empty()) {
      throw std::runtime_error("cannot damage " + files[i].string() + ": " + why);
    }
  }
  return files.size();
}

// A reply that is no error, or std::runtime_error naming the command.
inline resp::RespReply checked(resp::RespReply r, const std::string& what) {
  if (r.is_error()) throw std::runtime_error(what + " failed: " + r.to_string());
  return r;
}

// The keys of `key_namespace`, by SCAN (never KEYS, which stops a deployment's server for as
// long as it walks every key).
inline std::vector<std::string> namespace_keys(resp::RespClient& client,
                                               const std::string& key_namespace) {
  const std::string pattern = key_namespace + "+*";
  std::vector<std::string> keys;
  std::string cursor = "0";
  for (std::size_t round = 0;; ++round) {
    if (round == 1'000'000) throw std::runtime_error("SCAN MATCH " + pattern + " did not end");
    const resp::RespReply r = checked(
        client.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}), "SCAN " + pattern);
    if (r.elements.size() != 2) throw std::runtime_error("SCAN answered " + r.to_string());
    for (const resp::RespReply& k : r.elements[1].elements) keys.push_back(k.str);
    cursor = r.elements[0].str;
    if (cursor == "0") break;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());  // SCAN may repeat a key
  return keys;
}

inline std::size_t damage_values(resp::RespClient& client, const std::string& key_namespace,
                                 StoredDamage damage) {
  const std::vector<std::string> keys = namespace_keys(client, key_namespace);
  for (const std::string& key : keys) {
    switch (damage) {
      case StoredDamage::kTruncated: {
        const std::string value = checked(client.command({"GET", key}), "GET").str;
        checked(client.command({"SET", key, std::string_view(value).substr(0, value.size() / 2)}),
                "SET");
        break;
      }
      case StoredDamage::kExtended:
        checked(client.command({"APPEND", key, "x"}), "APPEND");
        break;
      case StoredDamage::kFlipped: {
        const std::string value = checked(client.command({"GET", key}), "GET").str;
        if (value.empty()) throw std::runtime_error("the value of " + key + " is empty");
        const std::size_t at = value.size() / 2;
        const std::string flipped(1, static_cast<char>(value[at] ^ 1));
        checked(client.command({"SETRANGE", key, std::to_string(at), flipped}), "SETRANGE");
        break;
      }
      case StoredDamage::kReplaced:
        checked(client.command({"DEL", key}), "DEL");
        checked(client.command({"RPUSH", key, "not a value"}), "RPUSH");
        break;
    }
  }
  return keys.size();
}

// The config without what create_l2_adapter() reads before the type does.
inline Json bare(Json config) {
  config.erase("serde");
  config.erase("serde_wrapper");
  return config;
}

}  // namespace stored_damage_internal

// Builds an adapter from a config as the runner does (an L1 for a "serde" wrapper's temps).
using AdapterBuilder = std::function<L2AdapterPtr(const Json& config)>;

// damageable_fs()
//
// For an "fs" config: each call builds the config with base_path set to a fresh subdirectory
// of its own (named after fresh_key_namespace(), under the config's base_path) and damages the
// object files found there (temporary files left out): cut, extended, a byte flipped, or, object
// by object in turn, replaced by a FIFO, a directory and a symbolic link to /dev/zero, each call
// starting one further along (the calls of every adapter of one factory share the rotation).
inline std::function<DamageableAdapter()> damageable_fs(Json config, AdapterBuilder build) {
  using namespace stored_damage_internal;
  auto rotation = std::make_shared<std::atomic<std::size_t>>(0);
  return [config = std::move(config), build = std::move(build), rotation]() {
    Json c = config;
    const fs::path dir =
        fs::path(config.at("base_path").get<std::string>()) / fresh_key_namespace("damage");
    c["base_path"] = dir.string();
    DamageableAdapter d;
    d.adapter = build(c);
    d.damage = [dir, rotation](StoredDamage damage) {
      return damage_files(dir, damage, damage == StoredDamage::kReplaced ? (*rotation)++ : 0);
    };
    return d;
  };
}

// damageable_resp()
//
// For a "resp" config: each call builds the config with a fresh key_namespace and damages the
// values of that namespace's keys (SCAN MATCH "<namespace>+*") over a client of the config's server
// (its host, port and credentials): SET to the first half, APPEND of a byte, SETRANGE of one
// byte, or replaced by a list (DEL, RPUSH).
inline std::function<DamageableAdapter()> damageable_resp(Json config, AdapterBuilder build) {
  using namespace stored_damage_internal;
  const std::string user_ns =
      config.contains("key_namespace") && config["key_namespace"].is_string()
          ? config["key_namespace"].get<std::string>()
          : "";
  return [config = std::move(config), build = std::move(build), user_ns]() {
    Json c = config;
    const std::string ns = fresh_key_namespace(user_ns);
    c["key_namespace"] = ns;
    resp::RespEndpoint endpoint = resp::RespAdapterConfig::parse(bare(c)).connector.endpoint;
    endpoint.max_reply_bytes = std::size_t{64} << 20;  // a chunk-sized value, read back whole
    DamageableAdapter d;
    d.adapter = build(c);
    auto client = std::make_shared<resp::RespClient>(endpoint);
    d.damage = [client, ns](StoredDamage damage) { return damage_values(*client, ns, damage); };
    return d;
  };
}

}  // namespace lmcache::conformance
