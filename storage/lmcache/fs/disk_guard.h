// File: lmcache/fs/disk_guard.h
//
// DiskGuard: keeps the fs adapter from filling its disk, LMCache's DiskGuard
// (l2_adapters/disk_guard.py) with its names and rules:
//   high_watermark  the most of the file system that may be in use, as df reports it
//                   (used / (used + available)), in (0, 1];
//   min_free_bytes  the space that must stay available to unprivileged writers (df's Avail).
// At least one is set. The reading (statvfs) is cached for `refresh` (1 s); bytes admitted since
// the reading are subtracted from it, so that writes within one second cannot overshoot together
// (LMCache re-reads only; this is the one addition). A write that does not fit under both limits
// is refused with the limit it would break.
//
// effective_capacity() is LMCache's capacity rule: clamp(used + headroom, 1, max_capacity).
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "lmcache/core/config.h"

namespace lmcache::fs {

// DiskSpace
//
// One reading, in bytes, as df computes it: used = (f_blocks - f_bfree) * f_frsize, available =
// f_bavail * f_frsize (the blocks reserved for root count as neither).
struct DiskSpace {
  std::uint64_t used = 0;
  std::uint64_t available = 0;
};

struct DiskGuardOptions {
  std::optional<double> high_watermark;
  std::optional<std::uint64_t> min_free_bytes;
  std::chrono::milliseconds refresh{1000};

  bool enabled() const { return high_watermark.has_value() || min_free_bytes.has_value(); }
};

class DiskGuard {
 public:
  using Clock = std::chrono::steady_clock;
  using StatFn = std::function<DiskSpace()>;

  // Throws std::invalid_argument when neither limit is set, high_watermark is outside (0, 1]
  // (or not a number), refresh < 0, or `stat` is empty.
  DiskGuard(DiskGuardOptions options, StatFn stat);

  // statvfs_of()
  //
  // A StatFn reading the file system that holds `path`; it throws std::system_error naming the
  // path when statvfs() fails.
  static StatFn statvfs_of(std::filesystem::path path);

  // try_reserve()
  //
  // Admits `bytes` more when they fit under both limits (the reading refreshed when older than
  // `refresh`), counting them against the reading; otherwise returns false and, when `why` is
  // not null, sets it to the limit and the figures. A failing statvfs refuses too.
  bool try_reserve(std::uint64_t bytes, std::string* why = nullptr);

  // The bytes that may still be written now (reading refreshed as above).
  std::uint64_t headroom();

  // effective_capacity()
  //
  // clamp(used + headroom, 1, max_capacity); max_capacity 0 means none.
  static std::uint64_t effective_capacity(std::uint64_t used, std::uint64_t headroom,
                                          std::uint64_t max_capacity);

  // {"high_watermark", "min_free_bytes" (null when unset), "used_bytes", "available_bytes",
  //  "headroom_bytes", "refused_writes", "stat_errors"}
  Json status();

  const DiskGuardOptions& options() const { return options_; }

 private:
  // Re-reads when stale. mu_ held. Throws what the StatFn throws.
  void refresh_locked(Clock::time_point now);
  std::uint64_t headroom_locked() const;

  const DiskGuardOptions options_;
  const StatFn stat_;
  std::mutex mu_;
  std::optional<Clock::time_point> read_at_;
  DiskSpace reading_;
  std::uint64_t reserved_ = 0;  // admitted since reading_
  std::uint64_t refused_ = 0;
  std::uint64_t stat_errors_ = 0;
};

}  // namespace lmcache::fs
