// One RESP2 connection: output (queued commands, zero-copy payloads), input (a bounded buffer
// and replies parsed against their bounds), the request's deadline and the pipelined commands.
//
// Longer than ~600 lines on purpose: every part shares the connection's buffers and its one
// failure path (fail(): count, close, throw), which is what keeps a bad reply from leaving the
// connection out of step; split, the buffers would be handed between files.
#include "lmcache/resp/resp_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <exception>
#include <system_error>

namespace lmcache::resp {

namespace {

// Pipelining windows: at most this many commands, or this many payload bytes, in flight before
// their replies are read, so that neither side buffers a whole large batch.
constexpr std::size_t kWindowCommands = 64;
constexpr std::size_t kWindowBytes = std::size_t{64} << 20;
constexpr std::size_t kInitialBuffer = 64 * 1024;
constexpr std::size_t kMaxLine = 64 * 1024;  // no reply header or simple string is longer
constexpr int kMaxDepth = 8;                 // nested arrays we accept

std::string errno_text(int err) { return std::strerror(err); }

bool parse_int(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

int timeout_ms(std::chrono::milliseconds t) {
  return t.count() > INT_MAX ? INT_MAX : static_cast<int>(std::max<long long>(t.count(), 0));
}

// A deadline `t` from now, clamped so that a huge io_timeout cannot overflow the clock.
std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds t) {
  constexpr std::chrono::milliseconds kLongest = std::chrono::hours(24 * 365);
  return std::chrono::steady_clock::now() + std::clamp(t, std::chrono::milliseconds(0), kLongest);
}

}  // namespace

class RespClient::Request {
 public:
  explicit Request(RespClient& c) : c_(c), exceptions_(std::uncaught_exceptions()) {
    c_.deadline_ = deadline_after(c_.endpoint_.io_timeout);
  }
  ~Request() {
    // fail() has already closed it for a RespError; anything else (std::bad_alloc, a caller's
    // exception) must not leave a half-read reply on a connection the next call would reuse.
    if (std::uncaught_exceptions() > exceptions_) c_.disconnect();
  }
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

