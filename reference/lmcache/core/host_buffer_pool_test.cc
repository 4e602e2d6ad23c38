#include "lmcache/core/host_buffer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace lmcache {
namespace {

constexpr std::size_t kPage = 4096;

bool AllZero(const std::byte* p, std::size_t n) {
  return std::all_of(p, p + n, [](std::byte b) { return b == std::byte{0}; });
}

TEST(HostBufferPoolConcurrency, RoundsToWholePages) {
  EXPECT_EQ(HostBufferPool::rounded_size(0), kPage);
  EXPECT_EQ(HostBufferPool::rounded_size(1), kPage);
  EXPECT_EQ(HostBufferPool::rounded_size(kPage), kPage);
  EXPECT_EQ(HostBufferPool::rounded_size(kPage + 1), 2 * kPage);
  EXPECT_THROW(HostBufferPool::rounded_size(SIZE_MAX), std::bad_alloc);
}

TEST(HostBufferPoolConcurrency, ReusesAFreedBufferOfTheSameSize) {
  HostBufferPool pool(1 << 20);
  std::byte* first = nullptr;
  {
    auto b = pool.acquire(10000);
    first = b.get();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % kPage, 0u);
  }
  EXPECT_EQ(pool.stats().cached_bytes, 3 * kPage);
  auto again = pool.acquire(3 * kPage - 5);  // same page-rounded size
  EXPECT_EQ(again.get(), first);
  auto other = pool.acquire(kPage);  // a different size allocates
  EXPECT_NE(other.get(), first);
  HostBufferPool::Stats s = pool.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.cached_bytes, 0u);
}

TEST(HostBufferPoolConcurrency, ZeroedUnlessAskedOtherwise) {
  HostBufferPool pool(1 << 20);
  {
    auto b = pool.acquire(2 * kPage);
    std::fill_n(b.get(), 2 * kPage, std::byte{0xAB});
  }
  {
    auto stale = pool.acquire(2 * kPage, BufferFill::kUninitialized);
    // Recycled and not cleared: the previous owner's bytes are still there.
    EXPECT_EQ(stale.get()[0], std::byte{0xAB});
  }
  auto zeroed = pool.acquire(2 * kPage);
  EXPECT_EQ(pool.stats().hits, 2u);
  EXPECT_TRUE(AllZero(zeroed.get(), 2 * kPage));
}

TEST(HostBufferPoolConcurrency, EvictsTheOldestToStayWithinItsBound) {
  HostBufferPool pool(3 * kPage);
  auto a = pool.acquire(kPage);
  auto b = pool.acquire(kPage);
  auto c = pool.acquire(2 * kPage);
  std::byte* b_data = b.get();
  std::byte* c_data = c.get();
  a.reset();  // cached: a (1 page)
  b.reset();  // cached: b, a (2 pages)
  c.reset();  // 4 pages would exceed 3: a (the oldest) is dropped
  HostBufferPool::Stats s = pool.stats();
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.cached_bytes, 3 * kPage);
  EXPECT_EQ(s.cached_buffers, 2u);
  EXPECT_EQ(pool.acquire(kPage).get(), b_data);
  EXPECT_EQ(pool.acquire(2 * kPage).get(), c_data);
}

TEST(HostBufferPoolConcurrency, OneReleaseMayEvictSeveralBuffers) {
  HostBufferPool pool(3 * kPage);
  {
    auto a = pool.acquire(kPage);
    auto b = pool.acquire(kPage);
    auto c = pool.acquire(kPage);
  }
  EXPECT_EQ(pool.stats().cached_buffers, 3u);
  auto big = pool.acquire(3 * kPage);
  std::byte* big_data = big.get();
  big.reset();  // the three one-page buffers make room
  HostBufferPool::Stats s = pool.stats();
  EXPECT_EQ(s.evictions, 3u);
  EXPECT_EQ(s.cached_buffers, 1u);
  EXPECT_EQ(s.cached_bytes, 3 * kPage);
  EXPECT_EQ(pool.acquire(3 * kPage).get(), big_data);
}

TEST(HostBufferPoolConcurrency, ABufferLargerThanTheBoundIsNotKept) {
  HostBufferPool pool(kPage);
  pool.acquire(2 * kPage).reset();
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  HostBufferPool none(0);
  none.acquire(1).reset();
  EXPECT_EQ(none.stats().cached_buffers, 0u);
}

TEST(HostBufferPoolConcurrency, TrimFreesEverythingCached) {
  HostBufferPool pool(1 << 20);
  pool.acquire(kPage).reset();
  pool.acquire(5 * kPage).reset();
  EXPECT_EQ(pool.stats().cached_buffers, 2u);
  pool.trim();
  EXPECT_EQ(pool.stats().cached_bytes, 0u);
  EXPECT_EQ(pool.stats().cached_buffers, 0u);
}

TEST(HostBufferPoolConcurrency, BuffersMayOutliveThePool) {
  std::shared_ptr<std::byte> kept;
  {
    HostBufferPool pool(1 << 20);
    kept = pool.acquire(kPage);
  }
  kept.get()[kPage - 1] = std::byte{1};  // still valid (ASan would flag a freed buffer)
  EXPECT_EQ(kept.get()[kPage - 1], std::byte{1});
  kept.reset();  // freed by the orphaned state, not leaked (LSan)
}

TEST(HostBufferPoolConcurrency, ProcessDefaultIsBounded) {
  EXPECT_EQ(&HostBufferPool::process_default(), &HostBufferPool::process_default());
  EXPECT_GT(HostBufferPool::process_default().max_cached_bytes(), 0u);
}

TEST(HostBufferPoolConcurrency, ConcurrentAcquireAndRelease) {
  HostBufferPool pool(64 * kPage);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 500; ++i) {
        auto b = pool.acquire(static_cast<std::size_t>(1 + (i + t) % 4) * kPage,
                              BufferFill::kUninitialized);
        b.get()[0] = std::byte{static_cast<unsigned char>(t)};
        auto handed = std::move(b);  // released on another scope, same thread
      }
    });
  }
  for (auto& th : threads) th.join();
  HostBufferPool::Stats s = pool.stats();
  EXPECT_EQ(s.hits + s.misses, 2000u);
  EXPECT_LE(s.cached_bytes, 64 * kPage);
}

}  // namespace
}  // namespace lmcache
