// Ports the cases of LMCache's Python L1Manager tests and adds what docs/l1.md settles beyond
// them: exact usage accounting, batch atomicity,
// repeated keys, close semantics and real assertions in the concurrency tests.
#include "lmcache/l1/l1_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <latch>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lmcache {

// Reaches the one state the public API cannot produce: write-locked and read-locked at once
// (the Python tests poke `state.read_lock.lock()` for the same purpose).
class L1ManagerTestPeer {
 public:
  static void add_read_lock(L1Manager& manager, const ObjectKey& key) {
    std::lock_guard lock(manager.mu_);
    ++manager.objects_.at(key).read_count;
  }
  static void remove_read_lock(L1Manager& manager, const ObjectKey& key) {
    std::lock_guard lock(manager.mu_);
    --manager.objects_.at(key).read_count;
  }
};

namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kBasicCapacity = 128 * kMiB;
constexpr std::size_t kSmallCapacity = 64 * kMiB;

ObjectKey make_key(std::uint32_t hash) {
  return ObjectKey(int_hash_to_bytes(hash), "test_model", 0);
}

std::vector<ObjectKey> make_keys(std::uint32_t first, std::size_t n) {
  std::vector<ObjectKey> keys;
  for (std::size_t i = 0; i < n; ++i)
    keys.push_back(make_key(first + static_cast<std::uint32_t>(i)));
  return keys;
}

// As the Python fixtures: [100, 2, 512] bfloat16 (200 KiB) and [2048, 1024] float32 (8 MiB).
MemoryLayoutDesc basic_layout() {
  return MemoryLayoutDesc::single({100, 2, 512}, DType::kBFloat16);
}
MemoryLayoutDesc large_layout() { return MemoryLayoutDesc::single({2048, 1024}, DType::kFloat32); }
MemoryLayoutDesc tiny_layout() { return MemoryLayoutDesc::single({256}, DType::kUInt8); }

const std::size_t kBasicBytes = basic_layout().total_bytes();

bool all_zero(const MemoryObj& obj) {
  auto bytes = obj.bytes();
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

// Expects one result per key, result i with error want[i] and, as L1Result promises, an object
// exactly where it succeeded.
void expect_outcomes(const std::vector<L1Result>& got, const std::vector<L1Error>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].error, want[i]) << "key " << i;
    EXPECT_EQ(got[i].obj != nullptr, want[i] == L1Error::kSuccess) << "key " << i;
  }
}

// Runs body(t) on `n` threads, t = 0 .. n-1, released together by a latch so that they contend
// from their first call; returns once every thread has finished.
template <typename Body>
void run_together(int n, Body body) {
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      body(t);
    });
  }
  for (auto& th : threads) th.join();
}

class L1ManagerTest : public ::testing::Test {
 protected:
  L1Manager manager_{kBasicCapacity};

  // Creates `key` write-locked and returns its object.
  MemoryObjPtr write_locked(const ObjectKey& key, bool temporary = false) {
    auto r = manager_.reserve_write({key}, {temporary}, basic_layout());
    EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
    return r.at(0).obj;
  }
  // Creates `key` ready (written, unlocked).
  MemoryObjPtr ready(const ObjectKey& key, bool temporary = false) {
    auto obj = write_locked(key, temporary);
    EXPECT_EQ(manager_.finish_write({key}).at(0), L1Error::kSuccess);
    return obj;
  }
  L1ObjectState state(const ObjectKey& key) {
    auto s = manager_.object_state(key);
    EXPECT_TRUE(s.has_value());
    return s.value_or(L1ObjectState{});
  }
  std::size_t used() { return manager_.get_memory_usage().used_bytes; }
};

// --- L1Error ---------------------------------------------------------------------------------

TEST(L1Error, NamesMatchThePythonEnum) {
  EXPECT_EQ(l1_error_name(L1Error::kSuccess), "SUCCESS");
  EXPECT_EQ(l1_error_name(L1Error::kKeyNotExist), "KEY_NOT_EXIST");
  EXPECT_EQ(l1_error_name(L1Error::kKeyNotReadable), "KEY_NOT_READABLE");
  EXPECT_EQ(l1_error_name(L1Error::kKeyNotWritable), "KEY_NOT_WRITABLE");
  EXPECT_EQ(l1_error_name(L1Error::kKeyInWrongState), "KEY_IN_WRONG_STATE");
  EXPECT_EQ(l1_error_name(L1Error::kKeyIsLocked), "KEY_IS_LOCKED");
  EXPECT_EQ(l1_error_name(L1Error::kOutOfMemory), "OUT_OF_MEMORY");
}

TEST(L1Error, StrerrorGivesOneDistinctSentencePerCode) {
  const L1Error all[] = {L1Error::kSuccess,         L1Error::kKeyNotExist,
                         L1Error::kKeyNotReadable,  L1Error::kKeyNotWritable,
                         L1Error::kKeyInWrongState, L1Error::kKeyIsLocked,
                         L1Error::kOutOfMemory};
  std::set<std::string_view> seen;
  for (L1Error e : all) {
    std::string_view s = l1_strerror(e);
    ASSERT_FALSE(s.empty()) << l1_error_name(e);
    EXPECT_EQ(s.back(), '.') << s;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), std::size(all));
}

// --- The operation x state matrix ----------------------------------------------------------------
//
// One row per (start state, operation) of a single key: what the call returns, and the key's
// state and the used bytes after it. Multi-key batches, repeated keys and lifecycles follow
// the table as their own tests.

enum class Start {
  kMissing,
  kReady,
  kWriteLocked,
  kReadLocked,           // ready, then one reserve_read
  kReadyTemporary,       // a temporary, written and unlocked
  kReadLockedTemporary,  // a temporary, written, then one reserve_read
  kWriteAndReadLocked,   // write-locked with a read lock too (only L1ManagerTestPeer makes it)
};

enum class Op {
  kReserveRead,
  kUnsafeRead,
  kFinishRead,
  kReserveWriteAll,
  kReserveWriteUpdate,
  kReserveWriteNew,
  kFinishWrite,
  kFinishWriteAndReserveRead,
  kDelete,
  kObjectState,
};

// The key's state after the call; `exists == false` means gone (and its bytes freed).
struct After {
  bool exists = true;
  bool write_locked = false;
  int read_count = 0;
};
constexpr After kGone{false, false, 0};

struct MatrixCase {
  Start start;
  Op op;
  L1Error error;  // ignored for kObjectState
  After after;
  const char* why = "";
};

const char* start_name(Start s) {
  switch (s) {
    case Start::kMissing:
      return "Missing";
    case Start::kReady:
      return "Ready";
    case Start::kWriteLocked:
      return "WriteLocked";
    case Start::kReadLocked:
      return "ReadLocked";
    case Start::kReadyTemporary:
      return "ReadyTemporary";
    case Start::kReadLockedTemporary:
      return "ReadLockedTemporary";
    case Start::kWriteAndReadLocked:
      return "WriteAndReadLocked";
  }
  return "?";
}

const char* op_name(Op op) {
  switch (op) {
    case Op::kReserveRead:
      return "ReserveRead";
    case Op::kUnsafeRead:
      return "UnsafeRead";
    case Op::kFinishRead:
      return "FinishRead";
    case Op::kReserveWriteAll:
      return "ReserveWriteAll";
    case Op::kReserveWriteUpdate:
      return "ReserveWriteUpdate";
    case Op::kReserveWriteNew:
      return "ReserveWriteNew";
    case Op::kFinishWrite:
      return "FinishWrite";
    case Op::kFinishWriteAndReserveRead:
      return "FinishWriteAndReserveRead";
    case Op::kDelete:
      return "Delete";
    case Op::kObjectState:
      return "ObjectState";
  }
  return "?";
}

