// File: lmcache/fs/fs_adapter.h
//
// The "fs" L2 adapter type (LMCache's name): an FsConnector behind the bridge
// (NativeConnectorL2Adapter). Built from its JSON config by create_l2_adapter() once the type is
// registered; with a "serde" object in the config the wrapper library wraps it as for any
// adapter type:
//
//   {"type": "fs", "base_path": "/var/cache/lmcache", "checksum": "crc32",
//    "serde": {"type": "fp8"}}
//
// Config keys (unknown keys are errors naming the key):
//   base_path         string, required: the directory of the objects, created when missing
//   use_odirect       boolean, default false: O_DIRECT reads and writes (buffered fallback)
//   checksum          "none" (default) or "crc32": the 8-byte trailer, crc32 of the key then
//                     the bytes, verified on load (format in lmcache/fs/fs_connector.h)
//   max_capacity_gb   number >= 0, default 0 = unbounded: client-side capacity (bridge)
//   num_workers       integer >= 1, default 4: I/O worker threads
//   layout            "project" (default: KeyCodec file names) or "lmcache" (LMCache's own fs
//                     adapter's file names, lmcache/fs/lmcache_file_names.h: a directory either
//                     wrote, the other reads; requires checksum "none", LMCache's raw files)
//   task_deadline_ms  integer >= 1, default 10000: per-task deadline (bridge)
//   key_namespace     string of [A-Za-z0-9_-], default "": key prefix (bridge)
//   read_io_depth, read_max_bytes_in_flight: LMCache's read pool, as for "resp" (reader
//                     threads for loads; lmcache/bridge/batch_connector_base.h)
//   high_watermark    number in (0, 1], default none: the most of the file system that may be
//                     used (df's Use%) before a store is refused (LMCache's DiskGuard key)
//   min_free_bytes    integer >= 0, default none: the space that must stay available (df's
//                     Avail) (LMCache's DiskGuard key); lmcache/fs/disk_guard.h
//   breaker_threshold, breaker_cooldown_ms, breaker_max_cooldown_ms: the circuit breaker
//                     (bridge; default threshold 0 = none: a local disk has no connection)
#pragma once

#include <memory>
#include <string_view>

#include "lmcache/bridge/bridged_adapter_type.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/core/config.h"
#include "lmcache/fs/fs_connector.h"

namespace lmcache::fs {

inline constexpr std::string_view kFsAdapterType = "fs";

struct FsAdapterConfig : bridge::BridgedAdapterConfig<FsConnectorOptions> {
  // parse()
  //
  // Reads the keys above; a "type" key is accepted only when it is "fs". Throws
  // std::invalid_argument naming the key for an unknown key, a missing required key, a wrong
  // type or a value out of range.
  static FsAdapterConfig parse(const Json& config);
};

// create_fs_adapter()
//
// The bridge over an FsConnector built from `config` (FsAdapterConfig::parse). Throws
// std::system_error when base_path cannot be created.
std::unique_ptr<bridge::NativeConnectorL2Adapter> create_fs_adapter(const Json& config);

// register_fs_adapter_type()
//
// Registers "fs" with the L2 adapter registry (lmcache/l2/adapter_registry.h). Idempotent and
// thread-safe; also run when the library is loaded, and by including this header.
void register_fs_adapter_type();

}  // namespace lmcache::fs

namespace lmcache::fs_internal {
int FsAdapterLinkAnchor();
[[maybe_unused]] static const int kFsAdapterRegistered = FsAdapterLinkAnchor();
}  // namespace lmcache::fs_internal
