#include "lmcache/testing/redis_server.h"

#include <gtest/gtest.h>

namespace lmcache::storage_testing {
namespace {

using resp::RespReply;

TEST(RedisServer, StartsPrivatelyAndStops) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  std::filesystem::path dir;
  int port = 0;
  {
    RedisServer server;
    dir = server.dir();
    port = server.port();
    EXPECT_GT(port, 0);
    EXPECT_EQ(server.command({"PING"}).str, "PONG");
    // No persistence: nothing is saved, whatever is written.
    EXPECT_EQ(server.command({"SET", "k", "v"}).str, "OK");
    RespReply save = server.command({"CONFIG", "GET", "save"});
    ASSERT_EQ(save.type, RespReply::Type::kArray);
    ASSERT_EQ(save.elements.size(), 2u);
    EXPECT_EQ(save.elements[1].str, "");
    EXPECT_EQ(server.command({"CONFIG", "GET", "appendonly"}).elements.at(1).str, "no");
    EXPECT_EQ(server.command({"CONFIG", "GET", "bind"}).elements.at(1).str, "127.0.0.1");
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  resp::RespEndpoint e;
  e.port = port;
  e.connect_timeout = std::chrono::milliseconds(500);
  resp::RespClient gone(e);
  EXPECT_THROW(gone.command({"PING"}), resp::RespError);
}

TEST(RedisServer, KillRestartPauseResume) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServer server;
  const int port = server.port();
  ASSERT_EQ(server.command({"SET", "k", "v"}).str, "OK");
  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_THROW(server.command({"PING"}), resp::RespError);
  server.restart();
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.command({"EXISTS", "k"}).integer, 0) << "a killed server keeps nothing";

  server.pause();
  EXPECT_TRUE(server.paused());
  resp::RespEndpoint e = server.endpoint();
  e.io_timeout = std::chrono::milliseconds(1000);
  resp::RespClient client(e);
  EXPECT_THROW(client.command({"PING"}), resp::RespError) << "a paused server answers nothing";
  server.resume();
  EXPECT_EQ(client.command({"PING"}).str, "PONG") << "the client reconnects";
  EXPECT_GE(client.connects(), 2u);
}

TEST(RedisServer, ExtraArgumentsReachTheServer) {
  LMCACHE_SKIP_WITHOUT_REDIS();
  RedisServerOptions o;
  o.extra_args = {"--maxmemory", "4mb", "--maxmemory-policy", "noeviction"};
  RedisServer server(o);
  EXPECT_EQ(server.command({"CONFIG", "GET", "maxmemory"}).elements.at(1).str, "4194304");
}

TEST(RedisServer, MissingExecutableIsAClearError) {
  RedisServerOptions o;
  o.executable = "/nonexistent/redis-server";
  try {
    RedisServer server(o);
    FAIL() << "started a server that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lmcache::storage_testing
