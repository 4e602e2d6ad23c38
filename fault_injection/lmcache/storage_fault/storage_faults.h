// File: lmcache/storage_fault/storage_faults.h
//
// Real faults for real L2 storage: what happens to a deployed Redis server or a cache directory
// underneath the stack, done for real (signals, server commands, resource limits, file damage)
// rather than simulated by a decorator. Beside the simulated kinds of lmcache/fault/ (which
// decorate any adapter); fault_injection/README.md lists every kind with what the stack must do.
//
// Test support, never installed: it drives the storage_testing RedisServer fixture and files of
// a temporary directory. Namespace lmcache::fault.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lmcache::storage_testing {
class RedisServer;
}  // namespace lmcache::storage_testing

namespace lmcache::fault {

enum class StorageFaultKind : std::uint8_t {
  kRedisKill,        // SIGKILL, later restarted empty
  kRedisPause,       // SIGSTOP, later SIGCONT
  kRedisClientKill,  // CLIENT KILL of every client connection
  kRedisMaxmemory,   // maxmemory lowered under the data: SETs refused with OOM
  kFsFull,           // writes past a size limit fail (EFBIG), as on a full disk
  kFsTruncate,       // an object file cut short underneath
  kFsFlip,           // one byte of an object file flipped underneath
  kFsDelete,         // an object file deleted underneath
  kFsUnwritable,     // the cache directory made read-only
};

// storage_fault_name() / storage_fault_from_name()
//
// The kind's name ("redis_kill", "fs_flip", ...), and back (nullopt for an unknown name).
std::string_view storage_fault_name(StorageFaultKind kind);
std::optional<StorageFaultKind> storage_fault_from_name(std::string_view name);

// all_storage_fault_kinds()
//
// Every kind, in declaration order.
const std::vector<StorageFaultKind>& all_storage_fault_kinds();

// storage_fault_adapter_type()
//
// The adapter type a kind applies to: "resp" or "fs".
std::string_view storage_fault_adapter_type(StorageFaultKind kind);

// redis_client_kill()
//
// CLIENT KILL TYPE normal on `server` (the killing connection itself is skipped): every client
// connection is closed by the server. Returns how many were killed. Throws resp::RespError.
std::int64_t redis_client_kill(const storage_testing::RedisServer& server);

// redis_set_maxmemory()
//
// CONFIG SET maxmemory `bytes` with policy noeviction (0: no limit again). Under the limit a SET
// that needs memory is refused with an OOM error; nothing is evicted. Throws resp::RespError.
void redis_set_maxmemory(const storage_testing::RedisServer& server, std::uint64_t bytes);

// FileSizeLimit
//
// A full disk without mounting anything: RLIMIT_FSIZE for this process, with SIGXFSZ ignored,
// so that a write past `bytes` fails with EFBIG (as ENOSPC would) instead of killing the process.
// Restores both on destruction. Process-wide: only for tests that do nothing else meanwhile.
// Throws std::system_error when the limit cannot be set.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::uint64_t bytes);
  ~FileSizeLimit();
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*saved_handler_)(int) = nullptr;
};

// flip_byte() / truncate_file() / delete_file()
//
// Damage an object file underneath the stack. flip_byte() XORs the byte at `offset` with 0x01;
// truncate_file() cuts the file to `size` bytes. Throw std::runtime_error naming the file when
// it is missing or too short.
void flip_byte(const std::filesystem::path& file, std::uint64_t offset);
void truncate_file(const std::filesystem::path& file, std::uint64_t size);
void delete_file(const std::filesystem::path& file);

// object_files()
//
// Every object file (name ending ".data") under `base_path`, sorted: how a test finds the
// file of an object without the connector's key encoding.
std::vector<std::filesystem::path> object_files(const std::filesystem::path& base_path);

// UnwritableDir
//
// Makes `dir` read-only (mode 0555) and restores its mode on destruction. effective() is false
// where the permission means nothing (a process with CAP_DAC_OVERRIDE, e.g. root, writes
// anyway): tests skip then, saying so.
class UnwritableDir {
 public:
  explicit UnwritableDir(std::filesystem::path dir);
  ~UnwritableDir();
  UnwritableDir(const UnwritableDir&) = delete;
  UnwritableDir& operator=(const UnwritableDir&) = delete;

  // Whether a write into the directory is really refused now (probed with a file create).
  bool effective() const { return effective_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::perms saved_{};
  bool effective_ = false;
};

}  // namespace lmcache::fault
