// Each real storage fault applied under the whole stack (the fp8 serde wrapper over the "resp"
// or "fs" adapter, as a deployment configures it), and the stack's reaction: failures reported
// as failures, lost or damaged objects as misses, never wrong bytes, and recovery afterwards.
#include "lmcache/storage_fault/storage_faults.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/testing/adapter_waits.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/stored_objects.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fault {
namespace {

using namespace std::chrono_literals;
using storage_testing::RedisServer;
using storage_testing::TempDir;
using storage_testing::wait_load;
using storage_testing::wait_store;

constexpr std::size_t kElems = 4096;  // bf16 elements: 8 KiB wide, 4 KiB as fp8

// The fp8 serde wrapper over an adapter built from `config`, with its L1 for temps.
class Stack {
 public:
  explicit Stack(Json config) {
    config["serde"] = {{"type", "fp8"}};
    AdapterContext ctx;
    ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);
    adapter_ = create_l2_adapter(config, ctx);
  }
  ~Stack() { adapter_->close(); }

  // A bf16 object whose values fp8 e4m3 holds exactly, distinct per `seed` (mod 6).
  static MemoryObjPtr object(int seed) {
    return storage_testing::fp8_exact_bf16_object(kElems, static_cast<std::size_t>(seed));
  }
  static ObjectKey key(int i) { return ObjectKey(int_hash_to_bytes(i), "m", 0); }

  // Stores key(i) with object(i); true when the stack reports success. Fails the test when no
  // result comes within a generous bound (a hang).
  bool store(int i) {
    const std::optional<L2StoreResult> r =
        wait_store(*adapter_, adapter_->submit_store_task({key(i)}, {object(i)}), 30s);
    if (!r) ADD_FAILURE() << "store of key " << i << " never completed";
    return r && r->is_successful();
  }

  // Loads the keys; the bitmap as a string ("1" hit). Every hit must carry exactly the bytes
  // stored (the test fails otherwise): a fault may cost a hit, never correctness.
  std::string load(const std::vector<int>& is) {
    std::vector<ObjectKey> keys;
    std::vector<MemoryObjPtr> dst;
    for (int i : is) {
      keys.push_back(key(i));
      dst.push_back(MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16)));
    }
    const std::optional<Bitmap> bits =
        wait_load(*adapter_, adapter_->submit_load_task(keys, dst), 30s);
    if (!bits) {
      ADD_FAILURE() << "load never completed";
      return "(hung)";
    }
    for (std::size_t p = 0; p < is.size(); ++p) {
      if (!bits->test(p)) continue;
      EXPECT_EQ(std::memcmp(dst[p]->data(), object(is[p])->data(), kElems * 2), 0)
          << "key " << is[p] << " loaded with wrong bytes";
    }
    return bits->to_string();
  }

 private:
  L2AdapterPtr adapter_;
};

// No circuit breaker: these tests look at each request's outcome across a fault and its heal,
// which an open breaker would fail at once (storage_campaign_test holds the breaker).
Json resp_config(const RedisServer& s) {
  return {{"type", "resp"},        {"host", s.host()},      {"port", s.port()},
          {"num_workers", 2},      {"io_timeout_ms", 1000}, {"task_deadline_ms", 5000},
          {"breaker_threshold", 0}};
}

Json fs_config(const std::filesystem::path& base) {
  return {{"type", "fs"}, {"base_path", base.string()}, {"checksum", "crc32"}, {"num_workers", 2}};
}

// A private redis-server and the stack over it, key 1 already stored.
class RedisFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    LMCACHE_SKIP_WITHOUT_REDIS();
    server_.emplace();
    stack_.emplace(resp_config(*server_));
    ASSERT_TRUE(stack_->store(1));
  }

  RedisServer& server() { return *server_; }
  Stack& stack() { return *stack_; }

 private:
  std::optional<RedisServer> server_;
  std::optional<Stack> stack_;  // after server_: closed before the server stops
};

bool has_temporaries(const std::filesystem::path& base) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(base)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) return true;
  }
  return false;
}

TEST(StorageFaultKinds, NamesRoundTripAndNameTheirAdapter) {
  for (StorageFaultKind k : all_storage_fault_kinds()) {
    EXPECT_EQ(storage_fault_from_name(storage_fault_name(k)), k);
    const std::string_view type = storage_fault_adapter_type(k);
    EXPECT_TRUE(type == "resp" || type == "fs") << storage_fault_name(k);
    EXPECT_EQ(storage_fault_name(k).substr(0, type == "resp" ? 6 : 3),
              type == "resp" ? "redis_" : "fs_");
  }
  EXPECT_EQ(all_storage_fault_kinds().size(), 9u);
  EXPECT_FALSE(storage_fault_from_name("redis_nap").has_value());
}

