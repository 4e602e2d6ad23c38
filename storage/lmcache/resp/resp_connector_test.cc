// RespConnector against a real redis-server: batches through the workers, and the failures it
// must survive (unreachable, killed and restarted, paused, connections killed, maxmemory, AUTH);
// and against hostile servers (storage_testing::hostile_replies()): a bad reply costs only the
// keys of the tile it answered, and the pool's next batch is served by a fresh connection.
#include "lmcache/resp/resp_connector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/testing/connector_waits.h"
#include "lmcache/testing/fake_resp_server.h"
#include "lmcache/testing/redis_server.h"

namespace lmcache::resp {
namespace {

using namespace std::chrono_literals;
using bridge::Completion;
using storage_testing::RedisServer;

RespConnectorOptions options_for(const RedisServer& server, std::size_t workers = 2,
                                 std::chrono::milliseconds io_timeout = 5000ms) {
  RespConnectorOptions o;
  o.endpoint = server.endpoint();
  o.endpoint.io_timeout = io_timeout;
  o.num_workers = workers;
  return o;
}

Completion wait_one(RespConnector& c, std::uint64_t id) {
  if (auto done = storage_testing::wait_completion(c, id, 30s)) return *std::move(done);
  ADD_FAILURE() << "batch " << id << " did not complete";
  return Completion{id, false, {}, "timeout"};
}

// Keys k0..k(n-1) with values of `size` bytes filled with `fill + i`.
struct Batch {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::vector<void*> bufs;
  std::vector<std::size_t> lens;
  Batch(std::size_t n, std::size_t size, char fill, const std::string& prefix = "k") {
    for (std::size_t i = 0; i < n; ++i) {
      keys.push_back(prefix + std::to_string(i));
      values.emplace_back(size, static_cast<char>(fill + i));
    }
    for (auto& v : values) {
      bufs.push_back(v.data());
      lens.push_back(v.size());
    }
  }
  std::size_t size() const { return lens.empty() ? 0 : lens[0]; }
};

TEST(RespConnector, BatchesRoundTripThroughTheWorkers) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 3));
  Batch in(10, 4096, 'a');
  Completion set = wait_one(c, c.submit_batch_set(in.keys, in.bufs, in.lens, in.size()));
  ASSERT_TRUE(set.ok) << set.error;
  EXPECT_EQ(set.result_bytes, std::vector<std::uint8_t>(10, 1));
  EXPECT_EQ(server.command({"DBSIZE"}).integer, 10);

  Batch out(10, 4096, '.');
  std::vector<std::string> keys = in.keys;
  keys[4] = "absent";
  Completion get = wait_one(c, c.submit_batch_get(keys, out.bufs, out.lens, out.size()));
  EXPECT_TRUE(get.ok) << "a miss does not fail a get";
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(get.result_bytes[i], i == 4 ? 0 : 1) << i;
    EXPECT_EQ(out.values[i], i == 4 ? std::string(4096, static_cast<char>('.' + 4)) : in.values[i]);
  }
  Completion exists = wait_one(c, c.submit_batch_exists({"k1", "absent"}));
  EXPECT_EQ(exists.result_bytes, (std::vector<std::uint8_t>{1, 0}));
  Completion del = wait_one(c, c.submit_batch_delete({"k1", "absent"}));
  EXPECT_EQ(del.result_bytes, (std::vector<std::uint8_t>{1, 0}));
  EXPECT_EQ(server.command({"DBSIZE"}).integer, 9);
  // One connection per worker that took a tile (which workers do is up to the scheduler), none
  // lost or replaced.
  const std::uint64_t connects = c.report_status()["connects"].get<std::uint64_t>();
  EXPECT_GE(connects, 1u);
  EXPECT_LE(connects, 3u) << "a worker connected twice";
  EXPECT_EQ(c.connection_failures(), 0u);
  EXPECT_EQ(c.idle_drops(), 0u);
}

TEST(RespConnector, UnreachableServerCompletesEveryBatchPromptly) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RespConnectorOptions o;
  {
    RedisServer server;
    o = options_for(server);
  }  // stopped: nothing listens on its port now
  o.endpoint.connect_timeout = 500ms;
  RespConnector c(o);  // does not throw
  Batch b(2, 16, 'a');
  Completion set = wait_one(c, c.submit_batch_set(b.keys, b.bufs, b.lens, b.size()));
  EXPECT_FALSE(set.ok);
  EXPECT_NE(set.error.find("connect"), std::string::npos) << set.error;
  Completion get = wait_one(c, c.submit_batch_get(b.keys, b.bufs, b.lens, b.size()));
  EXPECT_TRUE(get.ok);
  EXPECT_EQ(get.result_bytes, (std::vector<std::uint8_t>{0, 0}));
  EXPECT_FALSE(get.error.empty());
  EXPECT_FALSE(wait_one(c, c.submit_batch_exists(b.keys)).ok);
  EXPECT_FALSE(wait_one(c, c.submit_batch_delete(b.keys)).ok);
}

