#include "lmcache/conformance/internal/hostile_resp_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>

namespace lmcache::conformance_internal {

namespace {

// Bounds that keep the peer's memory fixed whatever a client sends.
constexpr std::size_t kMaxLine = 1024;            // a header line ("*3", "$1048576")
constexpr std::size_t kMaxCommandName = 32;       // bytes of the first argument kept
constexpr long long kMaxBulk = 1ll << 32;         // a value the peer is willing to skip
constexpr std::size_t kMaxConnections = 256;      // more are closed as they come
constexpr int kPollMillis = 20;                   // how soon the destructor is noticed
constexpr long long kMaxValueReply = 64ll << 20;  // the largest value a Value reply echoes

// The number after a header's type byte ("*3" -> 3); -1 when it is not one.
long long header_length(const std::string& line) {
  long long n = -1;
  if (line.size() < 2) return -1;
  auto [end, ec] = std::from_chars(line.data() + 1, line.data() + line.size(), n);
  return ec == std::errc() && end == line.data() + line.size() ? n : -1;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

}  // namespace

const std::vector<Misbehaviour>& misbehaviours() {
  using Then = Misbehaviour::Then;
  static const std::vector<Misbehaviour> all = {
      {"error_reply", "-ERR the kit's hostile peer refuses this command\r\n", Then::kAgain},
      {"oom_reply", "-OOM command not allowed when used memory > 'maxmemory'.\r\n", Then::kAgain},
      {"wrongtype_reply", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
       Then::kAgain},
      {"null_reply", "$-1\r\n", Then::kAgain},
      {"empty_array", "*0\r\n", Then::kAgain},
      {"bulk_of_4_GiB", "$4294967296\r\n", Then::kSilence},
      {"bulk_of_a_terabyte", "$999999999999\r\n", Then::kSilence},
      {"array_of_1e8", "*100000000\r\n", Then::kSilence},
      {"negative_bulk", "$-2\r\n", Then::kSilence},
      {"negative_array", "*-7\r\n", Then::kSilence},
      {"bulk_length_garbage", "$12abc\r\n", Then::kSilence},
      {"integer_garbage", ":12x\r\n", Then::kSilence},
      {"unknown_type", "?what\r\n", Then::kSilence},
      {"endless_line", "+" + std::string(100 * 1024, 'a'), Then::kSilence},
      {"cut_short", "$10\r\nabc", Then::kClose},
      {"reset_mid_reply", "$10\r\nabc", Then::kReset},
      {"reset_at_once", "", Then::kReset},
      {"hang_up_at_accept", "", Then::kHangUpAtAccept},
      {"not_listening", "", Then::kNotListening},
      {"value_shorter_than_stored", "", Then::kAgain, Misbehaviour::Value::kShorter},
      {"value_longer_than_stored", "", Then::kAgain, Misbehaviour::Value::kLonger},
  };
  return all;
}

// One client connection and the parser state of its request stream.
struct HostileRespPeer::Connection {
  int fd = -1;
  std::string line;           // the header line being read
  long long args_left = 0;    // bulk arguments still to come in this request
  long long args_total = 0;   // bulk arguments of this request
  long long body_left = 0;    // bytes of the current bulk still to skip
  int crlf_left = 0;          // the bulk's "\r\n" still to skip
  bool first_arg = false;     // the next bulk is the command's name
  bool in_name = false;       // the bulk being skipped is the command's name
  std::string command;        // up to kMaxCommandName bytes of it
  std::string out;            // bytes queued for the client
  bool ignore_input = false;  // silenced, closing or resetting: input is read and dropped
  bool close_after_flush = false;
  bool reset_after_flush = false;
};

HostileRespPeer::HostileRespPeer(Misbehaviour misbehaviour)
    : misbehaviour_(std::move(misbehaviour)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error(std::string("hostile RESP peer: cannot listen on 127.0.0.1: ") +
                             std::strerror(err));
  }
  port_ = ntohs(addr.sin_port);
  if (misbehaviour_.then == Misbehaviour::Then::kNotListening) {
    ::close(listen_fd_);  // the port stays this process's choice, with no one behind it
    listen_fd_ = -1;
    return;
  }
  thread_ = std::thread([this] { serve(); });
}

HostileRespPeer::~HostileRespPeer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void HostileRespPeer::answer(Connection& c, const std::string& command) {
  const std::string name = upper(command);
  if (name == "AUTH" || name == "SELECT" || name == "CLIENT") {
    c.out += "+OK\r\n";
    return;
  }
  if (name == "PING") {
    c.out += "+PONG\r\n";
    return;
  }
  if (name == "HELLO") {  // a RESP2 server, as Redis before 6
    c.out += "-ERR unknown command 'HELLO'\r\n";
    return;
  }
  ++data_requests_;
  c.out += misbehaviour_.value == Misbehaviour::Value::kNone ? misbehaviour_.reply : value_reply();
  switch (misbehaviour_.then) {
    case Misbehaviour::Then::kAgain:
      return;
    case Misbehaviour::Then::kSilence:
      c.ignore_input = true;
      return;
    case Misbehaviour::Then::kClose:
      c.ignore_input = c.close_after_flush = true;
      return;
    case Misbehaviour::Then::kReset:
    case Misbehaviour::Then::kHangUpAtAccept:  // never gets here: closed at accept
    case Misbehaviour::Then::kNotListening:    // never gets here: nothing accepted
      c.ignore_input = c.reset_after_flush = true;
      return;
  }
}

std::string HostileRespPeer::value_reply() const {
  if (last_set_bytes_ < 0) return "-ERR the kit's hostile peer has no value yet\r\n";
  if (last_set_bytes_ > kMaxValueReply) return "-ERR the kit's hostile peer: value too large\r\n";
  const long long n = misbehaviour_.value == Misbehaviour::Value::kLonger ? last_set_bytes_ + 1
                      : last_set_bytes_ == 0                              ? 1
                                                                          : last_set_bytes_ / 2;
  return "$" + std::to_string(n) + "\r\n" + std::string(static_cast<std::size_t>(n), 'v') + "\r\n";
}

void HostileRespPeer::consume(Connection& c, const char* data, std::size_t n) {
  // Input the peer cannot parse is answered like a data request, then ignored.
  auto unparsable = [&] {
    answer(c, "");
    c.ignore_input = true;
  };
  std::size_t i = 0;
  while (i < n && !c.ignore_input) {
    if (c.body_left > 0) {
      const auto take =
          static_cast<std::size_t>(std::min<long long>(c.body_left, static_cast<long long>(n - i)));
      if (c.in_name && c.command.size() < kMaxCommandName) {
        c.command.append(data + i, std::min(take, kMaxCommandName - c.command.size()));
      }
      c.body_left -= static_cast<long long>(take);
      i += take;
      if (c.body_left == 0) c.crlf_left = 2;
      continue;
    }
    if (c.crlf_left > 0) {
      --c.crlf_left;
      ++i;
      if (c.crlf_left == 0 && c.args_left == 0) {
        answer(c, c.command);
        c.command.clear();
      }
      continue;
    }
    c.line.push_back(data[i++]);
    if (c.line.size() > kMaxLine) return unparsable();
    if (c.line.size() < 2 || c.line.back() != '\n' || c.line[c.line.size() - 2] != '\r') continue;
    c.line.resize(c.line.size() - 2);
    const std::string line = std::move(c.line);
    c.line.clear();
    if (c.args_left == 0) {
      if (line.empty() || line[0] != '*') {  // an inline command: "PING"
        answer(c, line.substr(0, line.find(' ')));
        continue;
      }
      const long long args = header_length(line);
      if (args < 0) return unparsable();
      c.args_left = c.args_total = args;
      c.first_arg = true;
      c.command.clear();
      continue;
    }
    const long long bulk = line.empty() || line[0] != '$' ? -1 : header_length(line);
    if (bulk < 0 || bulk > kMaxBulk) return unparsable();
    // SET's third argument is the value: its length sizes the Value replies.
    if (c.args_total - c.args_left == 2 && upper(c.command) == "SET") last_set_bytes_ = bulk;
    --c.args_left;
    c.in_name = c.first_arg;
    c.first_arg = false;
    c.body_left = bulk;
    if (bulk == 0) c.crlf_left = 2;
  }
}

void HostileRespPeer::serve() {
  std::vector<std::unique_ptr<Connection>> conns;
  std::vector<pollfd> fds;
  char buf[64 * 1024];
  while (!stop_.load()) {
    fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
    for (const auto& c : conns) {
      fds.push_back(pollfd{c->fd, static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
    }
    if (::poll(fds.data(), fds.size(), kPollMillis) <= 0) continue;
    const std::size_t polled = conns.size();
    if (fds[0].revents & POLLIN) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      const bool hang_up = misbehaviour_.then == Misbehaviour::Then::kHangUpAtAccept;
      if (fd >= 0 && !hang_up && conns.size() < kMaxConnections) {
        conns.push_back(std::make_unique<Connection>());
        conns.back()->fd = fd;
      } else if (fd >= 0) {
        ::close(fd);
      }
    }
    for (std::size_t k = 0; k < polled; ++k) {
      Connection& c = *conns[k];
      bool drop = false;
      if (fds[k + 1].revents & (POLLIN | POLLHUP | POLLERR)) {
        const ssize_t got = ::recv(c.fd, buf, sizeof(buf), 0);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
          drop = true;
        } else if (got > 0 && !c.ignore_input) {
          consume(c, buf, static_cast<std::size_t>(got));
        }
      }
      if (!drop && !c.out.empty()) {
        const ssize_t sent = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (sent > 0) {
          c.out.erase(0, static_cast<std::size_t>(sent));
        } else if (sent < 0 && errno != EAGAIN && errno != EINTR) {
          drop = true;
        }
      }
      if (!drop && c.out.empty() && (c.close_after_flush || c.reset_after_flush)) {
        if (c.reset_after_flush) {
          const linger abort_on_close{1, 0};
          ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof(abort_on_close));
        }
        drop = true;
      }
      if (drop) {
        ::close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(conns, [](const auto& c) { return c->fd < 0; });
  }
  for (const auto& c : conns) ::close(c->fd);
}

}  // namespace lmcache::conformance_internal
