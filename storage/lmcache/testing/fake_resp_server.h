// File: lmcache/testing/fake_resp_server.h
//
// FakeRespServer: a scripted RESP2 server on 127.0.0.1 (an ephemeral port) for the tests of the
// resp client and connector: each accepted connection runs a script on a thread of its own,
// which reads requests and writes whatever bytes it likes, well-formed or not.
//
// MiniStore: a script that answers like Redis (SET, GET, EXISTS, DEL, PING, AUTH) from a map
// shared by every connection, the good server a client must recover onto after a bad one.
//
// HostileReply: the catalogue of ways a server can misbehave in place of one reply (a length of
// 4 GiB or of a terabyte, negative lengths, garbage, an endless line, a reply cut short, a reset,
// a reply dripped a byte at a time), each with the words the client's error must contain;
// play() acts one out on a connection. Both resp_client_test.cc and resp_connector_test.cc run
// the whole catalogue (issue 26: a hostile peer must never hurt the host).
//
// Thread safety: connections() and closed() from any thread; a Conn belongs to its script's
// thread; MiniStore is safe to share between connections.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lmcache/resp/resp_client.h"

namespace lmcache::storage_testing {

class FakeRespServer {
 public:
  // Conn
  //
  // One accepted connection, seen from its script.
  class Conn {
   public:
    Conn(int fd, int index, const std::atomic<bool>* stopping)
        : fd_(fd), index_(index), stopping_(stopping) {}
    // 0 for the first connection the server accepted, 1 for the next, ...
    int index() const { return index_; }
    // The next request's arguments; empty when the client closed the connection (or the server
    // is stopping).
    std::vector<std::string> request();
    // Writes `data`; false when the client is gone.
    bool send(std::string_view data);
    // Writes `data` one byte at a time, `gap` apart; stops and returns false as soon as a write
    // fails (the client closed the connection) or the server is stopping.
    bool drip(std::string_view data, std::chrono::microseconds gap);
    // Reads and drops until the client closes the connection (or the server stops).
    void drain();
    // When the script returns, the connection is reset (RST: SO_LINGER 0) rather than closed.
    void reset_on_close();

   private:
    std::string line();
    std::string bytes(std::size_t n);
    int fd_;
    int index_;
    const std::atomic<bool>* stopping_;
  };

  // FakeRespServer()
  //
  // Listens on 127.0.0.1, an ephemeral port, and runs `serve` for every connection on a thread
  // of its own; the connection is closed when `serve` returns. Throws std::runtime_error when it
  // cannot listen.
  explicit FakeRespServer(std::function<void(Conn&)> serve);
  // Stops accepting, shuts every connection down (a script blocked reading returns) and joins
  // every thread.
  ~FakeRespServer();
  FakeRespServer(const FakeRespServer&) = delete;
  FakeRespServer& operator=(const FakeRespServer&) = delete;

  int port() const { return port_; }
  // Connections accepted so far.
  int connections() const { return connections_.load(); }
  // Connections whose script has returned (and that are closed).
  int closed() const { return closed_.load(); }
  // wait_closed()
  //
  // Waits until at least `n` connections are closed (a script notices a client's hang-up when
  // it next reads or writes) or `timeout` passes; true when they are.
  bool wait_closed(int n, std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

  // endpoint()
  //
  // An endpoint for this server with the given request deadline.
  resp::RespEndpoint endpoint(
      std::chrono::milliseconds io_timeout = std::chrono::milliseconds(5000)) const;

 private:
  void accept_loop();

  std::function<void(Conn&)> serve_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::mutex mu_;
  std::set<int> open_fds_;                 // guarded by mu_
  std::vector<std::thread> conn_threads_;  // guarded by mu_
  std::thread accept_thread_;
};

// MiniStore
//
// Answers requests as Redis does until the client closes: SET (+OK), GET (the value or the null
// bulk), EXISTS and DEL (counts), PING (+PONG), AUTH (+OK); anything else "-ERR unknown".
class MiniStore {
 public:
  void put(const std::string& key, std::string value);
  bool has(const std::string& key) const;
  // Serves `conn` until the client closes it.
  void serve(FakeRespServer::Conn& conn);
  // Serves the request already read from `conn`, then the rest of the connection.
  void serve(FakeRespServer::Conn& conn, std::vector<std::string> first);

 private:
  std::string answer(const std::vector<std::string>& request);
  mutable std::mutex mu_;
  std::map<std::string, std::string> values_;  // guarded by mu_
};

// HostileReply
//
// Bytes a server sends in place of a reply, and what it does next.
struct HostileReply {
  enum class Then {
    kWait,   // waits for the client to close the connection
    kClose,  // closes the connection
    kReset,  // resets the connection (RST)
    kDrip,   // sends the bytes one every kDripGap; the reply is never complete before the
             // request's deadline (kDripDeadline) although each wait is far shorter
  };
  std::string name;   // a gtest parameter name: [A-Za-z0-9_]
  std::string bytes;  // sent in place of the reply
  Then then = Then::kWait;
  std::string error;  // words the client's RespError must contain, whatever the command
};

// The gap between two dripped bytes, and a request deadline against which a dripped reply
// (hostile_replies()'s "drip_*") can never complete: its bytes take many times the deadline.
inline constexpr std::chrono::milliseconds kDripGap{25};
inline constexpr std::chrono::milliseconds kDripDeadline{500};

// hostile_replies()
//
// The catalogue: oversized lengths (4 GiB, ~1 TB, a 10^8-element array), negative lengths other
// than -1, garbage, a line longer than 64 KiB, a reply cut short by a close and by a reset, and a
// 64-byte GET's reply dripped. None of them is a reply a client may accept.
std::vector<HostileReply> hostile_replies();

// play()
//
// Acts `h` out on `conn` as the answer to the request just read, then returns once the
// connection is over (closed by either side, or reset).
void play(FakeRespServer::Conn& conn, const HostileReply& h);

}  // namespace lmcache::storage_testing
