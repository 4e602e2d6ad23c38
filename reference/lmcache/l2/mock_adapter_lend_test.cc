// MockL2Adapter's lent store buffers (L2AdapterInterface::lend_store_buffers()): what it lends,
// that a store adopts a lent buffer instead of copying it, and that every other path gives the
// buffer back. Waits use generous timeouts; no test asserts on elapsed time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/l2/testing/adapter_waits.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kWait = 5000ms;  // generous: never a speed assertion
constexpr std::chrono::milliseconds kPoll = 50ms;

std::unique_ptr<MockL2Adapter> make_adapter(std::uint64_t capacity = 1 << 20) {
  return std::make_unique<MockL2Adapter>(
      MockL2AdapterOptions{.max_capacity_bytes = capacity, .bandwidth_bytes_per_sec = 1ull << 50});
}

ObjectKey key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "lend_model", 0, 0, ""); }

MemoryLayoutDesc bytes_layout(std::int64_t n) {
  return MemoryLayoutDesc::single({n}, DType::kUInt8);
}

L2StoreResult wait_store(L2AdapterInterface& a, TaskId id) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& [done, r] : a.pop_completed_store_tasks()) {
      if (done == id) return r;
    }
    if (wait_readable(a.get_store_event_fd(), kPoll)) consume_fd(a.get_store_event_fd());
  }
  ADD_FAILURE() << "store " << id << " never completed";
  return L2StoreResult::failure();
}

// Loads `k` into a fresh buffer of `n` bytes filled with 0xEE; nullopt when the load missed.
std::optional<std::vector<std::uint8_t>> load_bytes(L2AdapterInterface& a, const ObjectKey& k,
                                                    std::size_t n) {
  auto dst = MemoryObj::allocate(bytes_layout(static_cast<std::int64_t>(n)));
  std::memset(dst->data(), 0xEE, n);
  const TaskId id = a.submit_load_task({k}, {dst});
  auto bits =
      l2_testing::wait_for_result(a.get_load_event_fd(), [&] { return a.query_load_result(id); });
  EXPECT_TRUE(bits.has_value());
  if (!bits || !bits->test(0)) return std::nullopt;
  const auto* p = reinterpret_cast<const std::uint8_t*>(dst->data());
  return std::vector<std::uint8_t>(p, p + dst->size());
}

bool lookup_hits(L2AdapterInterface& a, const ObjectKey& k) {
  const TaskId id = a.submit_lookup_and_lock_task({k});
  auto bits = l2_testing::wait_for_result(a.get_lookup_and_lock_event_fd(),
                                          [&] { return a.query_lookup_and_lock_result(id); });
  EXPECT_TRUE(bits.has_value());
  const bool hit = bits && bits->test(0);
  if (hit) a.submit_unlock({k});
  return hit;
}

void fill(const MemoryObjPtr& obj, std::uint8_t value) {
  std::memset(obj->data(), value, obj->physical_size());
}

TEST(MockL2AdapterLend, LendsOneDistinctBufferPerKeyWithTheLayout) {
  auto a = make_adapter();
  const auto layout = bytes_layout(1000);
  auto lent = a->lend_store_buffers({key(1), key(2), key(3)}, layout);
  ASSERT_EQ(lent.size(), 3u);
  for (std::size_t i = 0; i < lent.size(); ++i) {
    ASSERT_NE(lent[i], nullptr);
    EXPECT_EQ(lent[i]->layout(), layout);
    EXPECT_GE(lent[i]->physical_size(), 1000u);
    EXPECT_EQ(lent[i]->size(), 1000u);
    for (std::size_t j = 0; j < i; ++j) {
      const std::byte* a0 = lent[i]->data();
      const std::byte* b0 = lent[j]->data();
      const bool disjoint =
          a0 + lent[i]->physical_size() <= b0 || b0 + lent[j]->physical_size() <= a0;
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap";
    }
  }
  EXPECT_EQ(a->lent_bytes_outstanding(), 3000u);
  EXPECT_TRUE(a->lend_store_buffers({}, layout).empty());
}

TEST(MockL2AdapterLend, ZeroByteLayoutStillGivesDistinctBuffers) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(1), key(2)}, bytes_layout(0));
  ASSERT_EQ(lent.size(), 2u);
  EXPECT_NE(lent[0]->data(), lent[1]->data());
  EXPECT_EQ(lent[0]->size(), 0u);
}

TEST(MockL2AdapterLend, LendingMakesNothingVisible) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(7)}, bytes_layout(64));
  ASSERT_EQ(lent.size(), 1u);
  fill(lent[0], 0x42);
  EXPECT_FALSE(a->has_key(key(7)));
  EXPECT_FALSE(lookup_hits(*a, key(7)));
  EXPECT_FALSE(load_bytes(*a, key(7), 64).has_value());
  EXPECT_EQ(a->get_usage().total_bytes_used, 0u);
}