 private:
  RespClient& c_;
  const int exceptions_;
};

std::string RespReply::to_string() const {
  switch (type) {
    case Type::kSimple:
      return "+" + str;
    case Type::kError:
      return "-" + str;
    case Type::kInteger:
      return ":" + std::to_string(integer);
    case Type::kBulk:
      return "$" + std::to_string(str.size()) + ":" + str;
    case Type::kNull:
      return "(nil)";
    case Type::kArray: {
      std::string s = "[";
      for (std::size_t i = 0; i < elements.size(); ++i) {
        s += (i ? ", " : "") + elements[i].to_string();
      }
      return s + "]";
    }
  }
  return "?";
}

RespClient::RespClient(RespEndpoint endpoint) : endpoint_(std::move(endpoint)) {
  in_.resize(kInitialBuffer);
}

RespClient::~RespClient() { disconnect(); }

void RespClient::disconnect() {
  std::lock_guard lock(fd_mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  in_pos_ = in_end_ = 0;
  out_.clear();
  pieces_.clear();
}

void RespClient::adopt_connection(int fd) {
  if (fd < 0) {
    throw std::invalid_argument("RespClient::adopt_connection: bad fd " + std::to_string(fd));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "RespClient::adopt_connection");
  }
  disconnect();
  std::lock_guard lock(fd_mu_);
  fd_ = fd;
}

void RespClient::shutdown() {
  interrupted_.store(true, std::memory_order_release);
  std::lock_guard lock(fd_mu_);
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void RespClient::resume() { interrupted_.store(false, std::memory_order_release); }

void RespClient::fail(const std::string& what) {
  failures_.fetch_add(1, std::memory_order_relaxed);
  disconnect();
  throw RespError("resp " + endpoint_.host + ":" + std::to_string(endpoint_.port) + ": " + what);
}

// Connects `fd` to `ai` within connect_timeout and the request's deadline; the reason in
// *error when it fails.
bool RespClient::connect_one(int fd, const addrinfo* ai, std::string* error) {
  int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
  if (rc == 0) return true;
  if (errno != EINPROGRESS) {
    *error = "connect: " + errno_text(errno);
    return false;
  }
  pollfd p{fd, POLLOUT, 0};
  const auto start = std::chrono::steady_clock::now();
  const auto attempt_deadline = std::min(deadline_after(endpoint_.connect_timeout), deadline_);
  do {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        attempt_deadline - std::chrono::steady_clock::now());
    rc = left.count() <= 0 ? 0 : ::poll(&p, 1, timeout_ms(left));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) {
    const auto limit = std::chrono::ceil<std::chrono::milliseconds>(attempt_deadline - start);
    *error =
        "connect timed out after " + std::to_string(std::max<long long>(limit.count(), 0)) + " ms";
    return false;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  if (rc < 0) {
    err = errno;
  } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    err = errno;
  }
  if (err != 0) {
    *error = "connect: " + errno_text(err);
    return false;
  }
  return true;
}

void RespClient::connect() {
  Request request(*this);
  connect_now();
}

void RespClient::connect_now() {
  if (fd_ >= 0) return;
  if (interrupted_.load(std::memory_order_acquire)) fail("interrupted (connector closing)");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint_.port);
  if (int rc = ::getaddrinfo(endpoint_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    fail(std::string("cannot resolve host: ") + ::gai_strerror(rc));
  }
  std::string error = "no address";
  bool ok = false;
  for (addrinfo* ai = found; ai != nullptr && !ok; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = "socket: " + errno_text(errno);
      continue;
    }
    {
      std::lock_guard lock(fd_mu_);
      fd_ = fd;  // shutdown() can now reach a connect in progress
    }
    ok = !interrupted_.load(std::memory_order_acquire) && connect_one(fd, ai, &error);
    if (!ok) disconnect();
  }
  ::freeaddrinfo(found);
  if (interrupted_.load(std::memory_order_acquire)) fail("interrupted (connector closing)");
  if (!ok) fail(error);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  connects_.fetch_add(1, std::memory_order_relaxed);
  if (!endpoint_.password.empty()) {
    // Straight on the new socket, not through command(): its idle check would take an early
    // refusal the server sends at accept ("max number of clients") for a dead connection and
    // reconnect, where the caller must see the refusal.
    if (endpoint_.username.empty()) {
      queue_command({"AUTH", endpoint_.password});
    } else {
      queue_command({"AUTH", endpoint_.username, endpoint_.password});
    }
    flush();
    RespReply r = read_reply(kSmallReplyBytes);
    if (r.type != RespReply::Type::kSimple || r.str != "OK") {
      fail("AUTH failed: " + r.to_string().substr(0, 64));
    }
  }
}

bool RespClient::idle_connection_ok() const {
  if (in_pos_ != in_end_) return false;  // bytes no request asked for
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, 0);
  } while (rc < 0 && errno == EINTR);
  return rc == 0;
}

void RespClient::ensure_connected() {
  if (fd_ >= 0 && !idle_connection_ok()) {
    idle_drops_.fetch_add(1, std::memory_order_relaxed);
    disconnect();
  }
  if (fd_ < 0) connect_now();
}

int RespClient::remaining_ms() const {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : timeout_ms(left);
}

void RespClient::wait(short events) {
  pollfd p{fd_, events, 0};
  int rc = 0;
  for (;;) {
    const int left = remaining_ms();
    if (left == 0) break;  // rc == 0: the deadline has passed
    rc = ::poll(&p, 1, left);
    if (rc >= 0 || errno != EINTR) break;
  }
  if (interrupted_.load(std::memory_order_acquire)) fail("interrupted (connector closing)");
  if (rc == 0) {
    fail("no answer within " + std::to_string(endpoint_.io_timeout.count()) +
         " ms (the request's deadline)");
  }
  if (rc < 0) fail("poll: " + errno_text(errno));
  if ((p.revents & (POLLERR | POLLNVAL)) != 0 && (p.revents & events) == 0) {
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    fail(err != 0 ? "connection error: " + errno_text(err) : std::string("connection error"));
  }
}

// --- output ----------------------------------------------------------------------------------

