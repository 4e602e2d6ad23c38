// File: conformance/tools/reference_storage.h
//
// `lmcache-conform --reference` over real storage: the parent starts a private redis-server
// (when one is installed) and a temporary directory for the run, and passes them to every child
// as one source, "reference-storage:<json>". The child registers the reference storage
// adapters over them, each adapter in a key namespace of its own: "resp" (authenticating: the
// server requires a password) and "fs" bare and under the fp8 serde ("resp_fp8", "fs_fp8"), the
// wrapper suite over each live store ("resp_fp8_wrapper", "fs_fp8_wrapper"), "fs_crc32_odirect"
// (fs with its crc32 trailer and O_DIRECT, in a directory on disk), and the native connector
// bridge over in-memory connectors of the current and the older shape ("bridge_memory",
// "bridge_memory_fp8", "bridge_legacy_memory"), which need neither;
// and the serde processors whose configs read a key file ("registry_aesgcm_128_bind_key_file",
// "registry_chain_fp8_checksum_aesgcm_file", "registry_chain_aesgcm_checksum_file": aesgcm from
// a master_key_path alone, as the last of three chain stages and as the first of two).
#pragma once

#include <memory>
#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::tools {

// Sources of this kind are this prefix followed by {"redis_host", "redis_port",
// "redis_password", "fs_dir", "fs_disk_dir", "aesgcm_key_path"} (the first three absent
// without a redis-server).
inline constexpr const char* kReferenceStoragePrefix = "reference-storage:";

// is_reference_storage_source()
//
// Whether `source` starts with kReferenceStoragePrefix.
bool is_reference_storage_source(const std::string& source);

// load_reference_storage_source()
//
// Registers the adapters listed above into `registry`. Returns "" or why not (unreadable JSON,
// an adapter that cannot be built over the given server or directory).
std::string load_reference_storage_source(const std::string& source, Registry& registry);

// ReferenceStorage
//
// What the parent holds for the length of a --reference run: a private redis-server (none when
// redis-server is not installed: note() says so), two temporary directories (one in memory
// where /dev/shm is writable, one under $TMPDIR) and an aesgcm master key file, all removed at
// destruction. Throws std::runtime_error when an installed redis-server does not start or the key
// file cannot be written.
class ReferenceStorage {
 public:
  ReferenceStorage();
  ~ReferenceStorage();
  ReferenceStorage(const ReferenceStorage&) = delete;
  ReferenceStorage& operator=(const ReferenceStorage&) = delete;

  // The source string for the children.
  std::string source() const;
  // "" or what was left out and why.
  const std::string& note() const { return note_; }

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
  std::string note_;
};

}  // namespace lmcache::conformance::tools
