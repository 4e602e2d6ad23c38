// LendLedger: reservations bounded by the capacity, leases taken by a store (adopt) or given
// back when the buffer's last reference goes (also after the ledger's adapter is gone), and a
// failed lend leaving its reservation to unreserve().
#include "lmcache/l2/internal/lend_ledger.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "lmcache/core/testing/test_keys.h"

namespace lmcache::l2_internal {
namespace {

MemoryLayoutDesc bytes_layout(std::int64_t n) {
  return MemoryLayoutDesc::single({n}, DType::kUInt8);
}

TEST(LendLedger, ReservesOnlyWhatFitsBesideTheStoredAndOutstandingBytes) {
  auto ledger = std::make_shared<LendLedger>();
  EXPECT_TRUE(ledger->try_reserve(60, /*used=*/30, /*capacity=*/100));
  EXPECT_EQ(ledger->outstanding(), 60u);
  EXPECT_FALSE(ledger->try_reserve(11, 30, 100));  // 30 + 60 + 11 > 100
  EXPECT_TRUE(ledger->try_reserve(10, 30, 100));   // exactly full
  EXPECT_FALSE(ledger->try_reserve(1, 30, 100));
  EXPECT_FALSE(ledger->try_reserve(0, 200, 100));                // already over
  EXPECT_FALSE(ledger->try_reserve(1, UINT64_MAX, UINT64_MAX));  // no wrap-around
  ledger->unreserve(70);
  EXPECT_EQ(ledger->outstanding(), 0u);
}

TEST(LendLedger, AStoreAdoptsOnlyABufferLentForItsKey) {
  auto ledger = std::make_shared<LendLedger>();
  ASSERT_TRUE(ledger->try_reserve(16, 0, 1024));
  MemoryObjPtr a = ledger->lend(test_key(1), 8, bytes_layout(8));
  MemoryObjPtr b = ledger->lend(test_key(2), 8, bytes_layout(8));
  EXPECT_EQ(a->physical_size(), 8u);
  EXPECT_NE(a->data(), b->data());
  EXPECT_FALSE(ledger->adopt(test_key(2), a->data()));  // lent for another key
  std::vector<std::byte> own(8);
  EXPECT_FALSE(ledger->adopt(test_key(1), own.data()));  // a caller's own buffer
  EXPECT_TRUE(ledger->adopt(test_key(1), a->data()));
  EXPECT_FALSE(ledger->adopt(test_key(1), a->data()));  // once
  EXPECT_EQ(ledger->outstanding(), 8u);
  a.reset();  // adopted: its lease went with the adoption, nothing more goes back
  EXPECT_EQ(ledger->outstanding(), 8u);
  b.reset();  // never submitted: its lease goes back with the buffer
  EXPECT_EQ(ledger->outstanding(), 0u);
}

TEST(LendLedger, ABufferMayOutliveItsAdaptersReference) {
  auto ledger = std::make_shared<LendLedger>();
  ASSERT_TRUE(ledger->try_reserve(4, 0, 4));
  MemoryObjPtr lent = ledger->lend(test_key(3), 4, bytes_layout(4));
  std::weak_ptr<LendLedger> weak = ledger;
  ledger.reset();  // the adapter went first
  EXPECT_FALSE(weak.expired());
  lent.reset();
  EXPECT_TRUE(weak.expired());
}

TEST(LendLedgerConcurrency, LeasesFromManyThreadsAllGoBack) {
  auto ledger = std::make_shared<LendLedger>();
  constexpr int kThreads = 4;
  constexpr int kEach = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!ledger->try_reserve(16, 0, 1 << 20)) continue;
        MemoryObjPtr obj = ledger->lend(test_key(t * kEach + i), 16, bytes_layout(16));
        if (i % 2 == 0) ledger->adopt(test_key(t * kEach + i), obj->data());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ledger->outstanding(), 0u);
}

}  // namespace
}  // namespace lmcache::l2_internal
