// File: lmcache/resp/resp_client.h
//
// RespClient: one blocking RESP2 connection to a Redis or Valkey server, with the pipelined,
// zero-copy batch operations the resp connector needs and a generic command() for everything
// else (AUTH, PING, CONFIG SET, CLIENT KILL in tests and fault campaigns).
//
// Why our own RESP2 and not hiredis (Debian's libhiredis 0.14.1), decided for the data path:
//   - zero copy both ways: a SET is sent with writev() straight from the caller's buffer, and a
//     GET reply's payload is received straight into the destination once its length is checked;
//     hiredis formats every command into its own buffer (a copy of each 1 MiB value) and reads
//     replies 16 KiB at a time into a reply object that must be copied again;
//   - failure semantics we control: every call is one request with one deadline (io_timeout
//     from its start) and every socket wait is a poll() bounded by what is left of it, so a
//     server that answers a byte at a time cannot hold a call longer than io_timeout; a
//     connection that fails, times out or sends a bad reply is closed at once, and the next call
//     reconnects (a server restart), so a request in flight when the connection dies fails
//     cleanly and a connection is never reused out of step with its server; an idle
//     connection the server closed meanwhile (a restart, CLIENT KILL, its idle `timeout`) is
//     found before a call uses it and replaced, so that call does not fail (the pool check on
//     checkout that redis-py does too); another thread can interrupt a blocked call (close() of
//     the connector) with shutdown();
//   - the protocol surface is tiny (arrays of bulk strings out; simple strings, errors,
//     integers, bulk strings, nulls and arrays in) and is tested against a scripted fake server
//     (storage/lmcache/testing/fake_resp_server.h), hostile ones included, and a real
//     redis-server; LMCache's own Redis connector also speaks RESP2 itself.
//
// What a server can make the client allocate is bounded before anything is allocated: a reply
// line is at most 64 KiB; a GET value goes into the caller's buffer and only when its length is
// the one asked for (another length up to kMaxDiscardBytes is read and dropped, a longer one is
// refused); the replies of SET, EXISTS, DEL and AUTH may hold at most kSmallReplyBytes; a
// command() reply at most RespEndpoint::max_reply_bytes (bulk bytes, lines and
// sizeof(RespReply) per array element). A reply over its bound, a negative length other than
// -1 (null), garbage, a reply cut short or a reset is a RespError and closes the connection.
//
// Thread safety: one thread uses a client at a time (the connector gives each worker its own);
// shutdown() and the counters may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct addrinfo;  // <netdb.h>

namespace lmcache::resp {

// RespEndpoint
//
// Where and how to connect. An empty password sends no AUTH; a username with it sends the
// Redis 6 form AUTH <username> <password>. `connect_timeout` bounds each TCP connect attempt;
// `io_timeout` is the deadline of one request (one call: connect() with its AUTH, command(), or
// one *_many() batch with all its pipelined windows), counted from the call's start; every wait
// for the server gets what is left of it. `max_reply_bytes` bounds a command() reply (the data
// calls have their own bounds, above).
struct RespEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;
  std::string password;
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds io_timeout{5000};
  std::size_t max_reply_bytes = std::size_t{1} << 20;
};

// RespError
//
// A connection or protocol failure (refused, reset, timed out, malformed reply, failed AUTH).
// The connection has been closed when it is thrown; the next call reconnects.
class RespError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// RespReply
//
// One parsed reply. A server error ("-ERR ...") is a reply of type kError, not an exception.
struct RespReply {
  enum class Type { kSimple, kError, kInteger, kBulk, kNull, kArray };
  Type type = Type::kNull;
  std::string str;                  // kSimple, kError, kBulk
  std::int64_t integer = 0;         // kInteger
  std::vector<RespReply> elements;  // kArray

  bool is_error() const { return type == Type::kError; }
  // "+OK", "-ERR x", ":3", "$5:hello", "(nil)", "[..]": for messages and tests.
  std::string to_string() const;
};

class RespClient {
 public:
  // The most the reply to a SET, EXISTS, DEL or AUTH may hold (its lines included).
  static constexpr std::size_t kSmallReplyBytes = 64 * 1024;
  // The longest GET value of an unexpected length that get_many() reads and drops as a miss
  // (Redis's default proto-max-bulk-len: no default server stores a longer value); a longer
  // one is refused (RespError) without being read.
  static constexpr std::size_t kMaxDiscardBytes = std::size_t{512} << 20;

  explicit RespClient(RespEndpoint endpoint);
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // connect()
  //
  // Connects and authenticates when not connected, within io_timeout (each TCP attempt also
  // within connect_timeout). Throws RespError (refused, timed out, AUTH failed or answered
  // with a bad reply, or interrupted by shutdown()).
  void connect();
  // Owner thread only.
  bool connected() const { return fd_ >= 0; }
  // Closes the connection (the next call reconnects).
  void disconnect();

  // adopt_connection()
  //
  // A test seam: takes `fd`, a connected stream socket whose peer plays the server (one end of
  // a socketpair() in tests and in fuzz/lmcache/fuzz/resp_reply_fuzzer.cc), as the connection,
  // in place of any current one. It is made non-blocking and close-on-exec, and from then on is
  // this client's own: the next call checks it as an idle connection and uses it, a failure or
  // disconnect() closes it. Nothing is sent on it (no AUTH) and it does not count in
  // connects(). Owner thread only. Throws std::invalid_argument for a negative fd, and
  // std::system_error when its flags cannot be set (the fd is then closed).
  void adopt_connection(int fd);

  // shutdown()
  //
  // Any thread: makes a call blocked on this connection fail promptly with RespError and every
  // later connect() fail ("interrupted") until resume().
  void shutdown();
  void resume();

