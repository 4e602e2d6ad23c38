// File: conformance/tools/reference_storage.h
//
// `lmcache-conform --reference` over real storage: the parent starts a private redis-server
// (when one is installed) and a temporary directory for the run, and passes them to every child
// as one source, "reference-storage:<json>". The child registers the reference storage
// adapters over them, each adapter in a key namespace of its own: "resp" and "fs" bare and
// under the fp8 serde ("resp_fp8", "fs_fp8"), the wrapper suite over each live store
// ("resp_fp8_wrapper", "fs_fp8_wrapper"), and the native connector bridge over an in-memory
// connector ("bridge_memory", "bridge_memory_fp8"), which needs neither.
#pragma once

#include <memory>
#include <string>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance::tools {

// Sources of this kind are this prefix followed by {"redis_host", "redis_port", "fs_dir"}
// (the first two absent without a redis-server).
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
// redis-server is not installed: note() says so) and a temporary directory, both removed at
// destruction. Throws std::runtime_error when an installed redis-server does not start.
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
