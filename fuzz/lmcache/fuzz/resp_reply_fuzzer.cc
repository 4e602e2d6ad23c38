// resp_reply_fuzzer: the RESP2 reply reader, against a server that sends anything.
//
// A Redis or Valkey server, or whatever answers on its port, may send any bytes. Each input is
// one call of the RespClient (storage/lmcache/resp/resp_client.h) over a socketpair() it adopts
// (RespClient::adopt_connection), whose other end, a thread here, reads the request and answers
// with the input's bytes, then closes its side. Beyond ASan and UBSan, it checks the header's
// promises:
//   - the only exception is RespError, after which the connection is closed; a success leaves it
//     open; no call ever dials a server;
//   - what a reply may make the client allocate is bounded: a command() reply holds at most
//     max_reply_bytes of strings and array elements, nested at most 8 arrays deep;
//   - get_many() writes a destination only for a hit, whose bytes are a bulk string of exactly
//     the asked length in the reply, and never past it; set_many() names the first refusal; every
//     call returns one 0/1 flag per key.
//
// Input (fuzz/tools/make_seeds.py writes it): the call (command, get_many, set_many,
// exists_many, del_many), its parameter (command: max_reply_bytes = 2^(p % 21); the others:
// 1 + p % 4 keys), four lengths (u8, for get_many and set_many), then the server's bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lmcache/fuzz/fuzz_support.h"
#include "lmcache/resp/resp_client.h"

namespace lmcache::fuzz_internal {
namespace {

using resp::RespClient;
using resp::RespError;
using resp::RespReply;

// The server: once the first request byte arrives it sends `reply`, reading requests all along
// (so that neither side blocks the other), shuts its side for writing when the reply is out,
// and returns when the client closes the connection.
void serve(int fd, std::span<const std::uint8_t> reply) {
  bool asked = false;
  bool sent = false;
  std::size_t off = 0;
  char sink[4096];
  for (;;) {
    pollfd p{fd, static_cast<short>(POLLIN | (asked && !sent ? POLLOUT : 0)), 0};
    if (poll_for(p, std::chrono::seconds(10)) <= 0) return;  // (the client's is shorter)
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      if (::read(fd, sink, sizeof(sink)) <= 0) return;
      asked = true;
    }
    if (asked && !sent && (p.revents & POLLOUT) != 0 && off < reply.size()) {
      const ssize_t n = ::send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
      if (n < 0) {
        sent = true;  // the client is gone; wait for its close
        continue;
      }
      off += static_cast<std::size_t>(n);
    }
    if (asked && !sent && off == reply.size()) {
      ::shutdown(fd, SHUT_WR);
      sent = true;
    }
  }
}

// The bytes a command() reply is charged at least: strings and array elements.
std::size_t charged(const RespReply& r, int depth, int* deepest) {
  *deepest = std::max(*deepest, depth);
  std::size_t n = r.str.size() + r.elements.size() * sizeof(RespReply);
  for (const RespReply& e : r.elements) n += charged(e, depth + 1, deepest);
  return n;
}

bool contains(std::span<const std::uint8_t> hay, const std::string& needle) {
  const std::string_view h(reinterpret_cast<const char*>(hay.data()), hay.size());
  return h.find(needle) != std::string_view::npos;
}

constexpr char kCanary = 0x3C;

void fuzz_one(FuzzInput& in) {
  const std::uint8_t op = in.byte() % 5;
  const std::uint8_t param = in.byte();
  std::size_t lens[4];
  for (std::size_t& len : lens) len = in.byte();
  const std::span<const std::uint8_t> reply = in.rest();

  resp::RespEndpoint endpoint;
  endpoint.port = 1;  // never dialled: every call goes over the adopted socket
  endpoint.connect_timeout = std::chrono::milliseconds(100);
  endpoint.io_timeout = std::chrono::milliseconds(3000);
  endpoint.max_reply_bytes = std::size_t{1} << (param % 21);
  RespClient client(endpoint);
  int sv[2];
  LMCACHE_FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  client.adopt_connection(sv[0]);
  std::thread server(serve, sv[1], reply);

  const std::size_t k = 1 + param % 4;
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < k; ++i) keys.push_back("fuzz" + std::to_string(i));
  std::vector<std::vector<char>> storage;
  std::vector<void*> bufs;
  for (std::size_t i = 0; i < k; ++i) {
    storage.emplace_back(lens[i] + 1, kCanary);
    bufs.push_back(storage.back().data());
  }
  const std::span<const std::size_t> key_lens(lens, k);
  static const char* const kOps[] = {"command", "get_many", "set_many", "exists_many", "del_many"};
  const std::string said = std::string(kOps[op]) + " of " + std::to_string(k) + " keys over " +
                           std::to_string(reply.size()) + " reply bytes";