bool is_temporary_start(Start s) {
  return s == Start::kReadyTemporary || s == Start::kReadLockedTemporary;
}

using E = L1Error;
const MatrixCase kMatrix[] = {
    // reserve_read
    {Start::kMissing, Op::kReserveRead, E::kKeyNotExist, kGone},
    {Start::kWriteLocked,
     Op::kReserveRead,
     E::kKeyNotReadable,
     {true, true, 0},
     "a refused read takes no lock"},
    {Start::kReady, Op::kReserveRead, E::kSuccess, {true, false, 1}},
    // unsafe_read: only a read-locked object is readable, and it takes no lock
    {Start::kMissing, Op::kUnsafeRead, E::kKeyNotExist, kGone},
    {Start::kReady, Op::kUnsafeRead, E::kKeyNotReadable, {true, false, 0}},
    {Start::kWriteLocked, Op::kUnsafeRead, E::kKeyNotReadable, {true, true, 0}},
    {Start::kReadLocked, Op::kUnsafeRead, E::kSuccess, {true, false, 1}},
    // finish_read
    {Start::kMissing, Op::kFinishRead, E::kKeyNotExist, kGone},
    {Start::kReadLocked,
     Op::kFinishRead,
     E::kSuccess,
     {true, false, 0},
     "a non-temporary object stays"},
    {Start::kReady,
     Op::kFinishRead,
     E::kKeyInWrongState,
     {true, false, 0},
     "the count never goes below zero"},
    {Start::kWriteLocked, Op::kFinishRead, E::kKeyInWrongState, {true, true, 0}},
    {Start::kReadLockedTemporary, Op::kFinishRead, E::kSuccess, kGone,
     "the temporary's bytes are freed with it"},
    // reserve_write of an existing key
    {Start::kWriteLocked,
     Op::kReserveWriteAll,
     E::kKeyNotWritable,
     {true, true, 0},
     "nothing new was allocated"},
    {Start::kReadLocked, Op::kReserveWriteAll, E::kKeyNotWritable, {true, false, 1}},
    {Start::kReadyTemporary, Op::kReserveWriteAll, E::kKeyNotWritable, {true, false, 0}},
    {Start::kReadyTemporary, Op::kReserveWriteUpdate, E::kKeyNotWritable, {true, false, 0}},
    {Start::kReadyTemporary, Op::kReserveWriteNew, E::kKeyNotWritable, {true, false, 0}},
    // finish_write
    {Start::kMissing, Op::kFinishWrite, E::kKeyNotExist, kGone},
    {Start::kWriteLocked, Op::kFinishWrite, E::kSuccess, {true, false, 0}},
    {Start::kReady, Op::kFinishWrite, E::kKeyInWrongState, {true, false, 0}},
    {Start::kWriteAndReadLocked,
     Op::kFinishWrite,
     E::kKeyInWrongState,
     {true, true, 1},
     "a refused finish changes nothing"},
    // finish_write_and_reserve_read
    {Start::kMissing, Op::kFinishWriteAndReserveRead, E::kKeyNotExist, kGone},
    {Start::kReady, Op::kFinishWriteAndReserveRead, E::kKeyInWrongState, {true, false, 0}},
    {Start::kWriteAndReadLocked,
     Op::kFinishWriteAndReserveRead,
     E::kKeyInWrongState,
     {true, true, 1}},
    // delete
    {Start::kMissing, Op::kDelete, E::kKeyNotExist, kGone},
    {Start::kReady, Op::kDelete, E::kSuccess, kGone, "deleting frees the bytes"},
    {Start::kWriteLocked, Op::kDelete, E::kKeyIsLocked, {true, true, 0}},
    {Start::kReadLocked, Op::kDelete, E::kKeyIsLocked, {true, false, 1}},
    // object_state (the state checks below are the whole test)
    {Start::kMissing, Op::kObjectState, E::kSuccess, kGone},
    {Start::kReady, Op::kObjectState, E::kSuccess, {true, false, 0}},
    {Start::kWriteLocked, Op::kObjectState, E::kSuccess, {true, true, 0}},
    {Start::kReadLocked, Op::kObjectState, E::kSuccess, {true, false, 1}},
    {Start::kReadyTemporary,
     Op::kObjectState,
     E::kSuccess,
     {true, false, 0},
     "temporaries are never writable again"},
};

class L1ManagerMatrix : public L1ManagerTest, public ::testing::WithParamInterface<MatrixCase> {
 protected:
  // Puts `key` in `start`; returns its object (null when missing).
  MemoryObjPtr enter(const ObjectKey& key, Start start) {
    switch (start) {
      case Start::kMissing:
        return nullptr;
      case Start::kReady:
        return ready(key);
      case Start::kWriteLocked:
        return write_locked(key);
      case Start::kReadLocked: {
        auto obj = ready(key);
        EXPECT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
        return obj;
      }
      case Start::kReadyTemporary:
        return ready(key, /*temporary=*/true);
      case Start::kReadLockedTemporary: {
        auto obj = ready(key, /*temporary=*/true);
        EXPECT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
        return obj;
      }
      case Start::kWriteAndReadLocked: {
        auto obj = write_locked(key);
        L1ManagerTestPeer::add_read_lock(manager_, key);
        return obj;
      }
    }
    return nullptr;
  }

  // Runs `op` on `key` alone; returns its error and (for the L1Result calls) object.
  L1Result run(Op op, const ObjectKey& key) {
    auto one = [](auto results) {
      EXPECT_EQ(results.size(), 1u);
      return results.at(0);
    };
    switch (op) {
      case Op::kReserveRead:
        return one(manager_.reserve_read({key}));
      case Op::kUnsafeRead:
        return one(manager_.unsafe_read({key}));
      case Op::kFinishRead:
        return {one(manager_.finish_read({key})), nullptr};
      case Op::kReserveWriteAll:
        return one(manager_.reserve_write({key}, {false}, basic_layout(), ReserveMode::kAll));
      case Op::kReserveWriteUpdate:
        return one(manager_.reserve_write({key}, {false}, basic_layout(), ReserveMode::kUpdate));
      case Op::kReserveWriteNew:
        return one(manager_.reserve_write({key}, {false}, basic_layout(), ReserveMode::kNew));
      case Op::kFinishWrite:
        return {one(manager_.finish_write({key})), nullptr};
      case Op::kFinishWriteAndReserveRead:
        return one(manager_.finish_write_and_reserve_read({key}));
      case Op::kDelete:
        return {one(manager_.delete_keys({key})), nullptr};
      case Op::kObjectState:
        return {L1Error::kSuccess, nullptr};
    }
    return {};
  }
};

bool returns_object(Op op) {
  return op == Op::kReserveRead || op == Op::kUnsafeRead || op == Op::kReserveWriteAll ||
         op == Op::kReserveWriteUpdate || op == Op::kReserveWriteNew ||
         op == Op::kFinishWriteAndReserveRead;
}

