// File: lmcache/conformance/internal/hostile_resp_peer.h
//
// HostileRespPeer: a RESP server on 127.0.0.1 (an ephemeral port) that never gives a valid
// answer to a data command, for AdapterConformance.HostilePeerFailsCleanly (docs/l2-adapter.md,
// "Hostile peers"). It answers the connection's handshake as Redis does (AUTH, SELECT, CLIENT:
// +OK; PING: +PONG; HELLO: an unknown-command error, as a RESP2 server), and every other request
// (SET, GET, EXISTS, MGET, DEL, whatever the adapter sends) with one misbehaviour of the
// catalogue: an error reply, a null, oversized or negative lengths, garbage, an endless line, a
// reply cut short by a close or a reset.
//
// One thread serves every connection with poll(); requests are parsed as they stream in, values
// skipped, never held, so the peer's memory stays bounded whatever the adapter sends.
//
// Thread safety: port() and data_requests() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace lmcache::conformance_internal {

// Misbehaviour
//
// What the peer sends in place of a data command's reply, and what it does next.
struct Misbehaviour {
  enum class Then : std::uint8_t {
    kAgain,    // answers every later data request the same way (error and null replies)
    kSilence,  // keeps the connection open and answers nothing more (what a client reads as an
               // incomplete reply it must refuse, or wait out by its own deadline)
    kClose,    // closes the connection once the bytes are out
    kReset,    // resets the connection (RST) once the bytes are out
    // Not a reply: the server's connections themselves (`reply` unused).
    kHangUpAtAccept,  // closes every connection as soon as it is accepted
    kNotListening,    // nothing listens on the port: every connect is refused
  };
  // A reply made from what the adapter sent: a bulk value whose length differs from that of the
  // last value the adapter SET (`reply` unused). It answers every data request (a SET with a bulk
  // is a reply of the wrong kind, an EXISTS likewise), and a GET with a value of the wrong length
  // for the object asked: a client that takes it for the object's bytes reports a load that
  // never happened. Before any SET the peer answers an error.
  enum class Value : std::uint8_t {
    kNone,     // `reply` as it is
    kShorter,  // half the last SET value's length, rounded down (one byte when it was empty)
    kLonger,   // one byte more than the last SET value
  };
  std::string name;   // for messages: "error_reply", "bulk_of_4_GiB", ...
  std::string reply;  // the bytes sent in place of the reply
  Then then = Then::kAgain;
  Value value = Value::kNone;
};

// misbehaviours()
//
// The catalogue: error replies (a generic -ERR, Redis's -OOM under maxmemory, -WRONGTYPE), a
// null bulk, an empty array, bulk lengths of 4 GiB and of a terabyte, an array of 10^8 elements,
// negative lengths other than -1, lengths and integers with garbage, an unknown type byte, a
// line of 100 KiB with no end, a bulk cut short by a close and by a reset, a reset before any
// byte, a server that hangs up on every connection it accepts, and one that is not there (the
// port refuses connections); values shorter and longer than the one the adapter stored. None of
// them reports a value stored or found.
const std::vector<Misbehaviour>& misbehaviours();

class HostileRespPeer {
 public:
  // Listens on 127.0.0.1 and starts serving (kNotListening: takes a port and closes it again).
  // Throws std::runtime_error when it cannot listen.
  explicit HostileRespPeer(Misbehaviour misbehaviour);
  // Stops serving and closes every connection (an adapter still connected sees a hang-up).
  ~HostileRespPeer();
  HostileRespPeer(const HostileRespPeer&) = delete;
  HostileRespPeer& operator=(const HostileRespPeer&) = delete;

  std::uint16_t port() const { return port_; }
  // Data requests answered with the misbehaviour so far (handshake commands not counted).
  std::uint64_t data_requests() const { return data_requests_.load(); }

 private:
  struct Connection;
  void serve();
  // Parses what `c` sent and queues the answers.
  void consume(Connection& c, const char* data, std::size_t n);
  void answer(Connection& c, const std::string& command);
  // The reply of a Value misbehaviour, from the last SET value's length.
  std::string value_reply() const;

  const Misbehaviour misbehaviour_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> data_requests_{0};
  long long last_set_bytes_ = -1;  // the serving thread's only
  std::thread thread_;
};

}  // namespace lmcache::conformance_internal
