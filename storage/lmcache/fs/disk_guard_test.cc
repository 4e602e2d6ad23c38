#include "lmcache/fs/disk_guard.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace lmcache::fs {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// A file system whose reading the test sets; counts the readings.
struct FakeDisk {
  DiskSpace space;
  int reads = 0;
  bool fail = false;
  DiskGuard::StatFn fn() {
    return [this] {
      ++reads;
      if (fail) throw std::system_error(EIO, std::generic_category(), "statvfs /fake");
      return space;
    };
  }
};

DiskGuardOptions watermark(double hw) {
  DiskGuardOptions o;
  o.high_watermark = hw;
  o.refresh = std::chrono::hours(1);  // one reading unless a test asks for more
  return o;
}

TEST(DiskGuard, HighWatermarkIsTheUsedShareDfReports) {
  FakeDisk disk{{60 * kGiB, 40 * kGiB}};  // 60 % used
  DiskGuard guard(watermark(0.8), disk.fn());
  // 80 % of 100 GiB may be used: 20 GiB more.
  EXPECT_EQ(guard.headroom(), 20 * kGiB);
  std::string why;
  EXPECT_FALSE(guard.try_reserve(20 * kGiB + 1, &why));
  EXPECT_NE(why.find("high_watermark 0.8"), std::string::npos) << why;
  EXPECT_TRUE(guard.try_reserve(20 * kGiB));
  EXPECT_EQ(guard.headroom(), 0u);
  EXPECT_FALSE(guard.try_reserve(1));
  // Past the mark already: nothing may be written.
  FakeDisk full{{90 * kGiB, 10 * kGiB}};
  DiskGuard over(watermark(0.8), full.fn());
  EXPECT_EQ(over.headroom(), 0u);
  EXPECT_FALSE(over.try_reserve(1));
}

TEST(DiskGuard, MinFreeBytesKeepsThatMuchAvailable) {
  FakeDisk disk{{10 * kGiB, 5 * kGiB}};
  DiskGuardOptions o;
  o.min_free_bytes = 4 * kGiB;
  o.refresh = std::chrono::hours(1);
  DiskGuard guard(o, disk.fn());
  EXPECT_EQ(guard.headroom(), kGiB);
  std::string why;
  EXPECT_FALSE(guard.try_reserve(kGiB + 1, &why));
  EXPECT_NE(why.find("min_free_bytes 4294967296"), std::string::npos) << why;
  EXPECT_TRUE(guard.try_reserve(kGiB / 2));
  EXPECT_TRUE(guard.try_reserve(kGiB / 2));
  EXPECT_FALSE(guard.try_reserve(1)) << "writes admitted since the reading count against it";
}

TEST(DiskGuard, BothLimitsTheTighterDecides) {
  for (const auto& [hw, min_free, expected] :
       {std::tuple{0.5, 1 * kGiB, 10 * kGiB}, std::tuple{0.9, 55 * kGiB, 5 * kGiB}}) {
    FakeDisk disk{{40 * kGiB, 60 * kGiB}};
    DiskGuardOptions o = watermark(hw);
    o.min_free_bytes = min_free;
    DiskGuard guard(o, disk.fn());
    EXPECT_EQ(guard.headroom(), expected) << hw << " " << min_free;
  }
}

TEST(DiskGuard, TheReadingIsCachedForRefreshThenReadAgain) {
  FakeDisk disk{{0, 10 * kGiB}};
  DiskGuardOptions o = watermark(1.0);
  o.refresh = std::chrono::milliseconds(0);  // every call reads
  DiskGuard fresh(o, disk.fn());
  fresh.headroom();
  fresh.headroom();
  EXPECT_EQ(disk.reads, 2);
  FakeDisk cached_disk{{0, 10 * kGiB}};
  DiskGuard cached(watermark(1.0), cached_disk.fn());
  EXPECT_TRUE(cached.try_reserve(kGiB));
  cached_disk.space = {kGiB, 9 * kGiB};  // the write landed; not read again within the hour
  EXPECT_EQ(cached.headroom(), 9 * kGiB);
  EXPECT_EQ(cached_disk.reads, 1);
}

TEST(DiskGuard, AReadingThatFailsRefusesTheWrite) {
  FakeDisk disk{{0, 10 * kGiB}};
  disk.fail = true;
  DiskGuard guard(watermark(1.0), disk.fn());
  std::string why;
  EXPECT_FALSE(guard.try_reserve(1, &why));
  EXPECT_NE(why.find("cannot read the free space"), std::string::npos) << why;
  EXPECT_EQ(guard.status()["stat_errors"], 2) << "try_reserve and status each tried";
  disk.fail = false;
  EXPECT_TRUE(guard.try_reserve(1)) << "a failed reading is not cached";
}

TEST(DiskGuard, RejectsOptionsThatCannotWork) {
  FakeDisk disk;
  EXPECT_THROW(DiskGuard(DiskGuardOptions{}, disk.fn()), std::invalid_argument);
  for (double bad : {0.0, -0.1, 1.01, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THROW(DiskGuard(watermark(bad), disk.fn()), std::invalid_argument) << bad;
  }
  EXPECT_THROW(DiskGuard(watermark(0.5), DiskGuard::StatFn{}), std::invalid_argument);
}

TEST(DiskGuard, EffectiveCapacityIsLmcachesClamp) {
  EXPECT_EQ(DiskGuard::effective_capacity(10, 5, 0), 15u);
  EXPECT_EQ(DiskGuard::effective_capacity(10, 5, 12), 12u);
  EXPECT_EQ(DiskGuard::effective_capacity(0, 0, 100), 1u);
  EXPECT_EQ(DiskGuard::effective_capacity(std::numeric_limits<std::uint64_t>::max(), 5, 0),
            std::numeric_limits<std::uint64_t>::max());
}

TEST(DiskGuard, StatvfsReadsTheRealFileSystem) {
  const DiskSpace space = DiskGuard::statvfs_of(".")();
  EXPECT_GT(space.used + space.available, 0u);
  EXPECT_THROW(DiskGuard::statvfs_of("/nonexistent/lmcache-disk-guard")(), std::system_error);
}

}  // namespace
}  // namespace lmcache::fs
