// RespClient against a scripted fake server (protocol edge cases, failures), hostile servers
// (every reply of storage_testing::hostile_replies() in answer to every command: a clear error,
// nothing allocated of the announced size, the connection closed, and the next call served by
// a fresh one) and a real redis-server (round trips of large pipelined values).
#include "lmcache/resp/resp_client.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "lmcache/testing/fake_resp_server.h"
#include "lmcache/testing/redis_server.h"

namespace lmcache::resp {
namespace {

using namespace std::chrono_literals;

using storage_testing::FakeRespServer;
using storage_testing::HostileReply;
using storage_testing::MiniStore;

TEST(RespClient, ParsesEveryReplyTypeAcrossReadBoundaries) {
  FakeRespServer server([](FakeRespServer::Conn& c) {
    const char* replies[] = {"+OK\r\n",
                             ":-42\r\n",
                             "$5\r\nhe\r\no\r\n",
                             "$-1\r\n",
                             "*2\r\n$1\r\na\r\n:1\r\n",
                             "-ERR bad thing\r\n",
                             "$0\r\n\r\n",
                             "*-1\r\n"};
    for (const char* r : replies) {
      if (c.request().empty()) return;
      c.drip(r, 100us);
    }
    c.drain();
  });
  RespClient client(server.endpoint());
  EXPECT_EQ(client.command({"A"}).to_string(), "+OK");
  EXPECT_EQ(client.command({"B"}).integer, -42);
  RespReply bulk = client.command({"C"});
  EXPECT_EQ(bulk.type, RespReply::Type::kBulk);
  EXPECT_EQ(bulk.str, "he\r\no");
  EXPECT_EQ(client.command({"D"}).type, RespReply::Type::kNull);
  EXPECT_EQ(client.command({"E"}).to_string(), "[$1:a, :1]");
  RespReply err = client.command({"F"});
  EXPECT_TRUE(err.is_error());
  EXPECT_EQ(err.str, "ERR bad thing");
  EXPECT_EQ(client.command({"G"}).to_string(), "$0:");
  EXPECT_EQ(client.command({"H"}).type, RespReply::Type::kNull);
  EXPECT_EQ(client.connects(), 1u) << "an error reply keeps the connection";
}

TEST(RespClient, SendsBinarySafeArguments) {
  std::vector<std::string> seen;
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    seen = c.request();
    c.send("+OK\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  const std::string binary("a\0b\r\n", 5);
  client.command({"SET", binary, ""});
  client.disconnect();
  std::this_thread::sleep_for(50ms);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1], binary);
  EXPECT_EQ(seen[2], "");
}

TEST(RespClient, GetManyDiscardsWrongLengthsAndStaysInSync) {
  FakeRespServer server([](FakeRespServer::Conn& c) {
    for (int i = 0; i < 3; ++i) c.request();
    c.send("$4\r\nabcd\r\n$6\r\nabcdef\r\n$-1\r\n");
    c.request();
    c.send("+PONG\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  std::string a(4, '.'), b(4, '.'), m(4, '.');
  std::vector<std::string> keys = {"a", "b", "m"};
  std::vector<void*> bufs = {a.data(), b.data(), m.data()};
  std::vector<std::size_t> lens = {4, 4, 4};
  std::string error;
  EXPECT_EQ(client.get_many(keys, bufs, lens, &error), (std::vector<std::uint8_t>{1, 0, 0}));
  EXPECT_EQ(a, "abcd");
  EXPECT_EQ(b, "....") << "a value of the wrong length was written";
  EXPECT_EQ(m, "....");
  EXPECT_NE(error.find("6 bytes"), std::string::npos) << error;
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
  EXPECT_EQ(client.connects(), 1u);
}

TEST(RespClient, SetManyReportsRefusedKeys) {
  std::map<std::string, std::string> stored;
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    for (int i = 0; i < 2; ++i) {
      std::vector<std::string> r = c.request();
      stored[r.at(1)] = r.at(2);
    }
    c.send("+OK\r\n-OOM command not allowed when used memory > 'maxmemory'.\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  std::string v1 = "value-1", v2(100000, 'x');
  std::vector<std::string> keys = {"k1", "k2"};
  std::vector<void*> bufs = {v1.data(), v2.data()};
  std::vector<std::size_t> lens = {v1.size(), v2.size()};
  std::string error;
  EXPECT_EQ(client.set_many(keys, bufs, lens, &error), (std::vector<std::uint8_t>{1, 0}));
  EXPECT_NE(error.find("OOM"), std::string::npos) << error;
  client.disconnect();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(stored["k1"], v1);
  EXPECT_EQ(stored["k2"], v2);
}

TEST(RespClient, ServerClosingMidReplyFailsThenReconnects) {
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    if (c.index() == 0) {
      c.request();
      c.send("$10\r\nabc");  // then the connection dies
      return;
    }
    c.request();
    c.send("$3\r\nxyz\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  std::string buf(10, '.');
  std::vector<std::string> keys = {"k"};
  std::vector<void*> bufs = {buf.data()};
  std::vector<std::size_t> lens = {10};
  try {
    client.get_many(keys, bufs, lens);
    FAIL() << "a reply cut short did not fail";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(client.command({"GET", "k"}).str, "xyz");
  EXPECT_EQ(client.connects(), 2u);
}

TEST(RespClient, IdleConnectionClosedByTheServerIsReplacedBeforeTheNextCall) {
  FakeRespServer server([](FakeRespServer::Conn& c) {
    c.request();
    c.send("+PONG\r\n");
    // then closed while the client is idle (a restart, CLIENT KILL, an idle timeout)
  });
  RespClient client(server.endpoint());
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
  ASSERT_TRUE(server.wait_closed(1));
  EXPECT_EQ(client.command({"PING"}).str, "PONG") << "the call used the dead connection";
  EXPECT_EQ(client.failures(), 0u);
  EXPECT_EQ(client.idle_drops(), 1u);
  EXPECT_EQ(client.connects(), 2u);
}

TEST(RespClient, UnsolicitedBytesOnAnIdleConnectionReplaceIt) {
  std::atomic<bool> sent{false};
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    if (c.index() == 0) {
      c.request();
      c.send("+PONG\r\n+STRAY\r\n");  // one reply too many: whatever follows is out of step
      sent = true;
      c.drain();
      return;
    }
    c.request();
    c.send("+PONG\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
  while (!sent) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(client.command({"PING"}).str, "PONG") << "a stray reply was taken for an answer";
  EXPECT_EQ(client.idle_drops(), 1u);
  EXPECT_EQ(client.connects(), 2u);
}

TEST(RespClient, SilentServerTimesOut) {
  FakeRespServer server([](FakeRespServer::Conn& c) { c.drain(); });
  RespClient client(server.endpoint(200ms));
  try {
    client.command({"PING"});
    FAIL() << "a silent server did not time out";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("no answer within 200 ms"), std::string::npos) << e.what();
  }
}

TEST(RespClient, ShutdownInterruptsABlockedCall) {
  FakeRespServer server([](FakeRespServer::Conn& c) { c.drain(); });
  RespClient client(server.endpoint(60000ms));
  client.connect();
  std::thread interrupter([&] {
    std::this_thread::sleep_for(50ms);
    client.shutdown();
  });
  EXPECT_THROW(client.command({"PING"}), RespError);
  interrupter.join();
  try {
    client.connect();
    FAIL() << "connect() after shutdown() succeeded";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
  }
  client.resume();
  EXPECT_NO_THROW(client.connect());
}

TEST(RespClient, AuthenticatesWithUserAndPassword) {
  std::vector<std::string> auth;
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    auth = c.request();
    c.send(auth.size() == 3 && auth[2] == "secret" ? "+OK\r\n" : "-WRONGPASS invalid\r\n");
    if (c.request().empty()) return;
    c.send("+PONG\r\n");
    c.drain();
  });
  RespEndpoint e = server.endpoint();
  e.username = "alice";
  e.password = "secret";
  RespClient client(e);
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
  EXPECT_EQ(auth, (std::vector<std::string>{"AUTH", "alice", "secret"}));
  client.disconnect();
  e.password = "wrong";
  RespClient bad(e);
  try {
    bad.connect();
    FAIL() << "a refused AUTH connected";
  } catch (const RespError& err) {
    EXPECT_NE(std::string(err.what()).find("AUTH failed"), std::string::npos) << err.what();
  }
}

TEST(RespClient, GarbageIsAProtocolError) {
  FakeRespServer server([](FakeRespServer::Conn& c) {
    c.request();
    c.send("?what\r\n");
    c.drain();
  });
  RespClient client(server.endpoint());
  try {
    client.command({"PING"});
    FAIL() << "garbage was accepted";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("protocol error"), std::string::npos) << e.what();
  }
}

TEST(RespClient, RefusedConnectionIsAnError) {
  int port = 0;
  {
    FakeRespServer gone([](FakeRespServer::Conn&) {});
    port = gone.port();
  }
  RespEndpoint e;
  e.port = port;
  RespClient client(e);
  EXPECT_THROW(client.connect(), RespError);
}

// The seam the RESP fuzz target feeds replies through (fuzz/lmcache/fuzz/resp_reply_fuzzer.cc):
// an adopted socket is the client's connection, read and failed as one it made itself.
TEST(RespClient, AdoptedConnectionServesCallsAndClosesOnFailure) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  RespEndpoint e;
  e.port = 1;  // never dialled: the adopted socket is the connection
  RespClient client(e);
  client.adopt_connection(sv[0]);
  EXPECT_TRUE(client.connected());
  EXPECT_NE(::fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0) << "the client's waits need O_NONBLOCK";
  const std::string ping = "*1\r\n$4\r\nPING\r\n";
  std::string received;
  std::thread server([&] {
    // The peer answers each request once it has it all: a reply, then garbage.
    for (const std::string reply : {"+PONG\r\n", "?garbage\r\n"}) {
      std::string request(ping.size(), '\0');
      std::size_t got = 0;
      while (got < request.size()) {
        const ssize_t n = ::read(sv[1], request.data() + got, request.size() - got);
        if (n <= 0) return;
        got += static_cast<std::size_t>(n);
      }
      received += request;
      ASSERT_EQ(::write(sv[1], reply.data(), reply.size()), static_cast<ssize_t>(reply.size()));
    }
  });
  EXPECT_EQ(client.command({"PING"}).to_string(), "+PONG");
  EXPECT_THROW(client.command({"PING"}), RespError);
  server.join();
  EXPECT_EQ(received, ping + ping);
  EXPECT_FALSE(client.connected()) << "a failure closes an adopted connection too";
  char byte = 0;
  EXPECT_EQ(::read(sv[1], &byte, 1), 0) << "the client closed its end";
  ::close(sv[1]);
  EXPECT_EQ(client.connects(), 0u) << "adopting is not connecting";
  EXPECT_THROW(client.adopt_connection(-1), std::invalid_argument);
}

TEST(RespClient, CommandRepliesAreBoundedByMaxReplyBytes) {
  const std::string two_mib(2u << 20, 'v');
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    while (!c.request().empty())
      c.send("$" + std::to_string(two_mib.size()) + "\r\n" + two_mib + "\r\n");
  });
  RespClient small(server.endpoint());  // the default: 1 MiB
  try {
    small.command({"GET", "big"});
    FAIL() << "a reply over max_reply_bytes was accepted";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("over its limit of 1048576 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(small.connected()) << "the rest of the refused reply is still on the connection";
  RespEndpoint e = server.endpoint();
  e.max_reply_bytes = 4u << 20;
  RespClient large(e);
  EXPECT_EQ(large.command({"GET", "big"}).str, two_mib);
}

TEST(RespClient, DeadlineCoversTheWholeRequestNotEachWait) {
  // Every byte comes well within the deadline of a wait, the whole reply never within the
  // request's deadline: the call must end at the deadline, not when the last byte arrives.
  std::atomic<bool> client_gone{false};
  const std::string reply = "$64\r\n" + std::string(64, 'd') + "\r\n";
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    c.request();
    if (!c.drip(reply, storage_testing::kDripGap)) client_gone = true;
  });
  RespClient client(server.endpoint(storage_testing::kDripDeadline));
  std::string buf(64, '.');
  std::vector<std::string> keys = {"k"};
  std::vector<void*> bufs = {buf.data()};
  std::vector<std::size_t> lens = {64};
  try {
    client.get_many(keys, bufs, lens);
    FAIL() << "a reply dripped past the request's deadline was accepted";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("no answer within"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(client.connected());
  // The server sees the client hang up: it could not drip the whole reply.
  ASSERT_TRUE(server.wait_closed(1));
  EXPECT_TRUE(client_gone) << "the server dripped the whole reply to a client still listening";
}

// --- Hostile servers: every reply of the catalogue in answer to every command ----------------

enum class HostileOp { kPing, kAuth, kSet, kGet, kExists, kDel };

struct HostileCase {
  HostileOp op;
  HostileReply reply;
};

std::string op_name(HostileOp op) {
  switch (op) {
    case HostileOp::kPing:
      return "ping";
    case HostileOp::kAuth:
      return "auth";
    case HostileOp::kSet:
      return "set";
    case HostileOp::kGet:
      return "get";
    case HostileOp::kExists:
      return "exists";
    case HostileOp::kDel:
      return "del";
  }
  return "?";
}

void PrintTo(const HostileCase& c, std::ostream* os) {
  *os << op_name(c.op) << " / " << c.reply.name;
}

std::vector<HostileCase> hostile_cases() {
  std::vector<HostileCase> cases;
  for (HostileOp op : {HostileOp::kPing, HostileOp::kAuth, HostileOp::kSet, HostileOp::kGet,
                       HostileOp::kExists, HostileOp::kDel}) {
    for (const HostileReply& r : storage_testing::hostile_replies()) cases.push_back({op, r});
  }
  return cases;
}

// The process's peak resident set so far (a high-water mark: it never goes down).
std::uint64_t peak_rss_bytes() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;  // Linux: KiB
}

class RespClientHostile : public ::testing::TestWithParam<HostileCase> {};

TEST_P(RespClientHostile, ClearErrorNothingAllocatedAndAFreshConnectionServesTheNextCall) {
  const HostileCase& p = GetParam();
  constexpr std::size_t kObject = 64;  // the largest object any call here asks for
  // Threads, buffers and sanitizer bookkeeping: far below any announced size of the catalogue
  // (4 GiB and more), which the client once allocated and zeroed before reading a byte.
  constexpr std::uint64_t kSlack = std::uint64_t{128} << 20;
  MiniStore store;
  store.put("intact", std::string(kObject, 'i'));
  FakeRespServer server([&](FakeRespServer::Conn& c) {
    if (c.index() > 0) return store.serve(c);
    if (!c.request().empty()) play(c, p.reply);
  });
  const bool drip = p.reply.then == HostileReply::Then::kDrip;
  RespEndpoint e = server.endpoint(drip ? storage_testing::kDripDeadline : 30000ms);
  if (p.op == HostileOp::kAuth) e.password = "secret";
  RespClient client(e);
  std::string value(kObject, 'v');
  std::vector<std::string> keys = {"k"};
  std::vector<void*> bufs = {value.data()};
  std::vector<std::size_t> lens = {kObject};

  const std::uint64_t peak_before = peak_rss_bytes();
  try {
    switch (p.op) {
      case HostileOp::kPing:
        client.command({"PING"});
        break;
      case HostileOp::kAuth:
        client.connect();
        break;
      case HostileOp::kSet:
        client.set_many(keys, bufs, lens);
        break;
      case HostileOp::kGet:
        client.get_many(keys, bufs, lens);
        break;
      case HostileOp::kExists:
        client.exists_many(keys);
        break;
      case HostileOp::kDel:
        client.del_many(keys);
        break;
    }
    ADD_FAILURE() << "the hostile reply was accepted";
  } catch (const RespError& err) {
    EXPECT_NE(std::string(err.what()).find(p.reply.error), std::string::npos)
        << "expected '" << p.reply.error << "' in: " << err.what();
  } catch (const std::exception& err) {
    ADD_FAILURE() << "not the client's own error (RespError): " << err.what();
  }
  const std::uint64_t peak_after = peak_rss_bytes();
  EXPECT_LT(peak_after - peak_before, 2 * kObject + kSlack)
      << "peak RSS grew by " << (peak_after - peak_before) << " bytes";
  EXPECT_FALSE(client.connected()) << "a connection that sent a bad reply was kept";
  EXPECT_EQ(client.failures(), 1u);
  // Over on the server's side too: a script that waits for the client (kWait, kDrip) returns
  // only once the client has closed the connection.
  EXPECT_TRUE(server.wait_closed(1)) << "the hostile connection is still open";

  // The next call gets a fresh connection, and intact keys load.
  std::string out(kObject, '.');
  std::vector<std::string> intact = {"intact"};
  std::vector<void*> out_bufs = {out.data()};
  EXPECT_EQ(client.get_many(intact, out_bufs, lens), (std::vector<std::uint8_t>{1}));
  EXPECT_EQ(out, std::string(kObject, 'i'));
  EXPECT_EQ(client.connects(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Catalogue, RespClientHostile, ::testing::ValuesIn(hostile_cases()),
                         [](const auto& info) {
                           return op_name(info.param.op) + "_" + info.param.reply.name;
                         });

// --- Against redis-server --------------------------------------------------------------------

TEST(RespClientRedis, PipelinesLargeValuesBothWays) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  storage_testing::RedisServer server;
  RespClient client(server.endpoint());
  // More keys than one pipelining window, sizes from 0 to over 1 MiB.
  std::vector<std::string> keys, values;
  for (int i = 0; i < 150; ++i) {
    keys.push_back("key:" + std::to_string(i));
    const std::size_t size = i == 0 ? 0 : i % 50 == 0 ? (1u << 20) + 3 : 1000u * i;
    std::string v(size, '\0');
    for (std::size_t j = 0; j < size; ++j) v[j] = static_cast<char>((i * 31 + j * 7) & 0xFF);
    values.push_back(std::move(v));
  }
  std::vector<void*> bufs;
  std::vector<std::size_t> lens;
  for (auto& v : values) {
    bufs.push_back(v.data());
    lens.push_back(v.size());
  }
  EXPECT_EQ(client.set_many(keys, bufs, lens), std::vector<std::uint8_t>(keys.size(), 1));
  std::vector<std::string> out;
  std::vector<void*> out_bufs;
  for (auto& v : values) out.emplace_back(v.size(), '.');
  for (auto& o : out) out_bufs.push_back(o.data());
  EXPECT_EQ(client.get_many(keys, out_bufs, lens), std::vector<std::uint8_t>(keys.size(), 1));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(out[i], values[i]) << keys[i];

  std::vector<std::string> probe = {keys[3], "absent", keys[149]};
  EXPECT_EQ(client.exists_many(probe), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(client.del_many(probe), (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_EQ(client.exists_many(probe), (std::vector<std::uint8_t>{0, 0, 0}));
  EXPECT_EQ(client.connects(), 1u);
}

TEST(RespClientRedis, WrongTypeIsAServerErrorNotAHang) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  storage_testing::RedisServer server;
  RespClient client(server.endpoint());
  ASSERT_EQ(client.command({"LPUSH", "list", "x"}).integer, 1);
  std::string buf(4, '.');
  std::vector<std::string> keys = {"list"};
  std::vector<void*> bufs = {buf.data()};
  std::vector<std::size_t> lens = {4};
  std::string error;
  EXPECT_EQ(client.get_many(keys, bufs, lens, &error), (std::vector<std::uint8_t>{0}));
  EXPECT_NE(error.find("WRONGTYPE"), std::string::npos) << error;
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
}

}  // namespace
}  // namespace lmcache::resp