TEST_F(RedisFaults, RedisKillFailsWhatIsInFlightThenLossesAreMisses) {
  server().kill();
  EXPECT_FALSE(stack().store(2)) << "a store to a dead server reported success";
  EXPECT_EQ(stack().load({1, 2}), "00");
  server().restart();
  EXPECT_TRUE(stack().store(2)) << "no reconnect after the restart";
  EXPECT_EQ(stack().load({1, 2}), "01") << "key 1 died with the server: a miss, not an error";
}

TEST_F(RedisFaults, RedisPauseFailsTasksThenRecoversAndTheFailedStoreStaysInvisible) {
  server().pause();
  EXPECT_FALSE(stack().store(2)) << "a store to a paused server reported success";
  server().resume();
  EXPECT_TRUE(stack().store(3));
  // The paused server may have applied key 2's SET once resumed: the stack must not show it.
  EXPECT_EQ(stack().load({1, 2, 3}), "101");
}

TEST_F(RedisFaults, RedisClientKillCostsNoBatchAndNoData) {
  EXPECT_GE(redis_client_kill(server()), 1) << "the stack's connections were not there to kill";
  // Each worker finds its killed connection before its next batch uses it and reconnects:
  // neither the next store nor the next load pays for the kill.
  EXPECT_TRUE(stack().store(2)) << "the first store after CLIENT KILL failed";
  EXPECT_EQ(stack().load({1, 2}), "11") << "objects stored before CLIENT KILL were lost";
}

TEST_F(RedisFaults, RedisMaxmemoryRefusesStoresWithoutLosingData) {
  redis_set_maxmemory(server(), 1);  // below what the server already uses: every SET is OOM
  EXPECT_FALSE(stack().store(2)) << "a SET refused with OOM reported success";
  EXPECT_EQ(stack().load({1, 2}), "10");
  redis_set_maxmemory(server(), 0);
  EXPECT_TRUE(stack().store(2));
  EXPECT_EQ(stack().load({1, 2}), "11");
}

TEST(StorageFaults, FsFullDiskFailsTheStoreAndLeavesNoTemporary) {
  TempDir dir;
  Stack stack(fs_config(dir.path() / "cache"));
  ASSERT_TRUE(stack.store(1));
  {
    FileSizeLimit full(1024);  // an fp8 object is 4 KiB + its trailer
    EXPECT_FALSE(stack.store(2)) << "a write past the size limit reported success";
  }
  EXPECT_FALSE(has_temporaries(dir.path() / "cache"));
  EXPECT_EQ(stack.load({1, 2}), "10");
  EXPECT_TRUE(stack.store(2));
  EXPECT_EQ(stack.load({1, 2}), "11");
}

TEST(StorageFaults, FsTruncatedFlippedOrDeletedObjectsMissNeverWrongBytes) {
  TempDir dir;
  const auto base = dir.path() / "cache";
  Stack stack(fs_config(base));
  ASSERT_TRUE(stack.store(1));
  ASSERT_TRUE(stack.store(2));
  ASSERT_TRUE(stack.store(3));
  ASSERT_TRUE(stack.store(4));
  ASSERT_EQ(stack.load({1, 2, 3, 4}), "1111");
  const auto files = object_files(base);
  ASSERT_EQ(files.size(), 4u);
  // Which file holds which key does not matter: damage three of four and count the hits.
  truncate_file(files[0], 100);
  flip_byte(files[1], 1234);
  delete_file(files[2]);
  const std::string bits = stack.load({1, 2, 3, 4});
  EXPECT_EQ(std::count(bits.begin(), bits.end(), '1'), 1) << bits;  // load() checks the bytes
}

TEST(StorageFaults, FsUnwritableDirectoryFailsTheStore) {
  TempDir dir;
  const auto base = dir.path() / "cache";
  Stack stack(fs_config(base));
  ASSERT_TRUE(stack.store(1));
  {
    UnwritableDir ro(base);
    if (!ro.effective()) {
      GTEST_SKIP() << "running with CAP_DAC_OVERRIDE (uid " << ::geteuid()
                   << "): a read-only directory is still writable, so this fault is moot here";
    }
    EXPECT_FALSE(stack.store(2)) << "a store into a read-only directory reported success";
  }
  EXPECT_EQ(stack.load({1, 2}), "10");
  EXPECT_TRUE(stack.store(2));
}

}  // namespace
}  // namespace lmcache::fault