  // command()
  //
  // Sends one command of binary-safe arguments and returns its reply. Throws RespError for a
  // connection or protocol failure, a reply over max_reply_bytes (refused before it is
  // allocated), or no whole reply within io_timeout; the connection is then closed.
  RespReply command(const std::vector<std::string_view>& args);

  // set_many()
  //
  // SET keys[i] to the lens[i] bytes at bufs[i], pipelined; returns 1 per key answered "+OK", 0
  // per key the server refused (its message in *first_error, e.g. an OOM error under
  // maxmemory). Throws RespError for a connection or protocol failure (a reply other than
  // +OK or an error, or over kSmallReplyBytes) or when the batch is not done within io_timeout.
  std::vector<std::uint8_t> set_many(std::span<const std::string> keys, std::span<void* const> bufs,
                                     std::span<const std::size_t> lens,
                                     std::string* first_error = nullptr);

  // get_many()
  //
  // GET keys[i] into bufs[i], pipelined; 1 per key whose value is exactly lens[i] bytes (then
  // in bufs[i]); 0 for a missing key (bufs[i] untouched) or a value of another length up to
  // max(lens[i], kMaxDiscardBytes) (its bytes are read and dropped, never stored, bufs[i]
  // untouched, the reason in *first_error). Throws RespError for a connection or protocol
  // failure, a value longer than that (refused before it is read), or when the batch is not done
  // within io_timeout (destinations of keys not yet answered are untouched; the one being
  // received may be partly written).
  std::vector<std::uint8_t> get_many(std::span<const std::string> keys, std::span<void* const> bufs,
                                     std::span<const std::size_t> lens,
                                     std::string* first_error = nullptr);

  // exists_many() / del_many()
  //
  // EXISTS / DEL of each key, pipelined: 1 when present / deleted, 0 otherwise. A server error
  // reply, a reply that is not an integer (or is over kSmallReplyBytes), a connection failure
  // or no answer within io_timeout throws RespError (the batch cannot be answered).
  std::vector<std::uint8_t> exists_many(std::span<const std::string> keys);
  std::vector<std::uint8_t> del_many(std::span<const std::string> keys);

  // Counters since construction: connections made, calls failed, and idle connections found
  // closed by the server (or carrying unsolicited bytes) and replaced before a call.
  std::uint64_t connects() const { return connects_.load(std::memory_order_relaxed); }
  std::uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  std::uint64_t idle_drops() const { return idle_drops_.load(std::memory_order_relaxed); }

  const RespEndpoint& endpoint() const { return endpoint_; }

 private:
  // Pipelines `n` commands in windows (bounded bytes in flight), calling send(i) to queue the
  // i-th command's iovecs and read(i) to consume its reply.
  template <class Send, class Read>
  void pipeline(std::size_t n, Send&& send, Read&& read);

  // `command` (EXISTS or DEL) of each key, pipelined: 1 where the integer reply is positive.
  std::vector<std::uint8_t> count_per_key(const char* command, std::span<const std::string> keys);

  // One request: sets its deadline (io_timeout from now) and, should anything leave the
  // request by an exception, closes the connection, so that no later call reads the rest of a
  // reply it did not ask for.
  class Request;

  [[noreturn]] void fail(const std::string& what);
  // connect() within the current request's deadline.
  void connect_now();
  bool connect_one(int fd, const ::addrinfo* ai, std::string* error);
  // Connects when there is no connection, or when the idle one is dead (idle_connection_ok()).
  void ensure_connected();
  // Between calls the server has nothing to say: a readable, hung-up or failed socket means it
  // closed the connection (or we are out of sync with it). One poll() of timeout 0.
  bool idle_connection_ok() const;
  // Appends "*<argc>\r\n" and one "$<len>\r\n<arg>\r\n" per argument to out_ (copied).
  void queue_command(const std::vector<std::string_view>& args);
  // Appends a command whose last argument is sent from `payload` without a copy.
  void queue_command_with_payload(const std::vector<std::string_view>& head, const void* payload,
                                  std::size_t payload_len);
  void flush();
  // Reads the next reply; bulk payloads into RespReply::str. A reply that would hold more than
  // `max_bytes` (bulk bytes, lines, sizeof(RespReply) per array element) is refused before it
  // is allocated.
  RespReply read_reply(std::size_t max_bytes);
  // Reads a bulk reply's header: its length, or -1 for a null bulk; throws on another type
  // unless it is an error (then *error_text is set and -2 is returned).
  std::int64_t read_bulk_header(std::string* error_text);
  std::string read_line();
  void read_exact(void* dst, std::size_t n);
  void discard(std::size_t n);
  void fill();  // at least one more byte in in_
  // Waits for `events` until the request's deadline; fails past it.
  void wait(short events);
  // Milliseconds left of the request (rounded up; 0 when it is over).
  int remaining_ms() const;

  const RespEndpoint endpoint_;
  std::chrono::steady_clock::time_point deadline_{};  // of the request in progress
  int fd_ = -1;
  std::mutex fd_mu_;  // guards closing fd_ against shutdown() from another thread
  std::atomic<bool> interrupted_{false};

  // Outgoing: owned bytes plus iovecs pointing into them or into caller buffers.
  std::string out_;
  struct Piece {
    const void* external = nullptr;  // nullptr: out_[offset, offset + len)
    std::size_t offset = 0;
    std::size_t len = 0;
  };
  std::vector<Piece> pieces_;
  // Incoming: in_[in_pos_, in_end_) is buffered.
  std::vector<char> in_;
  std::size_t in_pos_ = 0;
  std::size_t in_end_ = 0;

  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::uint64_t> idle_drops_{0};
};

}  // namespace lmcache::resp