TEST(RespConnector, RecoversAfterTheServerIsKilledAndRestarted) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 1));
  Batch b(3, 1024, 'a');
  ASSERT_TRUE(wait_one(c, c.submit_batch_set(b.keys, b.bufs, b.lens, b.size())).ok);
  server.kill();
  // The connection is dead: the next batch fails cleanly (a get: misses with the reason).
  Batch out(3, 1024, '.');
  Completion get = wait_one(c, c.submit_batch_get(b.keys, out.bufs, out.lens, out.size()));
  EXPECT_EQ(get.result_bytes, (std::vector<std::uint8_t>{0, 0, 0}));
  EXPECT_FALSE(get.error.empty());
  EXPECT_FALSE(wait_one(c, c.submit_batch_set(b.keys, b.bufs, b.lens, b.size())).ok);
  server.restart();
  // Reconnects by itself; the data died with the server.
  Completion after = wait_one(c, c.submit_batch_exists(b.keys));
  ASSERT_TRUE(after.ok) << after.error;
  EXPECT_EQ(after.result_bytes, (std::vector<std::uint8_t>{0, 0, 0}));
  ASSERT_TRUE(wait_one(c, c.submit_batch_set(b.keys, b.bufs, b.lens, b.size())).ok);
  get = wait_one(c, c.submit_batch_get(b.keys, out.bufs, out.lens, out.size()));
  EXPECT_EQ(get.result_bytes, (std::vector<std::uint8_t>{1, 1, 1}));
  EXPECT_GE(c.connects(), 2u);
}

TEST(RespConnector, PausedServerTimesOutThenRecovers) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 1, 1000ms));
  ASSERT_TRUE(wait_one(c, c.submit_batch_exists({"a"})).ok);
  server.pause();
  Completion stuck = wait_one(c, c.submit_batch_exists({"a"}));
  EXPECT_FALSE(stuck.ok);
  EXPECT_NE(stuck.error.find("no answer"), std::string::npos) << stuck.error;
  server.resume();
  Completion back = wait_one(c, c.submit_batch_exists({"a"}));
  EXPECT_TRUE(back.ok) << back.error;
}

TEST(RespConnector, CloseIsPromptWithAPausedServer) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  auto c = std::make_unique<RespConnector>(options_for(server, 2, 3600000ms));
  ASSERT_TRUE(wait_one(*c, c->submit_batch_exists({"a"})).ok);
  server.pause();
  c->submit_batch_exists({"a", "b"});  // both workers block on the paused server
  std::this_thread::sleep_for(50ms);
  c->close();  // shuts the sockets down: returns although io_timeout is an hour
  EXPECT_TRUE(c->drain_completions().empty());
  server.resume();
}

TEST(RespConnector, KilledClientConnectionsAreReplaced) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 1));
  ASSERT_TRUE(wait_one(c, c.submit_batch_exists({"a", "b"})).ok);
  ASSERT_EQ(server.command({"CLIENT", "KILL", "TYPE", "normal"}).integer, 1);
  // The worker finds its idle connection closed before the next batch uses it and replaces it:
  // no batch fails.
  for (int i = 0; i < 5; ++i) {
    Completion r = wait_one(c, c.submit_batch_exists({"a", "b"}));
    EXPECT_TRUE(r.ok) << "batch " << i << ": " << r.error;
  }
  EXPECT_EQ(c.connection_failures(), 0u);
  EXPECT_EQ(c.idle_drops(), 1u);
  EXPECT_EQ(c.connects(), 2u);
}

TEST(RespConnector, ARestartedServerCostsNoBatch) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 2));
  ASSERT_TRUE(wait_one(c, c.submit_batch_exists({"a", "b", "c", "d"})).ok);
  server.restart();
  for (int i = 0; i < 4; ++i) {
    Completion r = wait_one(c, c.submit_batch_exists({"a", "b", "c", "d"}));
    EXPECT_TRUE(r.ok) << "batch " << i << " after the restart: " << r.error;
  }
  EXPECT_EQ(c.connection_failures(), 0u);
  EXPECT_GE(c.idle_drops(), 1u) << "at least the connection of the first batch died idle";
  EXPECT_EQ(c.report_status()["idle_drops"], c.idle_drops());
}