TEST_P(L1ManagerMatrix, ResultAndStateAfter) {
  const MatrixCase& c = GetParam();
  const ObjectKey key = make_key(12345);
  const MemoryObjPtr obj = enter(key, c.start);
  ASSERT_EQ(manager_.object_state(key).has_value(), c.start != Start::kMissing);
  ASSERT_EQ(used(), c.start == Start::kMissing ? 0u : kBasicBytes);

  const L1Result r = run(c.op, key);
  if (c.op != Op::kObjectState) {
    EXPECT_EQ(r.error, c.error) << c.why;
  }
  if (returns_object(c.op)) {
    if (c.error == L1Error::kSuccess) {
      ASSERT_NE(r.obj, nullptr);
      EXPECT_EQ(r.obj, obj) << "the key's own object";
      EXPECT_EQ(r.obj->size(), kBasicBytes);
    } else {
      EXPECT_EQ(r.obj, nullptr) << "a refused call hands out no object";
    }
  }

  const std::optional<L1ObjectState> s = manager_.object_state(key);
  ASSERT_EQ(s.has_value(), c.after.exists) << c.why;
  EXPECT_EQ(used(), c.after.exists ? kBasicBytes : 0u) << c.why;
  if (s) {
    EXPECT_EQ(s->write_locked, c.after.write_locked) << c.why;
    EXPECT_EQ(s->read_count, c.after.read_count) << c.why;
    EXPECT_EQ(s->is_temporary, is_temporary_start(c.start));
    EXPECT_EQ(s->size, kBasicBytes);
    EXPECT_EQ(s->available_for_read(), !c.after.write_locked);
    EXPECT_EQ(s->available_for_write(),
              !c.after.write_locked && c.after.read_count == 0 && !is_temporary_start(c.start))
        << c.why;
  }
  if (c.start == Start::kWriteAndReadLocked) {
    // Without the peer's read lock the same finish goes through.
    L1ManagerTestPeer::remove_read_lock(manager_, key);
    EXPECT_EQ(manager_.finish_write({key}).at(0), L1Error::kSuccess);
  }
}

INSTANTIATE_TEST_SUITE_P(SingleKey, L1ManagerMatrix, ::testing::ValuesIn(kMatrix),
                         [](const ::testing::TestParamInfo<MatrixCase>& info) {
                           return std::string(start_name(info.param.start)) + "_" +
                                  op_name(info.param.op);
                         });

// --- reserve_read --------------------------------------------------------------------------------

TEST_F(L1ManagerTest, ReserveReadMultipleKeysResultsAlignWithInput) {
  auto k1 = make_key(1), k2 = make_key(2), k3 = make_key(3);
  ready(k1);
  write_locked(k3);
  auto r = manager_.reserve_read({k1, k2, k3});
  expect_outcomes(r, {L1Error::kSuccess, L1Error::kKeyNotExist, L1Error::kKeyNotReadable});
}

TEST_F(L1ManagerTest, ReserveReadCanBeCalledMultipleTimes) {
  auto key = make_key(12345);
  ready(key);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
  auto s = state(key);
  EXPECT_EQ(s.read_count, 3);
  EXPECT_TRUE(s.available_for_read()) << "read-locked is still readable";
  EXPECT_FALSE(s.available_for_write());
}

TEST_F(L1ManagerTest, ReserveReadRepeatedKeyInOneBatchTakesTwoLocks) {
  auto key = make_key(7);
  ready(key);
  auto r = manager_.reserve_read({key, key});
  EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(1).error, L1Error::kSuccess);
  EXPECT_EQ(state(key).read_count, 2);
}

// --- unsafe_read ---------------------------------------------------------------------------------

TEST_F(L1ManagerTest, UnsafeReadReturnsTheSameObjectAsReserveRead) {
  auto key = make_key(12345);
  ready(key);
  auto reserved = manager_.reserve_read({key}).at(0);
  ASSERT_EQ(reserved.error, L1Error::kSuccess);
  auto unsafe = manager_.unsafe_read({key}).at(0);
  ASSERT_EQ(unsafe.error, L1Error::kSuccess);
  EXPECT_EQ(unsafe.obj.get(), reserved.obj.get());
}

TEST_F(L1ManagerTest, UnsafeReadMultipleTimesDoesNotAddReadCount) {
  auto key = make_key(12345);
  ready(key, /*temporary=*/true);
  manager_.reserve_read({key});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(manager_.unsafe_read({key}).at(0).error, L1Error::kSuccess);
  EXPECT_EQ(state(key).read_count, 1);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_FALSE(manager_.object_state(key).has_value()) << "only one read lock was held, not 6";
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, UnsafeReadMultipleKeys) {
  auto k1 = make_key(1), k2 = make_key(2), k3 = make_key(3);
  ready(k1);
  manager_.reserve_read({k1});
  ready(k3);
  auto r = manager_.unsafe_read({k1, k2, k3});
  expect_outcomes(r, {L1Error::kSuccess, L1Error::kKeyNotExist, L1Error::kKeyNotReadable});
}

TEST_F(L1ManagerTest, UnsafeReadBetweenReserveAndFinish) {
  auto key = make_key(12345);
  ready(key);
  ASSERT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
  auto r = manager_.unsafe_read({key}).at(0);
  EXPECT_EQ(r.error, L1Error::kSuccess);
  EXPECT_NE(r.obj, nullptr);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(manager_.unsafe_read({key}).at(0).error, L1Error::kKeyNotReadable);
}

// --- finish_read ---------------------------------------------------------------------------------

TEST_F(L1ManagerTest, FinishReadMultipleReadsCountDown) {
  auto key = make_key(12345);
  ready(key, /*temporary=*/true);
  for (int i = 0; i < 3; ++i) manager_.reserve_read({key});
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  ASSERT_TRUE(manager_.object_state(key).has_value()) << "one reader is left";
  EXPECT_EQ(state(key).read_count, 1);
  EXPECT_EQ(used(), kBasicBytes);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_FALSE(manager_.object_state(key).has_value());
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, FinishReadRepeatedKeyDeletesThenReportsMissing) {
  auto key = make_key(9);
  ready(key, /*temporary=*/true);
  manager_.reserve_read({key});
  auto r = manager_.finish_read({key, key});
  EXPECT_EQ(r.at(0), L1Error::kSuccess);
  EXPECT_EQ(r.at(1), L1Error::kKeyNotExist) << "the first occurrence deleted the temporary";
  EXPECT_EQ(used(), 0u);
}

// --- reserve_write -------------------------------------------------------------------------------

TEST_F(L1ManagerTest, ReserveWriteNewKeySucceeds) {
  auto key = make_key(12345);
  auto r = manager_.reserve_write({key}, {false}, basic_layout());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].error, L1Error::kSuccess);
  ASSERT_NE(r[0].obj, nullptr);
  EXPECT_EQ(r[0].obj->layout(), basic_layout());
  EXPECT_TRUE(all_zero(*r[0].obj));
  auto s = state(key);
  EXPECT_TRUE(s.write_locked);
  EXPECT_EQ(s.read_count, 0);
  EXPECT_FALSE(s.is_temporary);
  EXPECT_EQ(s.size, kBasicBytes);
  EXPECT_EQ(used(), kBasicBytes);
}

// Buffers are recycled through the process HostBufferPool: a kept object must still come back
// zero-filled even when its buffer held another object's bytes.
TEST_F(L1ManagerTest, ReserveWriteZeroFillsARecycledBuffer) {
  auto first = make_key(1);
  {
    MemoryObjPtr obj = write_locked(first);
    std::ranges::fill(obj->bytes(), std::byte{0xAB});
  }
  ASSERT_EQ(manager_.finish_write({first}).at(0), L1Error::kSuccess);
  ASSERT_EQ(manager_.delete_keys({first}).at(0), L1Error::kSuccess);
  for (bool mixed_with_temporary : {false, true}) {
    auto keys = make_keys(10 + (mixed_with_temporary ? 10 : 0), 2);
    auto r = manager_.reserve_write(keys, {false, mixed_with_temporary}, basic_layout());
    for (const auto& result : r) {
      ASSERT_EQ(result.error, L1Error::kSuccess);
      EXPECT_TRUE(all_zero(*result.obj)) << "mixed_with_temporary=" << mixed_with_temporary;
      std::ranges::fill(result.obj->bytes(), std::byte{0xAB});
    }
    manager_.finish_write(keys);
    manager_.delete_keys(keys);
  }
}