void RespClient::queue_command(const std::vector<std::string_view>& args) {
  const std::size_t offset = out_.size();
  out_ += '*';
  out_ += std::to_string(args.size());
  out_ += "\r\n";
  for (std::string_view a : args) {
    out_ += '$';
    out_ += std::to_string(a.size());
    out_ += "\r\n";
    out_.append(a.data(), a.size());
    out_ += "\r\n";
  }
  pieces_.push_back(Piece{nullptr, offset, out_.size() - offset});
}

void RespClient::queue_command_with_payload(const std::vector<std::string_view>& head,
                                            const void* payload, std::size_t payload_len) {
  std::size_t offset = out_.size();
  out_ += '*';
  out_ += std::to_string(head.size() + 1);
  out_ += "\r\n";
  for (std::string_view a : head) {
    out_ += '$';
    out_ += std::to_string(a.size());
    out_ += "\r\n";
    out_.append(a.data(), a.size());
    out_ += "\r\n";
  }
  out_ += '$';
  out_ += std::to_string(payload_len);
  out_ += "\r\n";
  pieces_.push_back(Piece{nullptr, offset, out_.size() - offset});
  if (payload_len > 0) pieces_.push_back(Piece{payload, 0, payload_len});
  offset = out_.size();
  out_ += "\r\n";
  pieces_.push_back(Piece{nullptr, offset, 2});
}

void RespClient::flush() {
  std::vector<iovec> iov;
  iov.reserve(pieces_.size());
  for (const Piece& p : pieces_) {
    const char* base =
        p.external != nullptr ? static_cast<const char*>(p.external) : out_.data() + p.offset;
    iov.push_back(iovec{const_cast<char*>(base), p.len});
  }
  std::size_t first = 0;
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<std::size_t>(iov.size() - first, IOV_MAX);
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait(POLLOUT);
        continue;
      }
      fail("send: " + errno_text(errno));
    }
    auto left = static_cast<std::size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) {
      left -= iov[first].iov_len;
      ++first;
    }
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  out_.clear();
  pieces_.clear();
}

// --- input -----------------------------------------------------------------------------------

void RespClient::fill() {
  if (in_pos_ == in_end_) in_pos_ = in_end_ = 0;
  if (in_end_ == in_.size()) {
    if (in_pos_ > 0) {
      std::memmove(in_.data(), in_.data() + in_pos_, in_end_ - in_pos_);
      in_end_ -= in_pos_;
      in_pos_ = 0;
    } else {
      in_.resize(in_.size() * 2);
    }
  }
  for (;;) {
    const ssize_t n = ::recv(fd_, in_.data() + in_end_, in_.size() - in_end_, 0);
    if (n > 0) {
      in_end_ += static_cast<std::size_t>(n);
      return;
    }
    if (n == 0) fail("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait(POLLIN);
      continue;
    }
    fail("recv: " + errno_text(errno));
  }
}

std::string RespClient::read_line() {
  for (;;) {
    for (std::size_t i = in_pos_ + 1; i < in_end_; ++i) {
      if (in_[i] == '\n' && in_[i - 1] == '\r') {
        std::string line(in_.data() + in_pos_, i - 1 - in_pos_);
        in_pos_ = i + 1;
        return line;
      }
    }
    if (in_end_ - in_pos_ > kMaxLine) fail("protocol error: reply line longer than 64 KiB");
    fill();
  }
}

void RespClient::read_exact(void* dst, std::size_t n) {
  auto* out = static_cast<char*>(dst);
  const std::size_t buffered = std::min(n, in_end_ - in_pos_);
  if (buffered > 0) {
    std::memcpy(out, in_.data() + in_pos_, buffered);
    in_pos_ += buffered;
  }
  std::size_t done = buffered;
  while (done < n) {  // the rest straight into the destination
    const ssize_t r = ::recv(fd_, out + done, n - done, 0);
    if (r > 0) {
      done += static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) fail("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait(POLLIN);
      continue;
    }
    fail("recv: " + errno_text(errno));
  }
}

void RespClient::discard(std::size_t n) {
  // In place, through in_: never an allocation of the peer's size.
  while (n > 0) {
    if (in_pos_ == in_end_) fill();
    const std::size_t take = std::min(n, in_end_ - in_pos_);
    in_pos_ += take;
    n -= take;
  }
}