TEST(RespConnector, MaxmemoryRefusalFailsTheSet) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  storage_testing::RedisServerOptions so;
  so.extra_args = {"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"};
  RedisServer server(so);
  RespConnector c(options_for(server, 1));
  Batch big(4, 1 << 20, 'a');
  Completion set = wait_one(c, c.submit_batch_set(big.keys, big.bufs, big.lens, big.size()));
  EXPECT_FALSE(set.ok);
  EXPECT_NE(set.error.find("OOM"), std::string::npos) << set.error;
  EXPECT_TRUE(wait_one(c, c.submit_batch_exists({"a"})).ok) << "the connection survives";
}

TEST(RespConnector, AuthenticatesWithThePassword) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  storage_testing::RedisServerOptions so;
  so.password = "s3cret";
  RedisServer server(so);
  EXPECT_EQ(server.command({"PING"}).str, "PONG");
  RespConnectorOptions o = options_for(server, 1);
  o.endpoint.password.clear();
  {
    RespConnector without(o);
    Completion r = wait_one(without, without.submit_batch_exists({"a"}));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("NOAUTH"), std::string::npos) << r.error;
  }
  o.endpoint.password = "s3cret";
  RespConnector with(o);
  EXPECT_TRUE(wait_one(with, with.submit_batch_exists({"a"})).ok);
  o.endpoint.password = "wrong";
  RespConnector wrong(o);
  Completion w = wait_one(wrong, wrong.submit_batch_exists({"a"}));
  EXPECT_FALSE(w.ok);
  EXPECT_NE(w.error.find("AUTH failed"), std::string::npos) << w.error;
}

TEST(RespConnector, RejectsBadOptions) {
  RespConnectorOptions o;
  o.endpoint.host = "";
  EXPECT_THROW(RespConnector{o}, std::invalid_argument);
  o.endpoint.host = "127.0.0.1";
  o.endpoint.port = 70000;
  EXPECT_THROW(RespConnector{o}, std::invalid_argument);
  o.endpoint.port = 6379;
  o.num_workers = 0;
  EXPECT_THROW(RespConnector{o}, std::invalid_argument);
}

// --- Hostile servers: the first connection of the pool answers its first request badly -------

enum class PoolOp { kGet, kSet, kExists, kDel };

struct PoolCase {
  PoolOp op;
  storage_testing::HostileReply reply;
};

std::string pool_op_name(PoolOp op) {
  switch (op) {
    case PoolOp::kGet:
      return "get";
    case PoolOp::kSet:
      return "set";
    case PoolOp::kExists:
      return "exists";
    case PoolOp::kDel:
      return "del";
  }
  return "?";
}

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << pool_op_name(c.op) << " / " << c.reply.name;
}

std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> cases;
  for (PoolOp op : {PoolOp::kGet, PoolOp::kSet, PoolOp::kExists, PoolOp::kDel}) {
    for (const auto& r : storage_testing::hostile_replies()) cases.push_back({op, r});
  }
  return cases;
}

class RespConnectorHostile : public ::testing::TestWithParam<PoolCase> {};