// Temporaries are scratch space their writer overwrites: a batch of only temporaries skips the
// zero fill (a memset of every temp on the wrapper's hot path), so a recycled buffer keeps its
// old bytes.
TEST_F(L1ManagerTest, ReserveWriteOfTemporariesSkipsTheZeroFill) {
  if (HostBufferPool::process_default().max_cached_bytes() < 2 * kBasicBytes) {
    GTEST_SKIP() << "the process HostBufferPool keeps no buffers (LMCACHE_HOST_POOL_BYTES)";
  }
  auto key = make_key(1);
  {
    MemoryObjPtr obj = write_locked(key, /*temporary=*/true);
    std::ranges::fill(obj->bytes(), std::byte{0xAB});
  }
  ASSERT_EQ(manager_.finish_write_and_reserve_read({key}).at(0).error, L1Error::kSuccess);
  ASSERT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);  // deletes the temporary
  ASSERT_FALSE(manager_.object_state(key).has_value());
  MemoryObjPtr again = write_locked(make_key(2), /*temporary=*/true);
  EXPECT_EQ(again->bytes()[0], std::byte{0xAB}) << "the temporary was zero-filled";
}

TEST_F(L1ManagerTest, ReserveWriteMultipleKeysGivesDistinctObjects) {
  auto keys = make_keys(0, 5);
  auto r = manager_.reserve_write(keys, std::vector<bool>(5, false), basic_layout());
  ASSERT_EQ(r.size(), 5u);
  std::set<MemoryObj*> objs;
  for (const auto& res : r) {
    EXPECT_EQ(res.error, L1Error::kSuccess);
    ASSERT_NE(res.obj, nullptr);
    objs.insert(res.obj.get());
  }
  EXPECT_EQ(objs.size(), 5u);
  EXPECT_EQ(used(), 5 * kBasicBytes);
}

TEST_F(L1ManagerTest, ReserveWriteExistingReadyKeyReturnsItsObjectAndIgnoresLayout) {
  auto key = make_key(4);
  auto original = ready(key);
  original->bytes()[0] = std::byte{42};
  auto r = manager_.reserve_write({key}, {true}, large_layout());
  EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(0).obj, original);
  EXPECT_EQ(r.at(0).obj->layout(), basic_layout()) << "the layout argument is ignored";
  EXPECT_EQ(r.at(0).obj->bytes()[0], std::byte{42}) << "the bytes are kept";
  auto s = state(key);
  EXPECT_TRUE(s.write_locked);
  EXPECT_FALSE(s.is_temporary) << "the is_temporary flag is ignored for an existing key";
  EXPECT_EQ(used(), kBasicBytes);
}

TEST(L1Manager, ReserveWriteOutOfMemoryFailsEveryNewKey) {
  L1Manager manager(kSmallCapacity);
  auto keys = make_keys(0, 10);
  // 10 x 8 MiB = 80 MiB > 64 MiB.
  auto r = manager.reserve_write(keys, std::vector<bool>(10, false), large_layout());
  ASSERT_EQ(r.size(), 10u);
  for (std::size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].error, L1Error::kOutOfMemory) << "key " << i;
    EXPECT_EQ(r[i].obj, nullptr) << "key " << i;
    EXPECT_FALSE(manager.object_state(keys[i]).has_value()) << "key " << i;
  }
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u) << "nothing stays allocated";

  // Eight fit exactly (usage counts layout bytes); then not one more.
  std::vector<ObjectKey> eight(keys.begin(), keys.begin() + 8);
  for (const auto& res :
       manager.reserve_write(eight, std::vector<bool>(8, false), large_layout())) {
    EXPECT_EQ(res.error, L1Error::kSuccess);
  }
  EXPECT_EQ(manager.get_memory_usage().used_bytes, kSmallCapacity);
  auto more = manager.reserve_write({keys[8]}, {false}, large_layout());
  EXPECT_EQ(more.at(0).error, L1Error::kOutOfMemory);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, kSmallCapacity);
}

TEST(L1Manager, ReserveWriteOutOfMemoryLeavesExistingKeysOfTheBatchAlone) {
  L1Manager manager(3 * 1024);
  auto layout = MemoryLayoutDesc::single({1024}, DType::kUInt8);
  auto existing = make_key(100);
  ASSERT_EQ(manager.reserve_write({existing}, {false}, layout).at(0).error, L1Error::kSuccess);
  ASSERT_EQ(manager.finish_write({existing}).at(0), L1Error::kSuccess);
  auto a = make_key(1), b = make_key(2), c = make_key(3);  // Three new, room for two.
  auto r = manager.reserve_write({a, existing, b, c}, {false, false, false, false}, layout);
  EXPECT_EQ(r.at(0).error, L1Error::kOutOfMemory);
  EXPECT_EQ(r.at(1).error, L1Error::kSuccess) << "an existing key does not need memory";
  EXPECT_NE(r.at(1).obj, nullptr);
  EXPECT_EQ(r.at(2).error, L1Error::kOutOfMemory);
  EXPECT_EQ(r.at(3).error, L1Error::kOutOfMemory);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 1024u);
  EXPECT_TRUE(manager.object_state(existing)->write_locked);
}

TEST_F(L1ManagerTest, ReserveWriteNewMode) {
  auto keys = make_keys(0, 5);
  const std::vector<bool> flags(5, false);
  for (const auto& res : manager_.reserve_write(keys, flags, basic_layout(), ReserveMode::kNew)) {
    EXPECT_EQ(res.error, L1Error::kSuccess);
    EXPECT_NE(res.obj, nullptr);
  }
  for (L1Error e : manager_.finish_write(keys)) EXPECT_EQ(e, L1Error::kSuccess);
  for (const auto& res : manager_.reserve_write(keys, flags, basic_layout(), ReserveMode::kNew)) {
    EXPECT_EQ(res.error, L1Error::kKeyNotWritable);
    EXPECT_EQ(res.obj, nullptr);
  }
  EXPECT_FALSE(state(keys[0]).write_locked) << "a refused reservation takes no lock";
  EXPECT_EQ(used(), 5 * kBasicBytes);
}

TEST_F(L1ManagerTest, ReserveWriteUpdateMode) {
  auto keys = make_keys(0, 5);
  const std::vector<bool> flags(5, false);
  for (const auto& res :
       manager_.reserve_write(keys, flags, basic_layout(), ReserveMode::kUpdate)) {
    EXPECT_EQ(res.error, L1Error::kKeyNotWritable);
    EXPECT_EQ(res.obj, nullptr);
  }
  EXPECT_EQ(used(), 0u);
  for (L1Error e : manager_.finish_write(keys)) EXPECT_EQ(e, L1Error::kKeyNotExist);

  std::vector<MemoryObjPtr> created;
  for (const auto& res : manager_.reserve_write(keys, flags, basic_layout(), ReserveMode::kNew)) {
    EXPECT_EQ(res.error, L1Error::kSuccess);
    created.push_back(res.obj);
  }
  for (L1Error e : manager_.finish_write(keys)) EXPECT_EQ(e, L1Error::kSuccess);

  auto r = manager_.reserve_write(keys, flags, basic_layout(), ReserveMode::kUpdate);
  for (std::size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].error, L1Error::kSuccess);
    EXPECT_EQ(r[i].obj, created[i]) << "update hands back the existing object";
  }
  EXPECT_EQ(used(), 5 * kBasicBytes);
}