RespReply RespClient::read_reply(std::size_t max_bytes) {
  struct Reader {
    RespClient& c;
    const std::size_t max;
    std::size_t used = 0;
    // Counts `n` bytes of `what` against the reply's bound, before they are allocated.
    void charge(std::uint64_t n, const char* what) {
      if (n > max - used) {
        c.fail("protocol error: " + std::string(what) + " of " + std::to_string(n) +
               " bytes takes the reply over its limit of " + std::to_string(max) + " bytes");
      }
      used += static_cast<std::size_t>(n);
    }
    RespReply read(int depth) {
      if (depth > kMaxDepth) c.fail("protocol error: arrays nested too deeply");
      const std::string line = c.read_line();
      if (line.empty()) c.fail("protocol error: empty reply line");
      charge(line.size(), "a line");
      RespReply r;
      const std::string_view rest(line.data() + 1, line.size() - 1);
      std::int64_t n = 0;
      switch (line[0]) {
        case '+':
          r.type = RespReply::Type::kSimple;
          r.str = rest;
          return r;
        case '-':
          r.type = RespReply::Type::kError;
          r.str = rest;
          return r;
        case ':':
          if (!parse_int(rest, &n))
            c.fail("protocol error: bad integer reply '" + line.substr(0, 64) + "'");
          r.type = RespReply::Type::kInteger;
          r.integer = n;
          return r;
        case '$': {
          if (!parse_int(rest, &n) || n < -1)
            c.fail("protocol error: bad bulk length '" + line.substr(0, 64) + "'");
          if (n == -1) return r;  // null bulk
          charge(static_cast<std::uint64_t>(n), "a bulk string");
          r.type = RespReply::Type::kBulk;
          r.str.resize(static_cast<std::size_t>(n));
          c.read_exact(r.str.data(), r.str.size());
          char crlf[2];
          c.read_exact(crlf, 2);
          if (crlf[0] != '\r' || crlf[1] != '\n') c.fail("protocol error: bulk not ended by CRLF");
          return r;
        }
        case '*':
          if (!parse_int(rest, &n) || n < -1)
            c.fail("protocol error: bad array length '" + line.substr(0, 64) + "'");
          if (n == -1) return r;
          if (static_cast<std::uint64_t>(n) > (max - used) / sizeof(RespReply)) {
            c.fail("protocol error: an array of " + std::to_string(n) +
                   " elements takes the reply over its limit of " + std::to_string(max) + " bytes");
          }
          charge(static_cast<std::uint64_t>(n) * sizeof(RespReply), "an array");
          r.type = RespReply::Type::kArray;
          r.elements.reserve(static_cast<std::size_t>(n));
          for (std::int64_t i = 0; i < n; ++i) r.elements.push_back(read(depth + 1));
          return r;
        default:
          c.fail("protocol error: unexpected reply '" + line.substr(0, 64) + "'");
      }
    }
  };
  return Reader{*this, max_bytes}.read(0);
}

std::int64_t RespClient::read_bulk_header(std::string* error_text) {
  const std::string line = read_line();
  if (!line.empty() && line[0] == '-') {
    *error_text = line.substr(1);
    return -2;
  }
  if (line.empty() || line[0] != '$') {
    fail("protocol error: expected a bulk reply, got '" + line.substr(0, 64) + "'");
  }
  std::int64_t n = 0;
  if (!parse_int(std::string_view(line).substr(1), &n) || n < -1) {
    fail("protocol error: bad bulk length '" + line.substr(0, 64) + "'");
  }
  return n;
}

// --- commands --------------------------------------------------------------------------------

RespReply RespClient::command(const std::vector<std::string_view>& args) {
  Request request(*this);
  ensure_connected();
  queue_command(args);
  flush();
  return read_reply(endpoint_.max_reply_bytes);
}