// The store keeps the lent buffer itself: a write into it after the store completed (which
// the contract forbids a caller) shows through a load, which a copy would not.
TEST(MockL2AdapterLend, StoreAdoptsTheLentBufferInsteadOfCopying) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(256));
  ASSERT_EQ(lent.size(), 1u);
  fill(lent[0], 0x11);
  lent[0]->set_used_size(200);  // narrowed: the store keeps size() bytes
  const L2StoreResult r = wait_store(*a, a->submit_store_task({key(1)}, lent));
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 200u);
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  EXPECT_EQ(a->stored_size(key(1)), 200u);
  EXPECT_EQ(a->get_usage().total_bytes_used, 200u);
  auto got = load_bytes(*a, key(1), 256);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::vector<std::uint8_t>(200, 0x11));
  fill(lent[0], 0x22);  // white box only
  got = load_bytes(*a, key(1), 256);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::vector<std::uint8_t>(200, 0x22)) << "the store copied the lent buffer";
}

TEST(MockL2AdapterLend, DroppedBufferGoesBack) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(1), key(2)}, bytes_layout(4096));
  ASSERT_EQ(a->lent_bytes_outstanding(), 8192u);
  lent.pop_back();
  EXPECT_EQ(a->lent_bytes_outstanding(), 4096u);
  lent.clear();
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  EXPECT_EQ(a->stored_object_count(), 0u);
}

TEST(MockL2AdapterLend, SubmittedUnderAnotherKeyIsACopy) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(128));
  ASSERT_EQ(lent.size(), 1u);
  fill(lent[0], 0x33);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(2)}, lent)).is_successful());
  EXPECT_EQ(a->lent_bytes_outstanding(), 128u) << "still lent until the caller drops it";
  fill(lent[0], 0x44);
  auto got = load_bytes(*a, key(2), 128);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::vector<std::uint8_t>(128, 0x33));
  lent.clear();
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
}

TEST(MockL2AdapterLend, PresentKeyIsNotOverwrittenByALentBuffer) {
  auto a = make_adapter();
  auto original = MemoryObj::allocate(bytes_layout(64));
  fill(original, 0x55);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(1)}, {original})).is_successful());
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(64));
  ASSERT_EQ(lent.size(), 1u);
  fill(lent[0], 0x66);
  const L2StoreResult r = wait_store(*a, a->submit_store_task({key(1)}, lent));
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 0u);
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  auto got = load_bytes(*a, key(1), 64);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, std::vector<std::uint8_t>(64, 0x55));
}

TEST(MockL2AdapterLend, FailedStoreOfLentBuffersStoresNothing) {
  auto a = make_adapter(/*capacity=*/4096);
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(2048));
  ASSERT_EQ(lent.size(), 1u);
  fill(lent[0], 0x77);
  // A caller buffer of 3 KiB still fits (lent buffers do not count against stores) ...
  auto big = MemoryObj::allocate(bytes_layout(3072));
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(9)}, {big})).is_successful());
  // ... after which the lent 2 KiB do not: all or nothing.
  EXPECT_FALSE(wait_store(*a, a->submit_store_task({key(1)}, lent)).is_successful());
  EXPECT_FALSE(a->has_key(key(1)));
  EXPECT_FALSE(load_bytes(*a, key(1), 2048).has_value());
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  EXPECT_EQ(a->get_usage().total_bytes_used, 3072u);
}

TEST(MockL2AdapterLend, LendsOnlyWhatCouldStillBeStored) {
  auto a = make_adapter(/*capacity=*/10000);
  EXPECT_TRUE(a->lend_store_buffers({key(1), key(2)}, bytes_layout(6000)).empty());
  auto first = a->lend_store_buffers({key(1)}, bytes_layout(6000));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(a->lend_store_buffers({key(2)}, bytes_layout(6000)).empty())
      << "6000 lent + 6000 more exceed the capacity";
  EXPECT_EQ(a->lent_bytes_outstanding(), 6000u);
  ASSERT_TRUE(wait_store(*a, a->submit_store_task({key(1)}, first)).is_successful());
  EXPECT_TRUE(a->lend_store_buffers({key(2)}, bytes_layout(6000)).empty())
      << "6000 stored + 6000 more exceed the capacity";
  EXPECT_EQ(a->lend_store_buffers({key(2)}, bytes_layout(4000)).size(), 1u);
}

TEST(MockL2AdapterLend, ForwardingAdapterPassesLendingThrough) {
  auto mock = make_adapter();
  MockL2Adapter* raw = mock.get();
  ForwardingL2Adapter forwarding(std::move(mock));
  auto lent = forwarding.lend_store_buffers({key(1)}, bytes_layout(32));
  ASSERT_EQ(lent.size(), 1u);
  EXPECT_EQ(forwarding.lent_bytes_outstanding(), 32u);
  fill(lent[0], 0x12);
  ASSERT_TRUE(wait_store(forwarding, forwarding.submit_store_task({key(1)}, lent)).is_successful());
  EXPECT_EQ(raw->lent_bytes_outstanding(), 0u);
}