TEST_F(L1ManagerTest, ReserveWriteLengthMismatchThrowsNamingBothSizes) {
  auto keys = make_keys(0, 3);
  try {
    manager_.reserve_write(keys, {false, false}, basic_layout());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 keys"), std::string::npos) << what;
    EXPECT_NE(what.find("2 is_temporary"), std::string::npos) << what;
  }
  EXPECT_FALSE(manager_.object_state(keys[0]).has_value());
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, ReserveWriteRecordsTheTemporaryFlagPerKey) {
  auto k1 = make_key(1), k2 = make_key(2);
  manager_.reserve_write({k1, k2}, {true, false}, basic_layout());
  EXPECT_TRUE(state(k1).is_temporary);
  EXPECT_FALSE(state(k2).is_temporary);
}

TEST_F(L1ManagerTest, ReserveWriteEmptyBatchDoesNothing) {
  EXPECT_TRUE(manager_.reserve_write({}, {}, basic_layout()).empty());
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, ReserveWriteRepeatedNewKeyIsAllocatedOnce) {
  auto key = make_key(5), other = make_key(6);
  auto r = manager_.reserve_write({key, other, key}, {true, false, false}, basic_layout());
  EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(1).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(2).error, L1Error::kKeyNotWritable) << "the first occurrence write-locked it";
  EXPECT_EQ(r.at(2).obj, nullptr);
  EXPECT_TRUE(state(key).is_temporary) << "the first occurrence's flag wins";
  EXPECT_EQ(used(), 2 * kBasicBytes);
}

TEST_F(L1ManagerTest, ReserveWriteRepeatedExistingKeyIsLockedOnce) {
  auto key = make_key(5);
  auto obj = ready(key);
  auto r = manager_.reserve_write({key, key}, {false, false}, basic_layout());
  EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(0).obj, obj);
  EXPECT_EQ(r.at(1).error, L1Error::kKeyNotWritable);
}

TEST(L1Manager, ReserveWriteRepeatedNewKeyInAFailedBatchIsOutOfMemory) {
  L1Manager manager(1024);
  auto layout = MemoryLayoutDesc::single({1024}, DType::kUInt8);
  auto a = make_key(1), b = make_key(2);
  auto r = manager.reserve_write({a, b, a}, {false, false, false}, layout);
  EXPECT_EQ(r.at(0).error, L1Error::kOutOfMemory);
  EXPECT_EQ(r.at(1).error, L1Error::kOutOfMemory);
  EXPECT_EQ(r.at(2).error, L1Error::kOutOfMemory);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u);
  // Alone, the repeated key needs one buffer, which fits.
  auto single = manager.reserve_write({a, a}, {false, false}, layout);
  EXPECT_EQ(single.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(single.at(1).error, L1Error::kKeyNotWritable);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 1024u);
}

TEST(L1Manager, ZeroByteLayoutWorksEvenWithZeroCapacity) {
  L1Manager manager(0);
  auto key = make_key(1);
  auto r = manager.reserve_write({key}, {false}, MemoryLayoutDesc());
  ASSERT_EQ(r.at(0).error, L1Error::kSuccess);
  ASSERT_NE(r.at(0).obj, nullptr);
  EXPECT_EQ(r.at(0).obj->size(), 0u);
  EXPECT_EQ(manager.object_state(key)->size, 0u);
  EXPECT_EQ(manager.finish_write({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(manager.reserve_read({key}).at(0).error, L1Error::kSuccess);
  EXPECT_EQ(manager.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(manager.delete_keys({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u);
}

TEST(L1Manager, SystemAllocationFailureIsOutOfMemoryForTheWholeBatch) {
  std::atomic<int> calls{0};
  L1Manager manager(kBasicCapacity, [&](const MemoryLayoutDesc& layout) -> MemoryObjPtr {
    if (calls.fetch_add(1) == 1) throw std::bad_alloc();  // The second buffer fails.
    return MemoryObj::allocate(layout);
  });
  auto keys = make_keys(0, 3);
  auto r = manager.reserve_write(keys, {false, false, false}, basic_layout());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(r.at(i).error, L1Error::kOutOfMemory) << "key " << i;
    EXPECT_FALSE(manager.object_state(keys[i]).has_value()) << "key " << i;
  }
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u);
  for (const auto& res : manager.reserve_write(keys, {false, false, false}, basic_layout())) {
    EXPECT_EQ(res.error, L1Error::kSuccess) << "the factory works again";
  }
}

// --- finish_write_and_reserve_read ---------------------------------------------------------------

TEST_F(L1ManagerTest, FinishWriteAndReserveReadNormalTransition) {
  auto key = make_key(12345);
  auto obj = write_locked(key);
  auto r = manager_.finish_write_and_reserve_read({key});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].error, L1Error::kSuccess);
  EXPECT_EQ(r[0].obj, obj);
  auto s = state(key);
  EXPECT_FALSE(s.write_locked);
  EXPECT_EQ(s.read_count, 1);
  EXPECT_TRUE(s.available_for_read());
  EXPECT_FALSE(s.available_for_write());
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_TRUE(state(key).available_for_write());
}

TEST_F(L1ManagerTest, FinishWriteAndReserveReadMultipleKeysMixed) {
  auto k1 = make_key(1), k2 = make_key(2), k3 = make_key(3);
  write_locked(k1);
  ready(k3);
  auto r = manager_.finish_write_and_reserve_read({k1, k2, k3});
  expect_outcomes(r, {L1Error::kSuccess, L1Error::kKeyNotExist, L1Error::kKeyInWrongState});
  EXPECT_EQ(manager_.finish_read({k1}).at(0), L1Error::kSuccess);
}

TEST_F(L1ManagerTest, FinishWriteAndReserveReadThenUnsafeRead) {
  auto key = make_key(12345);
  auto obj = write_locked(key);
  ASSERT_EQ(manager_.finish_write_and_reserve_read({key}).at(0).error, L1Error::kSuccess);
  auto r = manager_.unsafe_read({key}).at(0);
  EXPECT_EQ(r.error, L1Error::kSuccess);
  EXPECT_EQ(r.obj, obj);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
}

TEST_F(L1ManagerTest, FinishWriteAndReserveReadRepeatedKeyTransitionsOnce) {
  auto key = make_key(3);
  write_locked(key);
  auto r = manager_.finish_write_and_reserve_read({key, key});
  EXPECT_EQ(r.at(0).error, L1Error::kSuccess);
  EXPECT_EQ(r.at(1).error, L1Error::kKeyInWrongState);
  EXPECT_EQ(state(key).read_count, 1);
}

// --- delete --------------------------------------------------------------------------------------

TEST_F(L1ManagerTest, DeleteMultipleKeys) {
  auto k1 = make_key(1), k2 = make_key(2), k3 = make_key(3);
  ready(k1);
  write_locked(k3);
  auto r = manager_.delete_keys({k1, k2, k3});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], L1Error::kSuccess);
  EXPECT_EQ(r[1], L1Error::kKeyNotExist);
  EXPECT_EQ(r[2], L1Error::kKeyIsLocked);
  EXPECT_EQ(used(), kBasicBytes) << "only k3 is left";
}

