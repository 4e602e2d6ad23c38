// RespClient against a scripted fake server (protocol edge cases, failures) and a real
// redis-server (round trips of large pipelined values).
#include "lmcache/resp/resp_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "lmcache/testing/redis_server.h"

namespace lmcache::resp {
namespace {

using namespace std::chrono_literals;

// One scripted connection at a time on 127.0.0.1: `serve(conn)` runs on the server thread for
// each accepted connection.
class FakeServer {
 public:
  // Reads RESP requests from a connection and writes raw bytes to it.
  class Conn {
   public:
    explicit Conn(int fd) : fd_(fd) {}
    // The next request's arguments; empty when the client closed.
    std::vector<std::string> request() {
      std::string header = line();
      if (header.empty() || header[0] != '*') return {};
      const int n = std::stoi(header.substr(1));
      std::vector<std::string> args;
      for (int i = 0; i < n; ++i) {
        const std::string len = line();
        if (len.empty()) return {};
        args.push_back(bytes(static_cast<std::size_t>(std::stoll(len.substr(1)))));
        bytes(2);
      }
      return args;
    }
    void send(const std::string& data, bool byte_by_byte = false) {
      if (!byte_by_byte) {
        ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        return;
      }
      for (char c : data) {
        ::send(fd_, &c, 1, MSG_NOSIGNAL);
        std::this_thread::sleep_for(100us);
      }
    }
    // Waits until the client closes (or the server stops).
    void drain() {
      char buf[4096];
      while (::recv(fd_, buf, sizeof(buf), 0) > 0) {
      }
    }

   private:
    std::string line() {
      std::string out;
      char c;
      while (::recv(fd_, &c, 1, 0) == 1) {
        out.push_back(c);
        if (out.size() >= 2 && out.substr(out.size() - 2) == "\r\n") {
          return out.substr(0, out.size() - 2);
        }
      }
      return {};
    }
    std::string bytes(std::size_t n) {
      std::string out(n, '\0');
      std::size_t got = 0;
      while (got < n) {
        const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
        if (r <= 0) return {};
        got += static_cast<std::size_t>(r);
      }
      return out;
    }
    int fd_;
  };

  explicit FakeServer(std::function<void(Conn&)> serve) : serve_(std::move(serve)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(listen_fd_, 8) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("FakeServer: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    {
      std::lock_guard lock(mu_);
      if (conn_fd_ >= 0) ::shutdown(conn_fd_, SHUT_RDWR);
    }
    thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  // Connections the server has closed.
  int closed() const { return closed_.load(); }

  RespEndpoint endpoint(std::chrono::milliseconds io_timeout = 5000ms) const {
    RespEndpoint e;
    e.host = "127.0.0.1";
    e.port = port_;
    e.io_timeout = io_timeout;
    return e;
  }

 private:
  void run() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      {
        std::lock_guard lock(mu_);
        conn_fd_ = fd;
      }
      ++connections_;
      Conn conn(fd);
      serve_(conn);
      {
        std::lock_guard lock(mu_);
        conn_fd_ = -1;
      }
      ::close(fd);
      ++closed_;
    }
  }

  std::function<void(Conn&)> serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::mutex mu_;
  int conn_fd_ = -1;
  std::thread thread_;
};

TEST(RespClient, ParsesEveryReplyTypeAcrossReadBoundaries) {
  FakeServer server([](FakeServer::Conn& c) {
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
      c.send(r, /*byte_by_byte=*/true);
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
  FakeServer server([&](FakeServer::Conn& c) {
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
  FakeServer server([](FakeServer::Conn& c) {
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
  FakeServer server([&](FakeServer::Conn& c) {
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
  std::atomic<int> conn{0};
  FakeServer server([&](FakeServer::Conn& c) {
    if (conn++ == 0) {
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
  FakeServer server([](FakeServer::Conn& c) {
    c.request();
    c.send("+PONG\r\n");
    // then closed while the client is idle (a restart, CLIENT KILL, an idle timeout)
  });
  RespClient client(server.endpoint());
  EXPECT_EQ(client.command({"PING"}).str, "PONG");
  for (auto end = std::chrono::steady_clock::now() + 5s;
       server.closed() < 1 && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(server.closed(), 1);
  EXPECT_EQ(client.command({"PING"}).str, "PONG") << "the call used the dead connection";
  EXPECT_EQ(client.failures(), 0u);
  EXPECT_EQ(client.idle_drops(), 1u);
  EXPECT_EQ(client.connects(), 2u);
}

TEST(RespClient, UnsolicitedBytesOnAnIdleConnectionReplaceIt) {
  std::atomic<int> conn{0};
  std::atomic<bool> sent{false};
  FakeServer server([&](FakeServer::Conn& c) {
    if (conn++ == 0) {
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
  FakeServer server([](FakeServer::Conn& c) { c.drain(); });
  RespClient client(server.endpoint(200ms));
  try {
    client.command({"PING"});
    FAIL() << "a silent server did not time out";
  } catch (const RespError& e) {
    EXPECT_NE(std::string(e.what()).find("no answer within 200 ms"), std::string::npos) << e.what();
  }
}

TEST(RespClient, ShutdownInterruptsABlockedCall) {
  FakeServer server([](FakeServer::Conn& c) { c.drain(); });
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
  FakeServer server([&](FakeServer::Conn& c) {
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
  FakeServer server([](FakeServer::Conn& c) {
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
    FakeServer gone([](FakeServer::Conn&) {});
    port = gone.port();
  }
  RespEndpoint e;
  e.port = port;
  RespClient client(e);
  EXPECT_THROW(client.connect(), RespError);
}

// --- Against redis-server --------------------------------------------------------------------

#define SKIP_WITHOUT_REDIS()                                                       \
  if (!storage_testing::RedisServer::find_executable()) {                          \
    GTEST_SKIP() << "redis-server is not installed (Debian package redis-server; " \
                    "scripts/install-deps.sh installs it)";                        \
  }

TEST(RespClientRedis, PipelinesLargeValuesBothWays) {
  SKIP_WITHOUT_REDIS();
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
  SKIP_WITHOUT_REDIS();
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