TEST(MockL2AdapterLend, DefaultInterfaceLendsNothing) {
  struct Minimal : ForwardingL2Adapter {
    using ForwardingL2Adapter::ForwardingL2Adapter;
  };
  // The base class' defaults, reached through a class that does not override them.
  class NoLend final : public L2AdapterInterface {
   public:
    int get_store_event_fd() const override { return -1; }
    int get_lookup_and_lock_event_fd() const override { return -1; }
    int get_load_event_fd() const override { return -1; }
    TaskId submit_store_task(const std::vector<ObjectKey>&,
                             const std::vector<MemoryObjPtr>&) override {
      return 0;
    }
    std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override { return {}; }
    TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>&) override { return 0; }
    std::optional<Bitmap> query_lookup_and_lock_result(TaskId) override { return std::nullopt; }
    void submit_unlock(const std::vector<ObjectKey>&) override {}
    TaskId submit_load_task(const std::vector<ObjectKey>&,
                            const std::vector<MemoryObjPtr>&) override {
      return 0;
    }
    std::optional<Bitmap> query_load_result(TaskId) override { return std::nullopt; }
    void delete_keys(const std::vector<ObjectKey>&) override {}
    AdapterUsage get_usage() const override { return {}; }
    bool supports_global_eviction() const override { return false; }
    void register_listener(std::shared_ptr<L2AdapterListener>) override {}
    Json report_status() const override { return Json{{"is_healthy", true}}; }
    void close() override {}
  };
  NoLend plain;
  EXPECT_TRUE(plain.lend_store_buffers({key(1)}, bytes_layout(8)).empty());
  EXPECT_EQ(plain.lent_bytes_outstanding(), 0u);
  Minimal forwarding(std::make_unique<NoLend>());
  EXPECT_TRUE(forwarding.lend_store_buffers({key(1)}, bytes_layout(8)).empty());
}

TEST(MockL2AdapterLend, LendAfterCloseThrowsAndBuffersOutliveTheAdapter) {
  auto a = make_adapter();
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(512));
  ASSERT_EQ(lent.size(), 1u);
  a->close();
  EXPECT_THROW(a->lend_store_buffers({key(2)}, bytes_layout(8)), std::logic_error);
  EXPECT_EQ(a->lent_bytes_outstanding(), 512u);
  a.reset();
  fill(lent[0], 0x01);  // still the caller's memory
  lent.clear();         // goes back to a ledger that outlived the adapter
}

// Closing with a store of lent buffers still scheduled drops it and frees the buffers.
TEST(MockL2AdapterLend, CloseWithAdoptedBuffersInFlightFreesThem) {
  auto a = std::make_unique<MockL2Adapter>(
      MockL2AdapterOptions{.max_capacity_bytes = 1 << 20, .bandwidth_bytes_per_sec = 1});
  auto lent = a->lend_store_buffers({key(1)}, bytes_layout(64));
  ASSERT_EQ(lent.size(), 1u);
  std::weak_ptr<MemoryObj> watch = lent[0];
  a->submit_store_task({key(1)}, lent);  // 64 s at 1 B/s: still pending at close()
  lent.clear();
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  a->close();
  a.reset();
  EXPECT_TRUE(watch.expired());
}

// Threads lending, writing, storing and dropping at once (the TSan subset runs this).
TEST(MockL2AdapterLendConcurrency, LendStoreAndDropFromManyThreads) {
  auto a = make_adapter(/*capacity=*/64 << 20);
  std::atomic<std::size_t> submitted{0};
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0; i < 25; ++i) {
        const ObjectKey k = key(1000 * (t + 1) + i);
        auto lent = a->lend_store_buffers({k}, bytes_layout(1024));
        ASSERT_EQ(lent.size(), 1u);
        fill(lent[0], static_cast<std::uint8_t>(t + 1));
        if (i % 3 == 0) continue;  // dropped unsubmitted
        a->submit_store_task({k}, lent);
        submitted.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  // One popper: every store completes, successfully (the capacity is ample).
  std::size_t ok = 0, done = 0;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (done < submitted.load() && std::chrono::steady_clock::now() < deadline) {
    for (auto& [id, r] : a->pop_completed_store_tasks()) {
      ++done;
      ok += r.is_successful() ? 1 : 0;
    }
    if (wait_readable(a->get_store_event_fd(), kPoll)) consume_fd(a->get_store_event_fd());
  }
  EXPECT_EQ(done, submitted.load());
  EXPECT_EQ(ok, submitted.load());
  EXPECT_EQ(a->lent_bytes_outstanding(), 0u);
  EXPECT_EQ(a->stored_object_count(), ok);
  EXPECT_EQ(a->get_usage().total_bytes_used, 1024u * ok);
}

}  // namespace
}  // namespace lmcache