  std::string first_error;
  std::vector<std::uint8_t> flags;
  bool failed = false;
  try {
    switch (op) {
      case 0: {
        const RespReply r = client.command({"GET", "fuzz"});
        int deepest = 0;
        const std::size_t bytes = charged(r, 0, &deepest);
        LMCACHE_FUZZ_CHECK(bytes <= endpoint.max_reply_bytes,
                           said + ": a reply of " + std::to_string(bytes) + " bytes over " +
                               std::to_string(endpoint.max_reply_bytes));
        LMCACHE_FUZZ_CHECK(deepest <= 8, said + ": arrays nested " + std::to_string(deepest));
        (void)r.to_string();
        break;
      }
      case 1:
        flags = client.get_many(keys, bufs, key_lens, &first_error);
        break;
      case 2:
        flags = client.set_many(keys, bufs, key_lens, &first_error);
        break;
      case 3:
        flags = client.exists_many(keys);
        break;
      default:
        flags = client.del_many(keys);
        break;
    }
  } catch (const RespError&) {
    failed = true;
  } catch (...) {
    LMCACHE_FUZZ_FAIL(said + " threw " + describe_current_exception());
  }
  const bool connected = client.connected();
  client.disconnect();
  server.join();
  ::close(sv[1]);

  LMCACHE_FUZZ_CHECK(
      connected != failed,
      said + (failed ? ": failed and stayed connected" : ": succeeded and closed the connection"));
  LMCACHE_FUZZ_CHECK(client.connects() == 0, said + ": dialled a server");
  if (op != 0 && !failed) {
    LMCACHE_FUZZ_CHECK(flags.size() == k, said + ": " + std::to_string(flags.size()) + " flags");
    for (std::uint8_t f : flags)
      LMCACHE_FUZZ_CHECK(f <= 1, said + ": a flag of " + std::to_string(f));
  }
  for (std::size_t i = 0; i < k; ++i) {
    const std::vector<char>& b = storage[i];
    LMCACHE_FUZZ_CHECK(b[lens[i]] == kCanary, said + ": wrote past a destination");
    const bool hit = op == 1 && !failed && flags[i] == 1;
    if (hit) {
      // "$<len>\r\n<bytes>\r\n": the bytes were a bulk string of exactly the asked length.
      const std::string bulk =
          std::to_string(lens[i]) + "\r\n" + std::string(b.data(), lens[i]) + "\r\n";
      LMCACHE_FUZZ_CHECK(contains(reply, bulk), said + ": a hit on bytes no bulk string holds");
    } else if (op == 1 && !failed) {
      LMCACHE_FUZZ_CHECK(std::all_of(b.begin(), b.end(), [](char c) { return c == kCanary; }),
                         said + ": a miss wrote its destination");
    } else if (op == 2) {
      LMCACHE_FUZZ_CHECK(std::all_of(b.begin(), b.end(), [](char c) { return c == kCanary; }),
                         said + ": set_many wrote a value it sent");
    }
  }
  if (op == 2 && !failed && std::find(flags.begin(), flags.end(), 0) != flags.end()) {
    LMCACHE_FUZZ_CHECK(!first_error.empty(), said + ": a refused SET without its error");
  }
}

}  // namespace
}  // namespace lmcache::fuzz_internal

LMCACHE_FUZZ_TARGET(lmcache::fuzz_internal::fuzz_one)
