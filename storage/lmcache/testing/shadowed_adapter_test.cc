#include "lmcache/testing/shadowed_adapter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/test_objects.h"
#include "lmcache/l2/mock_adapter.h"

namespace lmcache::storage_testing {
namespace {

ObjectKey key_of(int i) {
  return ObjectKey(int_hash_to_bytes(static_cast<std::uint32_t>(i)), "test-model", 0, 0);
}

std::unique_ptr<MockL2Adapter> fast_mock() {
  return std::make_unique<MockL2Adapter>(
      MockL2AdapterOptions{.max_capacity_bytes = std::uint64_t{1} << 30,
                           .bandwidth_bytes_per_sec = std::uint64_t{1} << 40});
}

// A wrapper stores from its submitting threads (inline serialize) and from its loop at once:
// each store must get its own shadow result, never lose it to another thread's wait (which then
// timed out and failed a correct store).
TEST(ShadowedAdapter, ConcurrentStoresEachGetTheirShadowResult) {
  ShadowedAdapter a(fast_mock(), fast_mock());
  constexpr int kThreads = 4;
  constexpr int kStoresPerThread = 40;
  std::mutex mu;
  std::map<TaskId, std::uint64_t> expected_bytes;  // by the primary's id
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStoresPerThread; ++i) {
        const int k = t * kStoresPerThread + i;
        const std::size_t size = 16 + static_cast<std::size_t>(k);
        try {
          const TaskId id = a.submit_store_task({key_of(k)}, {core_internal::bytes_of(size)});
          std::lock_guard lock(mu);
          expected_bytes.emplace(id, size);
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          errors.push_back(e.what());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(errors.empty()) << errors.size() << " stores threw, the first: " << errors.front();
  ASSERT_EQ(expected_bytes.size(), std::size_t{kThreads * kStoresPerThread});

  // Every store completes once, successful, with its shadow's bytes.
  std::map<TaskId, L2StoreResult> results;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (results.size() < expected_bytes.size() && std::chrono::steady_clock::now() < deadline) {
    for (auto& [id, r] : a.pop_completed_store_tasks()) {
      EXPECT_TRUE(results.emplace(id, r).second) << "store " << id << " completed twice";
    }
    wait_readable(a.get_store_event_fd(), std::chrono::milliseconds(10));
  }
  ASSERT_EQ(results.size(), expected_bytes.size());
  for (const auto& [id, bytes] : expected_bytes) {
    ASSERT_EQ(results.count(id), 1u) << "store " << id;
    EXPECT_TRUE(results.at(id).is_successful()) << "store " << id;
    EXPECT_EQ(results.at(id).bytes_transferred(), bytes) << "store " << id;
  }
  a.close();
}

// close() while other threads store: it waits for the stores waiting on the shadow (none reads
// the shadow's fds once closed), and every store after it throws std::logic_error, as the
// primary's would.
TEST(ShadowedAdapter, CloseWhileStoringEndsEveryStoreCleanly) {
  ShadowedAdapter a(fast_mock(), fast_mock());
  constexpr int kThreads = 3;
  std::atomic<int> stored{0};
  std::mutex mu;
  std::vector<std::string> other_errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100000; ++i) {
        try {
          a.submit_store_task({key_of(t * 100000 + i)}, {core_internal::bytes_of(64)});
          stored.fetch_add(1);
        } catch (const std::logic_error&) {
          return;  // closed
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          other_errors.push_back(e.what());
          return;
        }
      }
    });
  }
  while (stored.load() < 3 * kThreads) std::this_thread::yield();
  a.close();
  for (auto& th : threads) th.join();
  EXPECT_TRUE(other_errors.empty()) << other_errors.size()
                                    << " stores threw something other than std::logic_error, "
                                       "the first: "
                                    << other_errors.front();
  EXPECT_THROW(a.submit_store_task({key_of(-1)}, {core_internal::bytes_of(64)}), std::logic_error);
}

}  // namespace
}  // namespace lmcache::storage_testing
