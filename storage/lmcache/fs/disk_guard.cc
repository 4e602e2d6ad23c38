#include "lmcache/fs/disk_guard.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace lmcache::fs {

namespace {

DiskGuardOptions checked(DiskGuardOptions o) {
  if (!o.enabled()) {
    throw std::invalid_argument("DiskGuard: set high_watermark, min_free_bytes or both");
  }
  if (o.high_watermark && !(*o.high_watermark > 0.0 && *o.high_watermark <= 1.0)) {
    throw std::invalid_argument("DiskGuard: high_watermark must be in (0, 1], got " +
                                std::to_string(*o.high_watermark));
  }
  if (o.refresh.count() < 0) throw std::invalid_argument("DiskGuard: refresh must be >= 0");
  return o;
}

std::string gib(std::uint64_t bytes) {
  return std::to_string(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0)) + " GiB";
}

}  // namespace

DiskGuard::DiskGuard(DiskGuardOptions options, StatFn stat)
    : options_(checked(options)),
      stat_(stat ? std::move(stat) : throw std::invalid_argument("DiskGuard: no StatFn")) {}

DiskGuard::StatFn DiskGuard::statvfs_of(std::filesystem::path path) {
  return [path = std::move(path)] {
    struct statvfs s {};
    if (::statvfs(path.c_str(), &s) != 0) {
      throw std::system_error(errno, std::generic_category(), "statvfs " + path.string());
    }
    const std::uint64_t unit = s.f_frsize != 0 ? s.f_frsize : s.f_bsize;
    return DiskSpace{(static_cast<std::uint64_t>(s.f_blocks) - s.f_bfree) * unit,
                     static_cast<std::uint64_t>(s.f_bavail) * unit};
  };
}

void DiskGuard::refresh_locked(Clock::time_point now) {
  if (read_at_ && now - *read_at_ < options_.refresh) return;
  try {
    reading_ = stat_();
  } catch (...) {
    ++stat_errors_;
    throw;
  }
  read_at_ = now;
  reserved_ = 0;  // the new reading includes what was written
}

std::uint64_t DiskGuard::headroom_locked() const {
  std::uint64_t room = std::numeric_limits<std::uint64_t>::max();
  if (options_.high_watermark) {
    // df's Use% = used / (used + available); writing X moves X from one to the other.
    const long double size =
        static_cast<long double>(reading_.used) + static_cast<long double>(reading_.available);
    const long double allowed =
        std::floor(static_cast<long double>(*options_.high_watermark) * size);
    const long double used = static_cast<long double>(reading_.used);
    room = std::min(room, allowed > used ? static_cast<std::uint64_t>(allowed - used) : 0);
  }
  if (options_.min_free_bytes) {
    room = std::min(room, reading_.available > *options_.min_free_bytes
                              ? reading_.available - *options_.min_free_bytes
                              : 0);
  }
  return room > reserved_ ? room - reserved_ : 0;
}

bool DiskGuard::try_reserve(std::uint64_t bytes, std::string* why) {
  std::lock_guard lock(mu_);
  try {
    refresh_locked(Clock::now());
  } catch (const std::exception& e) {
    ++refused_;
    if (why != nullptr) *why = std::string("disk guard: cannot read the free space: ") + e.what();
    return false;
  }
  const std::uint64_t room = headroom_locked();
  if (bytes <= room) {
    reserved_ += bytes;
    return true;
  }
  ++refused_;
  if (why != nullptr) {
    *why = "disk guard: writing " + std::to_string(bytes) + " bytes would leave the file system";
    if (options_.high_watermark) {
      *why += " above high_watermark " + std::to_string(*options_.high_watermark);
    }
    if (options_.min_free_bytes) {
      *why += std::string(options_.high_watermark ? " or" : "") +
              " with less than min_free_bytes " + std::to_string(*options_.min_free_bytes) +
              " available";
    }
    *why += " (used " + gib(reading_.used) + ", available " + gib(reading_.available) +
            ", headroom " + std::to_string(room) + " bytes)";
  }
  return false;
}

std::uint64_t DiskGuard::headroom() {
  std::lock_guard lock(mu_);
  try {
    refresh_locked(Clock::now());
  } catch (const std::exception&) {
    return 0;
  }
  return headroom_locked();
}

std::uint64_t DiskGuard::effective_capacity(std::uint64_t used, std::uint64_t headroom,
                                            std::uint64_t max_capacity) {
  const std::uint64_t cap =
      max_capacity == 0 ? std::numeric_limits<std::uint64_t>::max() : max_capacity;
  const std::uint64_t sum =
      headroom > std::numeric_limits<std::uint64_t>::max() - used ? cap : used + headroom;
  return std::clamp<std::uint64_t>(sum, 1, std::max<std::uint64_t>(cap, 1));
}

Json DiskGuard::status() {
  const std::uint64_t room = headroom();
  std::lock_guard lock(mu_);
  Json s = {{"high_watermark", options_.high_watermark ? Json(*options_.high_watermark) : Json()},
            {"min_free_bytes", options_.min_free_bytes ? Json(*options_.min_free_bytes) : Json()},
            {"used_bytes", reading_.used},
            {"available_bytes", reading_.available},
            {"headroom_bytes", room},
            {"refused_writes", refused_},
            {"stat_errors", stat_errors_}};
  return s;
}

}  // namespace lmcache::fs
