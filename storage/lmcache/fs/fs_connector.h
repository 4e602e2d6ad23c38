// File: lmcache/fs/fs_connector.h
//
// FsConnector: a native connector (lmcache/bridge/native_connector.h) storing one file per
// object under a base directory, LMCache's "fs" connector.
//
// Layout: the object of key K (a KeyCodec string: [A-Za-z0-9_%@+-] only, so never '/', '.' or
// NUL) is the file <base_path>/K.data. A key longer than kMaxNameBytes is cut into components of
// kComponentBytes joined by '/', so every path component stays within the file-system limit
// (255 bytes) and the mapping stays injective (a directory "X" never collides with a file
// "X.data").
//
// Writes are atomic: the bytes go to <path>.tmp.<pid>-<n> (the file name cut to
// kMaxTempPrefixBytes before ".tmp.", so that a key of kMaxNameBytes still gets a temporary
// name within 255 bytes; created with O_EXCL), then rename()
// replaces <path>, so a crash of the writing process never leaves a torn object visible, only a
// temporary file, which the next FsConnector over that directory removes when its pid is dead.
// There is no fsync: after a power loss a renamed file may hold stale blocks, which the crc32
// checksum, when enabled, turns into a miss.
//
// Checksum (`checksum`): none, or crc32 (zlib's): every file ends with an 8-byte trailer, the
// crc32 of the key string (the KeyCodec string the connector is given, namespace included) then
// of the payload, as one running crc (little-endian uint32), then the ASCII magic "LMC2". A
// load checks the file length (payload + trailer), the magic and the crc32 over its own key
// and the bytes read; any mismatch is a miss, never wrong bytes (the destination's bytes are
// then unspecified, as for any failed load). Because the key is in the crc, another key's
// object copied or renamed over this one (same length) is a miss too. Files of the older
// format (magic "LMC1", crc of the payload alone) are misses and are replaced by the next
// store. Without a checksum a load checks the length only: it cannot tell flipped bytes or
// another key's object of the same length from the right one.
//
// What is at an object's path is checked before a byte is read: the file is opened with
// O_NONBLOCK | O_NOFOLLOW (a FIFO does not block the open, a symbolic link is not followed) and
// fstat()ed; anything but a regular file is a miss whose reason says what was found ("is a
// directory", "is a FIFO", "is a symbolic link", "is a socket", "is a character device"), and a
// regular file of the wrong length is a miss ("holds N bytes, expected M"); the destination is
// untouched in both cases. exists() likewise counts only a regular file (not followed).
//
// O_DIRECT (`use_odirect`): reads and writes bypass the page cache. The 4096-byte-aligned part
// of a page-aligned buffer is transferred in place and the tail through a per-worker aligned
// bounce buffer (writes then truncate the file to its exact length). On a file system without
// O_DIRECT (tmpfs) the connector falls back to buffered I/O and reports it in its status.
//
// Disk guard (`disk_guard`, LMCache's DiskGuard): a set tile whose bytes would take the file
// system past high_watermark or below min_free_bytes fails the batch before that tile writes a
// file, with the limit named (lmcache/fs/disk_guard.h). Other tiles of the batch may have
// written theirs; the bridge deletes what a failed store wrote, as for any failed set.
//
// Outcome per op (BatchConnectorBase): get: hit, or miss (absent, not a regular file, wrong
// length, bad checksum, I/O error); set: the first error fails the batch (its temporary file
// removed); exists: a regular file at the path; delete: unlink, ENOENT is "not found". Errors
// name the path and what was found or the system error (ENOSPC, EACCES, ...).
//
// Thread safety: as BatchConnectorBase.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lmcache/bridge/batch_connector_base.h"
#include "lmcache/fs/disk_guard.h"