TEST_F(L1ManagerTest, DeleteRepeatedKeyDeletesOnce) {
  auto key = make_key(1);
  ready(key);
  auto r = manager_.delete_keys({key, key});
  EXPECT_EQ(r.at(0), L1Error::kSuccess);
  EXPECT_EQ(r.at(1), L1Error::kKeyNotExist);
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, DeleteCreditsBytesAtOnceEvenWhileTheCallerHoldsTheObject) {
  auto key = make_key(1);
  MemoryObjPtr held = ready(key);
  EXPECT_EQ(manager_.delete_keys({key}).at(0), L1Error::kSuccess);
  EXPECT_EQ(used(), 0u) << "accounting does not wait for the last shared_ptr";
  held->bytes()[10] = std::byte{9};  // The caller's reference keeps the buffer valid.
  EXPECT_EQ(held->bytes()[10], std::byte{9});
}

// --- close and clear -----------------------------------------------------------------------------

TEST(L1Manager, CloseEmptyManager) {
  L1Manager manager(kBasicCapacity);
  EXPECT_NO_THROW(manager.close());
  EXPECT_THROW(manager.get_memory_usage(), std::logic_error);
}

TEST(L1Manager, CloseDropsEveryObjectEvenLockedOnes) {
  L1Manager manager(kBasicCapacity);
  auto keys = make_keys(0, 5);
  std::vector<std::weak_ptr<MemoryObj>> weak;
  {
    auto r = manager.reserve_write(keys, std::vector<bool>(5, false), basic_layout());
    for (const auto& res : r) {
      ASSERT_EQ(res.error, L1Error::kSuccess);
      weak.push_back(res.obj);
    }
  }
  for (const auto& w : weak) ASSERT_FALSE(w.expired()) << "L1 holds its objects";
  manager.close();
  for (const auto& w : weak) EXPECT_TRUE(w.expired()) << "close() released every object";
}

TEST(L1Manager, CloseClearsObjects) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(12345);
  ASSERT_EQ(manager.reserve_write({key}, {false}, basic_layout()).at(0).error, L1Error::kSuccess);
  ASSERT_EQ(manager.finish_write({key}).at(0), L1Error::kSuccess);
  ASSERT_TRUE(manager.object_state(key).has_value());
  manager.close();
  // Python returns None here; docs/l1.md makes every call after close() a logic_error.
  EXPECT_THROW(manager.object_state(key), std::logic_error);
}

TEST(L1Manager, CloseIsIdempotentAndEveryOtherCallThrowsAfterIt) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(1);
  manager.close();
  EXPECT_NO_THROW(manager.close());
  const std::vector<ObjectKey> keys{key};
  EXPECT_THROW(manager.reserve_write(keys, {false}, basic_layout()), std::logic_error);
  EXPECT_THROW(manager.finish_write(keys), std::logic_error);
  EXPECT_THROW(manager.finish_write_and_reserve_read(keys), std::logic_error);
  EXPECT_THROW(manager.reserve_read(keys), std::logic_error);
  EXPECT_THROW(manager.finish_read(keys), std::logic_error);
  EXPECT_THROW(manager.unsafe_read(keys), std::logic_error);
  EXPECT_THROW(manager.delete_keys(keys), std::logic_error);
  EXPECT_THROW(manager.get_memory_usage(), std::logic_error);
  EXPECT_THROW(manager.object_state(key), std::logic_error);
  EXPECT_THROW(manager.clear(), std::logic_error);
  try {
    manager.reserve_read(keys);
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("reserve_read"), std::string::npos) << e.what();
  }
}

TEST(L1Manager, ObjectsHeldByCallersOutliveClose) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(1);
  auto obj = manager.reserve_write({key}, {false}, basic_layout()).at(0).obj;
  ASSERT_NE(obj, nullptr);
  manager.close();
  obj->bytes()[0] = std::byte{1};
  EXPECT_EQ(obj->bytes()[0], std::byte{1});
}

TEST_F(L1ManagerTest, ClearDropsEverythingAndTheManagerStaysUsable) {
  auto a = make_key(1), b = make_key(2), c = make_key(3);
  write_locked(a);
  ready(b);
  manager_.reserve_read({b});
  ready(c, /*temporary=*/true);
  EXPECT_EQ(used(), 3 * kBasicBytes);
  manager_.clear();
  EXPECT_EQ(used(), 0u);
  for (const auto& k : {a, b, c}) EXPECT_FALSE(manager_.object_state(k).has_value());
  EXPECT_EQ(manager_.reserve_write({a}, {false}, basic_layout()).at(0).error, L1Error::kSuccess);
  EXPECT_EQ(used(), kBasicBytes);
}

// --- memory usage ------------------------------------------------------------------------------

TEST(L1Manager, UsageCountsExactLayoutBytesAndReturnsToBaseline) {
  L1Manager manager(1 * kMiB);
  EXPECT_EQ(manager.get_memory_usage().capacity_bytes, 1 * kMiB);
  auto base_key = make_key(0);
  manager.reserve_write({base_key}, {false}, MemoryLayoutDesc::single({3}, DType::kUInt8));
  const std::size_t baseline = manager.get_memory_usage().used_bytes;
  ASSERT_EQ(baseline, 3u);

  auto odd = MemoryLayoutDesc({{7, 3}, {5}}, {DType::kFloat16, DType::kFloat32});  // 42 + 20
  auto keys = make_keys(10, 4);
  manager.reserve_write(keys, {false, true, false, true}, odd);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, baseline + 4 * 62);
  for (L1Error e : manager.finish_write(keys)) EXPECT_EQ(e, L1Error::kSuccess);
  // Temporaries leave through their last reader, the others through delete.
  manager.reserve_read({keys[1], keys[3]});
  for (L1Error e : manager.finish_read({keys[1], keys[3]})) EXPECT_EQ(e, L1Error::kSuccess);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, baseline + 2 * 62);
  for (L1Error e : manager.delete_keys({keys[0], keys[2]})) EXPECT_EQ(e, L1Error::kSuccess);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, baseline);
}

// --- state machine -------------------------------------------------------------------------------

TEST_F(L1ManagerTest, FullWriteReadCycle) {
  auto key = make_key(12345);
  EXPECT_FALSE(manager_.object_state(key).has_value());

  ASSERT_EQ(manager_.reserve_write({key}, {false}, basic_layout()).at(0).error, L1Error::kSuccess);
  EXPECT_FALSE(state(key).available_for_read());
  EXPECT_FALSE(state(key).available_for_write());

  ASSERT_EQ(manager_.finish_write({key}).at(0), L1Error::kSuccess);
  EXPECT_TRUE(state(key).available_for_read());
  EXPECT_TRUE(state(key).available_for_write());

  ASSERT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
  EXPECT_TRUE(state(key).available_for_read());
  EXPECT_FALSE(state(key).available_for_write());

  ASSERT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_TRUE(state(key).available_for_read());
  EXPECT_TRUE(state(key).available_for_write());
}

TEST_F(L1ManagerTest, FullWriteReadCycleWithUnsafeRead) {
  auto key = make_key(12345);
  ready(key);
  ASSERT_EQ(manager_.reserve_read({key}).at(0).error, L1Error::kSuccess);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(manager_.unsafe_read({key}).at(0).error, L1Error::kSuccess);
  EXPECT_EQ(manager_.finish_read({key}).at(0), L1Error::kSuccess);
  EXPECT_TRUE(manager_.object_state(key).has_value()) << "not temporary";
}

TEST_F(L1ManagerTest, DeleteFromReadyState) {
  auto key = make_key(12345);
  ready(key);
  EXPECT_EQ(manager_.delete_keys({key}).at(0), L1Error::kSuccess);
  EXPECT_FALSE(manager_.object_state(key).has_value());
}