TEST_P(RespConnectorHostile, BadReplyCostsItsTileAndTheNextBatchIsServed) {
  const PoolCase& p = GetParam();
  constexpr std::size_t kSize = 64;
  storage_testing::MiniStore store;
  Batch stored(2, kSize, 'a');  // k0, k1: one tile each over two workers
  for (std::size_t i = 0; i < 2; ++i) store.put(stored.keys[i], stored.values[i]);
  storage_testing::FakeRespServer server([&](storage_testing::FakeRespServer::Conn& conn) {
    if (conn.index() > 0) return store.serve(conn);
    if (!conn.request().empty()) play(conn, p.reply);
  });
  RespConnectorOptions o;
  const bool drip = p.reply.then == storage_testing::HostileReply::Then::kDrip;
  o.endpoint = server.endpoint(drip ? storage_testing::kDripDeadline : 30000ms);
  o.num_workers = 2;
  RespConnector c(o);
  Batch out(2, kSize, '.');
  // The first batch: the tile answered by the hostile connection fails (a get: its key misses,
  // the other key loads; the other ops: the batch fails), with the reason.
  switch (p.op) {
    case PoolOp::kGet: {
      Completion get = wait_one(c, c.submit_batch_get(stored.keys, out.bufs, out.lens, out.size()));
      EXPECT_TRUE(get.ok) << "a bad reply failed a get batch: " << get.error;
      ASSERT_EQ(get.result_bytes.size(), 2u);
      EXPECT_EQ(get.result_bytes[0] + get.result_bytes[1], 1) << "one tile each: one hit";
      for (std::size_t i = 0; i < 2; ++i) {
        if (get.result_bytes[i] == 1) {
          EXPECT_EQ(out.values[i], stored.values[i]);
        }
      }
      EXPECT_NE(get.error.find(p.reply.error), std::string::npos) << get.error;
      break;
    }
    case PoolOp::kSet: {
      Completion set =
          wait_one(c, c.submit_batch_set(stored.keys, stored.bufs, stored.lens, stored.size()));
      EXPECT_FALSE(set.ok);
      EXPECT_NE(set.error.find(p.reply.error), std::string::npos) << set.error;
      break;
    }
    case PoolOp::kExists: {
      Completion exists = wait_one(c, c.submit_batch_exists(stored.keys));
      EXPECT_FALSE(exists.ok);
      EXPECT_NE(exists.error.find(p.reply.error), std::string::npos) << exists.error;
      break;
    }
    case PoolOp::kDel: {
      Completion del = wait_one(c, c.submit_batch_delete(stored.keys));
      EXPECT_FALSE(del.ok);
      EXPECT_NE(del.error.find(p.reply.error), std::string::npos) << del.error;
      break;
    }
  }
  EXPECT_EQ(c.connection_failures(), 1u);
  // The next batches: served in full by good connections.
  if (p.op == PoolOp::kDel) {
    Completion del = wait_one(c, c.submit_batch_delete(stored.keys));
    EXPECT_TRUE(del.ok) << del.error;
    Completion exists = wait_one(c, c.submit_batch_exists(stored.keys));
    EXPECT_TRUE(exists.ok) << exists.error;
    EXPECT_EQ(exists.result_bytes, (std::vector<std::uint8_t>{0, 0}));
  } else {
    if (p.op == PoolOp::kSet) {
      Completion set =
          wait_one(c, c.submit_batch_set(stored.keys, stored.bufs, stored.lens, stored.size()));
      EXPECT_TRUE(set.ok) << set.error;
    }
    Completion exists = wait_one(c, c.submit_batch_exists(stored.keys));
    EXPECT_TRUE(exists.ok) << exists.error;
    EXPECT_EQ(exists.result_bytes, (std::vector<std::uint8_t>{1, 1}));
    Batch again(2, kSize, '.');
    Completion get =
        wait_one(c, c.submit_batch_get(stored.keys, again.bufs, again.lens, again.size()));
    EXPECT_TRUE(get.ok) << get.error;
    EXPECT_EQ(get.result_bytes, (std::vector<std::uint8_t>{1, 1})) << get.error;
    EXPECT_EQ(again.values, stored.values);
  }
  EXPECT_EQ(c.connection_failures(), 1u) << "a good connection failed after the bad one";
  c.close();
  EXPECT_TRUE(server.wait_closed(server.connections())) << "a connection outlived close()";
}

INSTANTIATE_TEST_SUITE_P(Catalogue, RespConnectorHostile, ::testing::ValuesIn(pool_cases()),
                         [](const auto& info) {
                           return pool_op_name(info.param.op) + "_" + info.param.reply.name;
                         });

TEST(RespConnectorConcurrency, ThreadsSubmitThroughOneConnector) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  RespConnector c(options_for(server, 4));
  constexpr int kThreads = 4, kRounds = 20;
  std::mutex mu;
  std::map<std::uint64_t, Completion> done;
  std::atomic<bool> stop{false};
  std::thread drainer([&] {
    while (!stop) {
      wait_readable(c.event_fd(), 10ms);
      for (Completion& d : c.drain_completions()) {
        std::lock_guard lock(mu);
        done.emplace(d.future_id, std::move(d));
      }
    }
  });
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        Batch b(5, 2048, static_cast<char>('a' + t),
                "t" + std::to_string(t) + "r" + std::to_string(r) + "k");
        const std::uint64_t id = c.submit_batch_set(b.keys, b.bufs, b.lens, b.size());
        auto wait = [&](std::uint64_t fid) {
          const auto deadline = std::chrono::steady_clock::now() + 30s;
          while (std::chrono::steady_clock::now() < deadline) {
            {
              std::lock_guard lock(mu);
              if (auto it = done.find(fid); it != done.end()) return it->second;
            }
            std::this_thread::sleep_for(1ms);
          }
          return Completion{fid, false, {}, "timeout"};
        };
        if (!wait(id).ok) ++bad;
        Batch out(5, 2048, '.');
        Completion get = wait(c.submit_batch_get(b.keys, out.bufs, out.lens, out.size()));
        if (get.result_bytes != std::vector<std::uint8_t>(5, 1) || out.values != b.values) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  stop = true;
  drainer.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace lmcache::resp