template <class Send, class Read>
void RespClient::pipeline(std::size_t n, Send&& send, Read&& read) {
  Request request(*this);  // one deadline for every window
  ensure_connected();
  std::size_t i = 0;
  while (i < n) {
    std::size_t j = i;
    std::size_t bytes = 0;
    while (j < n && j - i < kWindowCommands && (j == i || bytes < kWindowBytes)) {
      bytes += send(j);
      ++j;
    }
    flush();
    for (std::size_t k = i; k < j; ++k) read(k);
    i = j;
  }
}

std::vector<std::uint8_t> RespClient::set_many(std::span<const std::string> keys,
                                               std::span<void* const> bufs,
                                               std::span<const std::size_t> lens,
                                               std::string* first_error) {
  std::vector<std::uint8_t> ok(keys.size(), 0);
  pipeline(
      keys.size(),
      [&](std::size_t i) {
        queue_command_with_payload({"SET", keys[i]}, bufs[i], lens[i]);
        return lens[i];
      },
      [&](std::size_t i) {
        RespReply r = read_reply(kSmallReplyBytes);
        if (r.type == RespReply::Type::kSimple && r.str == "OK") {
          ok[i] = 1;
        } else if (r.is_error()) {
          if (first_error != nullptr && first_error->empty()) {
            *first_error = "SET " + keys[i] + ": " + r.str;
          }
        } else {
          fail("protocol error: SET answered " + r.to_string().substr(0, 64));
        }
      });
  return ok;
}

std::vector<std::uint8_t> RespClient::get_many(std::span<const std::string> keys,
                                               std::span<void* const> bufs,
                                               std::span<const std::size_t> lens,
                                               std::string* first_error) {
  std::vector<std::uint8_t> hit(keys.size(), 0);
  auto note = [&](std::string text) {
    if (first_error != nullptr && first_error->empty()) *first_error = std::move(text);
  };
  pipeline(
      keys.size(),
      [&](std::size_t i) {
        queue_command({"GET", keys[i]});
        return lens[i];
      },
      [&](std::size_t i) {
        std::string error;
        const std::int64_t n = read_bulk_header(&error);
        if (n == -2) {
          note("GET " + keys[i] + ": " + error);
          return;
        }
        if (n == -1) return;  // missing
        const auto size = static_cast<std::uint64_t>(n);
        if (size > std::max<std::uint64_t>(lens[i], kMaxDiscardBytes)) {
          fail("protocol error: GET " + keys[i] + " answered a value of " + std::to_string(n) +
               " bytes, expected " + std::to_string(lens[i]) + " (at most " +
               std::to_string(kMaxDiscardBytes) + " are read to be dropped)");
        }
        if (size == lens[i]) {
          read_exact(bufs[i], lens[i]);
        } else {
          discard(static_cast<std::size_t>(size));
        }
        char crlf[2];
        read_exact(crlf, 2);
        if (crlf[0] != '\r' || crlf[1] != '\n') fail("protocol error: bulk not ended by CRLF");
        if (size != lens[i]) {
          note("GET " + keys[i] + ": the value has " + std::to_string(n) + " bytes, expected " +
               std::to_string(lens[i]));
          return;
        }
        hit[i] = 1;
      });
  return hit;
}

std::vector<std::uint8_t> RespClient::exists_many(std::span<const std::string> keys) {
  return count_per_key("EXISTS", keys);
}

std::vector<std::uint8_t> RespClient::del_many(std::span<const std::string> keys) {
  return count_per_key("DEL", keys);
}

std::vector<std::uint8_t> RespClient::count_per_key(const char* command,
                                                    std::span<const std::string> keys) {
  std::vector<std::uint8_t> out(keys.size(), 0);
  std::string error;
  pipeline(
      keys.size(),
      [&](std::size_t i) {
        queue_command({command, keys[i]});
        return std::size_t{0};
      },
      [&](std::size_t i) {
        RespReply r = read_reply(kSmallReplyBytes);
        if (r.type == RespReply::Type::kInteger) {
          out[i] = r.integer > 0 ? 1 : 0;
        } else if (r.is_error()) {
          if (error.empty()) error = std::string(command) + " " + keys[i] + ": " + r.str;
        } else {
          fail(std::string("protocol error: ") + command + " answered " +
               r.to_string().substr(0, 64));
        }
      });
  if (!error.empty()) fail(error);
  return out;
}

}  // namespace lmcache::resp