TEST_F(L1ManagerTest, TemporaryObjectLifecycle) {
  auto key = make_key(12345);
  ready(key, /*temporary=*/true);
  manager_.reserve_read({key});
  manager_.finish_read({key});
  EXPECT_FALSE(manager_.object_state(key).has_value());
  EXPECT_EQ(used(), 0u);
}

TEST_F(L1ManagerTest, TemporaryObjectWithUnsafeRead) {
  auto key = make_key(12345);
  ready(key, /*temporary=*/true);
  manager_.reserve_read({key});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(manager_.unsafe_read({key}).at(0).error, L1Error::kSuccess);
  manager_.finish_read({key});
  EXPECT_FALSE(manager_.object_state(key).has_value());
}

// The serde wrapper's store path: temps reserved with mode=new, handed to the serializer through
// finish_write_and_reserve_read, released by finish_read. L1 returns to its baseline.
TEST_F(L1ManagerTest, WrapperStorePathTempsReturnUsageToBaseline) {
  ready(make_key(999));
  const std::size_t baseline = used();
  auto temps = make_keys(100, 4);
  const std::vector<bool> flags(4, true);
  auto layout = MemoryLayoutDesc::single({1536}, DType::kUInt8);
  for (const auto& r : manager_.reserve_write(temps, flags, layout, ReserveMode::kNew)) {
    ASSERT_EQ(r.error, L1Error::kSuccess);
  }
  EXPECT_EQ(used(), baseline + 4 * 1536);
  for (const auto& r : manager_.finish_write_and_reserve_read(temps)) {
    ASSERT_EQ(r.error, L1Error::kSuccess);
  }
  for (L1Error e : manager_.finish_read(temps)) EXPECT_EQ(e, L1Error::kSuccess);
  for (const auto& k : temps) EXPECT_FALSE(manager_.object_state(k).has_value());
  EXPECT_EQ(used(), baseline);
}

// The wrapper's load path: temps released with finish_write + delete.
TEST_F(L1ManagerTest, WrapperLoadPathTempsReleasedByFinishWriteAndDelete) {
  const std::size_t baseline = used();
  auto temps = make_keys(200, 3);
  manager_.reserve_write(temps, {true, true, true}, basic_layout(), ReserveMode::kNew);
  for (L1Error e : manager_.finish_write(temps)) EXPECT_EQ(e, L1Error::kSuccess);
  for (L1Error e : manager_.delete_keys(temps)) EXPECT_EQ(e, L1Error::kSuccess);
  EXPECT_EQ(used(), baseline);
}

// --- concurrency ---------------------------------------------------------------------------------

TEST(L1ManagerConcurrency, ReserveWriteOnDifferentKeys) {
  L1Manager manager(kBasicCapacity);
  constexpr int kThreads = 8, kKeysPerThread = 5;
  std::vector<std::vector<ObjectKey>> keys(kThreads);
  for (int t = 0; t < kThreads; ++t)
    keys[t] = make_keys(static_cast<std::uint32_t>(t * 1000), kKeysPerThread);
  std::vector<std::vector<L1Result>> results(kThreads);
  run_together(kThreads, [&](int t) {
    results[t] =
        manager.reserve_write(keys[t], std::vector<bool>(kKeysPerThread, false), basic_layout());
  });

  std::set<MemoryObj*> objs;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(results[t].size(), static_cast<std::size_t>(kKeysPerThread));
    for (const auto& r : results[t]) {
      EXPECT_EQ(r.error, L1Error::kSuccess);
      objs.insert(r.obj.get());
    }
    for (const auto& k : keys[t]) {
      auto s = manager.object_state(k);
      ASSERT_TRUE(s.has_value()) << "no key lost";
      EXPECT_TRUE(s->write_locked);
    }
  }
  EXPECT_EQ(objs.size(), static_cast<std::size_t>(kThreads * kKeysPerThread));
  EXPECT_EQ(manager.get_memory_usage().used_bytes, kThreads * kKeysPerThread * kBasicBytes);
}

TEST(L1ManagerConcurrency, ReserveReadAndFinishReadOfTheSameKey) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(12345);
  auto obj = manager.reserve_write({key}, {false}, tiny_layout()).at(0).obj;
  ASSERT_EQ(manager.finish_write({key}).at(0), L1Error::kSuccess);
  constexpr int kThreads = 10, kIters = 100;

  std::atomic<int> bad{0};
  auto run = [&](auto op) {
    run_together(kThreads, [&](int) {
      for (int i = 0; i < kIters; ++i) op();
    });
  };
  run([&] {
    auto r = manager.reserve_read({key}).at(0);
    if (r.error != L1Error::kSuccess || r.obj != obj) bad.fetch_add(1);
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(manager.object_state(key)->read_count, kThreads * kIters) << "no lock lost";

  run([&] {
    if (manager.finish_read({key}).at(0) != L1Error::kSuccess) bad.fetch_add(1);
  });
  EXPECT_EQ(bad.load(), 0);
  auto s = manager.object_state(key);
  ASSERT_TRUE(s.has_value()) << "a non-temporary object stays";
  EXPECT_EQ(s->read_count, 0);
  EXPECT_EQ(manager.finish_read({key}).at(0), L1Error::kKeyInWrongState);
}

TEST(L1ManagerConcurrency, UnsafeReadOfTheSameKeyAddsNoLock) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(12345);
  auto obj = manager.reserve_write({key}, {false}, tiny_layout()).at(0).obj;
  manager.finish_write_and_reserve_read({key});
  constexpr int kThreads = 10, kIters = 100;
  std::atomic<int> ok{0};
  run_together(kThreads, [&](int) {
    for (int i = 0; i < kIters; ++i) {
      auto r = manager.unsafe_read({key}).at(0);
      if (r.error == L1Error::kSuccess && r.obj == obj) ok.fetch_add(1);
    }
  });
  EXPECT_EQ(ok.load(), kThreads * kIters);
  EXPECT_EQ(manager.object_state(key)->read_count, 1);
}

TEST(L1ManagerConcurrency, TemporaryIsDeletedExactlyOnceByItsLastReader) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(1);
  constexpr int kThreads = 8, kIters = 100;
  ASSERT_EQ(manager.reserve_write({key}, {true}, tiny_layout()).at(0).error, L1Error::kSuccess);
  ASSERT_EQ(manager.finish_write({key}).at(0), L1Error::kSuccess);
  for (int i = 0; i < kThreads * kIters; ++i) manager.reserve_read({key});

  std::atomic<int> successes{0}, others{0};
  run_together(kThreads, [&](int) {
    for (int i = 0; i < kIters; ++i) {
      (manager.finish_read({key}).at(0) == L1Error::kSuccess ? successes : others).fetch_add(1);
    }
  });
  EXPECT_EQ(successes.load(), kThreads * kIters);
  EXPECT_EQ(others.load(), 0);
  EXPECT_FALSE(manager.object_state(key).has_value());
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u);
}

TEST(L1ManagerConcurrency, OneWinnerWhenManyThreadsReserveTheSameNewKey) {
  L1Manager manager(kBasicCapacity);
  auto key = make_key(77);
  constexpr int kThreads = 8;
  std::atomic<int> winners{0}, refused{0};
  run_together(kThreads, [&](int) {
    auto e = manager.reserve_write({key}, {false}, tiny_layout(), ReserveMode::kNew).at(0).error;
    if (e == L1Error::kSuccess) winners.fetch_add(1);
    if (e == L1Error::kKeyNotWritable) refused.fetch_add(1);
  });
  EXPECT_EQ(winners.load(), 1);
  EXPECT_EQ(refused.load(), kThreads - 1);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, tiny_layout().total_bytes());
}