namespace lmcache::fs {

enum class FsChecksum : std::uint8_t { kNone, kCrc32 };

// Which file names objects get: this project's (the KeyCodec string, above), or LMCache's own fs
// adapter's (lmcache/fs/lmcache_file_names.h: a directory either writes, the other reads). Under
// kLmcache a key's namespace, if any, is a subdirectory; a key LMCache cannot store at all (a
// name past 255 bytes, a NUL in the model name) is stored split into directories as above.
enum class FsLayout : std::uint8_t { kProject, kLmcache };

struct FsConnectorOptions {
  std::filesystem::path base_path;
  bool use_odirect = false;
  FsChecksum checksum = FsChecksum::kNone;
  std::size_t num_workers = 4;
  FsLayout layout = FsLayout::kProject;  // kLmcache requires checksum kNone (LMCache's raw files)
  // A DiskGuard over base_path's file system when either limit is set (disk_guard.h): a set
  // tile whose bytes (trailers included) do not fit fails its batch before writing a file.
  DiskGuardOptions disk_guard;
  // LMCache's read pool (batch_connector_base.h): read_io_depth reader threads for loads, and
  // the bytes of gets they may have in flight.
  bridge::ReadPoolOptions reads;
};

class FsConnector final : public bridge::BatchConnectorBase {
 public:
  static constexpr std::size_t kMaxNameBytes = 240;  // longer keys are split into directories
  static constexpr std::size_t kComponentBytes = 200;
  // A temporary file is named after the first kMaxTempPrefixBytes of its object's file name:
  // 200 + ".tmp." + "<pid>-<n>" (at most 28 bytes) stays within 255.
  static constexpr std::size_t kMaxTempPrefixBytes = 200;
  static constexpr std::size_t kTrailerBytes = 8;
  static constexpr std::size_t kDirectAlignment = 4096;

  // Creates base_path (and its parents) when missing, removes temporary files left by dead
  // processes, and starts the workers. Throws std::invalid_argument for an empty base_path or
  // num_workers == 0 or layout kLmcache with a checksum, std::system_error when base_path cannot
  // be created or is not a directory.
  explicit FsConnector(FsConnectorOptions options);
  ~FsConnector() override;

  // path_for() / object_path()
  //
  // The file of `key` (layout above; path_for() follows options.layout, object_path() is this
  // project's layout), under this connector's base_path or under `base_path` (how a test or a
  // fault campaign finds an object's file without a connector). Under kLmcache, path_for()
  // throws std::invalid_argument for a string that is no KeyCodec key (the bridge never passes
  // one).
  std::filesystem::path path_for(const std::string& key) const;
  static std::filesystem::path object_path(const std::filesystem::path& base_path,
                                           const std::string& key);

  // True when O_DIRECT was asked for but the file system refused it.
  bool odirect_fell_back() const { return odirect_fell_back_.load(std::memory_order_relaxed); }
  // Temporary files removed at construction.
  std::size_t stale_temps_removed() const { return stale_temps_removed_; }

  const FsConnectorOptions& options() const { return options_; }

 protected:
  void run_tile(std::size_t worker, Tile& tile) override;
  // {"base_path", "checksum", "use_odirect", "odirect_fell_back", "checksum_failures"}, and
  // "disk_guard" (DiskGuard::status()) when there is one.
  Json status_extra() const override;

 private:
  struct Worker;

  bool get_one(Worker& w, const std::string& key, void* buf, std::size_t len, std::string* error);
  void set_one(Worker& w, const std::string& key, const void* buf, std::size_t len);
  bool exists_one(const std::string& key);
  bool delete_one(const std::string& key);
  // Opens with O_DIRECT when asked and supported; -1 with errno otherwise.
  int open_file(const std::filesystem::path& path, int flags, bool* direct);
  std::size_t sweep_stale_temps();

  const FsConnectorOptions options_;
  std::vector<std::unique_ptr<Worker>> worker_state_;  // one per worker thread
  std::unique_ptr<DiskGuard> disk_guard_;              // when options_.disk_guard is enabled
  std::atomic<bool> odirect_fell_back_{false};
  std::atomic<std::uint64_t> temp_counter_{0};
  std::atomic<std::uint64_t> checksum_failures_{0};
  std::size_t stale_temps_removed_ = 0;
};

}  // namespace lmcache::fs