// Python's mixed-operations test, with every result checked: each thread runs full cycles on
// its own keys (every step must succeed) and contends on shared keys (every result must be one
// the state machine allows). Afterwards nothing is locked and usage is back to its baseline.
TEST(L1ManagerConcurrency, MixedOperations) {
  L1Manager manager(kBasicCapacity);
  const auto shared = make_keys(900000, 3);
  for (const auto& r : manager.reserve_write(shared, {false, false, false}, tiny_layout())) {
    ASSERT_EQ(r.error, L1Error::kSuccess);
  }
  manager.finish_write(shared);
  const std::size_t baseline = manager.get_memory_usage().used_bytes;

  constexpr int kThreads = 8, kIters = 50;
  std::atomic<int> bad{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  auto fail = [&](const std::string& what) {
    bad.fetch_add(1);
    std::lock_guard lock(failures_mu);
    if (failures.size() < 10) failures.push_back(what);
  };
  run_together(kThreads, [&](int t) {
    for (int i = 0; i < kIters; ++i) {
      const auto own = make_key(static_cast<std::uint32_t>(t * 1000 + i));
      const bool temp = (i % 2) == 1;
      if (manager.reserve_write({own}, {temp}, tiny_layout()).at(0).error != L1Error::kSuccess)
        fail("reserve_write own");
      if (manager.finish_write({own}).at(0) != L1Error::kSuccess) fail("finish_write own");
      if (manager.reserve_read({own}).at(0).error != L1Error::kSuccess) fail("reserve_read own");
      for (int u = 0; u < 2; ++u) {
        if (manager.unsafe_read({own}).at(0).error != L1Error::kSuccess) fail("unsafe_read own");
      }
      if (manager.finish_read({own}).at(0) != L1Error::kSuccess) fail("finish_read own");
      // A temporary left with its last reader; a normal object is deleted by hand.
      const L1Error del = manager.delete_keys({own}).at(0);
      if (del != (temp ? L1Error::kKeyNotExist : L1Error::kSuccess)) fail("delete own");

      const ObjectKey& hot = shared[static_cast<std::size_t>(i) % shared.size()];
      auto rr = manager.reserve_read({hot}).at(0);
      if (rr.error == L1Error::kSuccess) {
        if (manager.unsafe_read({hot}).at(0).error != L1Error::kSuccess) fail("unsafe_read hot");
        if (manager.finish_read({hot}).at(0) != L1Error::kSuccess) fail("finish_read hot");
      } else if (rr.error != L1Error::kKeyNotReadable) {
        fail("reserve_read hot: " + std::string(l1_error_name(rr.error)));
      }
      auto rw = manager.reserve_write({hot}, {false}, tiny_layout(), ReserveMode::kUpdate).at(0);
      if (rw.error == L1Error::kSuccess) {
        if (manager.finish_write({hot}).at(0) != L1Error::kSuccess) fail("finish_write hot");
      } else if (rw.error != L1Error::kKeyNotWritable) {
        fail("reserve_write hot: " + std::string(l1_error_name(rw.error)));
      }
    }
  });
  EXPECT_EQ(bad.load(), 0) << (failures.empty() ? "" : failures.front());
  for (const auto& k : shared) {
    auto s = manager.object_state(k);
    ASSERT_TRUE(s.has_value()) << "no shared key lost";
    EXPECT_FALSE(s->write_locked);
    EXPECT_EQ(s->read_count, 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kIters; ++i) {
      EXPECT_FALSE(manager.object_state(make_key(static_cast<std::uint32_t>(t * 1000 + i))));
    }
  }
  EXPECT_EQ(manager.get_memory_usage().used_bytes, baseline);
}

// Threads compete for a budget that holds a few batches: each batch is all-or-nothing, usage
// never exceeds the budget, and every byte comes back.
TEST(L1ManagerConcurrency, BatchesStayAtomicUnderMemoryPressure) {
  constexpr std::size_t kBatch = 3, kBudgetObjects = 10;
  const std::size_t each = tiny_layout().total_bytes();
  L1Manager manager(kBudgetObjects * each);
  constexpr int kThreads = 4, kIters = 150;
  std::atomic<int> successes{0}, ooms{0}, bad{0};
  run_together(kThreads, [&](int t) {
    const bool temp = t % 2 == 0;
    for (int i = 0; i < kIters; ++i) {
      auto keys = make_keys(static_cast<std::uint32_t>((t * kIters + i) * kBatch), kBatch);
      auto r = manager.reserve_write(keys, std::vector<bool>(kBatch, temp), tiny_layout(),
                                     ReserveMode::kNew);
      if (manager.get_memory_usage().used_bytes > manager.get_memory_usage().capacity_bytes) {
        bad.fetch_add(1);
      }
      const auto n_ok = std::count_if(
          r.begin(), r.end(), [](const L1Result& x) { return x.error == L1Error::kSuccess; });
      const auto n_oom = std::count_if(
          r.begin(), r.end(), [](const L1Result& x) { return x.error == L1Error::kOutOfMemory; });
      if (n_oom == static_cast<long>(kBatch)) {
        ooms.fetch_add(1);
        continue;
      }
      if (n_ok != static_cast<long>(kBatch)) {
        bad.fetch_add(1);  // A partial batch.
        continue;
      }
      successes.fetch_add(1);
      for (const auto& x : manager.finish_write_and_reserve_read(keys)) {
        if (x.error != L1Error::kSuccess) bad.fetch_add(1);
      }
      for (L1Error e : manager.finish_read(keys)) {
        if (e != L1Error::kSuccess) bad.fetch_add(1);
      }
      if (!temp) {
        for (L1Error e : manager.delete_keys(keys)) {
          if (e != L1Error::kSuccess) bad.fetch_add(1);
        }
      }
    }
  });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(successes.load() + ooms.load(), kThreads * kIters);
  // A batch of 3 fails only while the other threads hold more than 7 objects, i.e. hold
  // batches that succeeded: so at least one batch went through.
  EXPECT_GT(successes.load(), 0);
  EXPECT_EQ(manager.get_memory_usage().used_bytes, 0u);
}

// close() racing with callers: each call either completes normally or throws logic_error, and
// every thread sees the close.
TEST(L1ManagerConcurrency, CloseWhileOtherThreadsOperate) {
  L1Manager manager(kBasicCapacity);
  constexpr int kThreads = 4;
  std::atomic<int> progress{0}, saw_close{0}, bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint32_t i = 0;; ++i) {
        const auto key = make_key(static_cast<std::uint32_t>(t) * 1000000u + i);
        try {
          auto r = manager.reserve_write({key}, {false}, tiny_layout()).at(0);
          if (r.error != L1Error::kSuccess) bad.fetch_add(1);
          // A call that returns ran before the close, so it must have its normal result; one
          // that runs after the close throws instead.
          if (manager.finish_write({key}).at(0) != L1Error::kSuccess) bad.fetch_add(1);
          if (manager.reserve_read({key}).at(0).error != L1Error::kSuccess) bad.fetch_add(1);
          if (manager.finish_read({key}).at(0) != L1Error::kSuccess) bad.fetch_add(1);
          if (manager.delete_keys({key}).at(0) != L1Error::kSuccess) bad.fetch_add(1);
          progress.fetch_add(1);
        } catch (const std::logic_error&) {
          saw_close.fetch_add(1);
          return;
        }
      }
    });
  }
  while (progress.load() < 200) std::this_thread::yield();
  manager.close();
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(saw_close.load(), kThreads);
  EXPECT_THROW(manager.get_memory_usage(), std::logic_error);
}

}  // namespace
}  // namespace lmcache
