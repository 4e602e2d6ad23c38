#include "lmcache/testing/fake_resp_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <stdexcept>

namespace lmcache::storage_testing {

namespace {

// Parses a RESP length ("*3", "$5") after its type byte; -1 when it is not one.
long long length_of(const std::string& header) {
  long long n = -1;
  if (header.size() < 2) return -1;
  auto [p, ec] = std::from_chars(header.data() + 1, header.data() + header.size(), n);
  return ec == std::errc() && p == header.data() + header.size() ? n : -1;
}

std::string bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

}  // namespace

// --- Conn ------------------------------------------------------------------------------------

std::string FakeRespServer::Conn::line() {
  std::string out;
  char c;
  while (::recv(fd_, &c, 1, 0) == 1) {
    out.push_back(c);
    if (out.size() >= 2 && out[out.size() - 2] == '\r' && out.back() == '\n') {
      out.resize(out.size() - 2);
      return out;
    }
  }
  return {};
}

std::string FakeRespServer::Conn::bytes(std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd_, out.data() + got, n - got, 0);
    if (r <= 0) return {};
    got += static_cast<std::size_t>(r);
  }
  return out;
}

std::vector<std::string> FakeRespServer::Conn::request() {
  const std::string header = line();
  if (header.empty() || header[0] != '*') return {};
  const long long n = length_of(header);
  std::vector<std::string> args;
  for (long long i = 0; i < n; ++i) {
    const std::string len = line();
    const long long size = len.empty() || len[0] != '$' ? -1 : length_of(len);
    if (size < 0) return {};
    args.push_back(bytes(static_cast<std::size_t>(size)));
    if (bytes(2) != "\r\n") return {};
  }
  return args;
}

bool FakeRespServer::Conn::send(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool FakeRespServer::Conn::drip(std::string_view data, std::chrono::microseconds gap) {
  for (char c : data) {
    if (stopping_->load() || ::send(fd_, &c, 1, MSG_NOSIGNAL) != 1) return false;
    std::this_thread::sleep_for(gap);
  }
  return true;
}

void FakeRespServer::Conn::drain() {
  char buf[4096];
  while (::recv(fd_, buf, sizeof(buf), 0) > 0) {
  }
}

void FakeRespServer::Conn::reset_on_close() {
  const linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

// --- FakeRespServer --------------------------------------------------------------------------

FakeRespServer::FakeRespServer(std::function<void(Conn&)> serve) : serve_(std::move(serve)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw std::runtime_error("FakeRespServer: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { accept_loop(); });
}

FakeRespServer::~FakeRespServer() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();  // no connection is added after this
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(conn_threads_);
  }
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
}

resp::RespEndpoint FakeRespServer::endpoint(std::chrono::milliseconds io_timeout) const {
  resp::RespEndpoint e;
  e.host = "127.0.0.1";
  e.port = port_;
  e.io_timeout = io_timeout;
  return e;
}

bool FakeRespServer::wait_closed(int n, std::chrono::milliseconds timeout) const {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (closed_.load() < n) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void FakeRespServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const int index = connections_++;
    std::lock_guard lock(mu_);
    open_fds_.insert(fd);
    conn_threads_.emplace_back([this, fd, index] {
      Conn conn(fd, index, &stop_);
      serve_(conn);
      {
        std::lock_guard lock(mu_);
        open_fds_.erase(fd);
      }
      ::close(fd);
      ++closed_;
    });
  }
}

// --- MiniStore -------------------------------------------------------------------------------

void MiniStore::put(const std::string& key, std::string value) {
  std::lock_guard lock(mu_);
  values_[key] = std::move(value);
}

bool MiniStore::has(const std::string& key) const {
  std::lock_guard lock(mu_);
  return values_.count(key) != 0;
}

std::string MiniStore::answer(const std::vector<std::string>& r) {
  std::lock_guard lock(mu_);
  const std::string& cmd = r[0];
  if (cmd == "PING") return "+PONG\r\n";
  if (cmd == "AUTH") return "+OK\r\n";
  if (cmd == "SET" && r.size() == 3) {
    values_[r[1]] = r[2];
    return "+OK\r\n";
  }
  if (cmd == "GET" && r.size() == 2) {
    auto it = values_.find(r[1]);
    return it == values_.end() ? "$-1\r\n" : bulk(it->second);
  }
  if (cmd == "EXISTS" && r.size() == 2) return values_.count(r[1]) != 0 ? ":1\r\n" : ":0\r\n";
  if (cmd == "DEL" && r.size() == 2) return values_.erase(r[1]) != 0 ? ":1\r\n" : ":0\r\n";
  return "-ERR unknown command\r\n";
}

void MiniStore::serve(FakeRespServer::Conn& conn) { serve(conn, conn.request()); }

void MiniStore::serve(FakeRespServer::Conn& conn, std::vector<std::string> first) {
  for (std::vector<std::string> r = std::move(first); !r.empty(); r = conn.request()) {
    if (!conn.send(answer(r))) return;
  }
}

// --- Hostile replies -------------------------------------------------------------------------

std::vector<HostileReply> hostile_replies() {
  using Then = HostileReply::Then;
  std::string dripped = "$64\r\n" + std::string(64, 'd') + "\r\n";
  return {
      {"bulk_of_4_GiB", "$4294967296\r\n", Then::kWait, "4294967296"},
      {"bulk_of_a_terabyte", "$999999999999\r\n", Then::kWait, "999999999999"},
      {"array_of_1e8", "*100000000\r\n", Then::kWait, "100000000"},
      {"negative_bulk", "$-2\r\n", Then::kWait, "bad bulk length '$-2'"},
      {"negative_array", "*-7\r\n", Then::kWait, "*-7"},
      {"bulk_length_garbage", "$12abc\r\n", Then::kWait, "bad bulk length '$12abc'"},
      {"garbage", "?what\r\n", Then::kWait, "?what"},
      {"integer_garbage", ":12x\r\n", Then::kWait, ":12x"},
      {"endless_line", "+" + std::string(100 * 1024, 'a'), Then::kWait, "longer than 64 KiB"},
      {"truncated", "$10\r\nabc", Then::kClose, "closed by the server"},
      {"reset", "$10\r\nabc", Then::kReset, "reset"},
      {"reset_at_once", "", Then::kReset, "reset"},
      {"drip", dripped, Then::kDrip, "no answer within"},
  };
}

void play(FakeRespServer::Conn& conn, const HostileReply& h) {
  switch (h.then) {
    case HostileReply::Then::kWait:
      conn.send(h.bytes);
      conn.drain();
      return;
    case HostileReply::Then::kClose:
      conn.send(h.bytes);
      return;
    case HostileReply::Then::kReset:
      conn.send(h.bytes);
      conn.reset_on_close();
      return;
    case HostileReply::Then::kDrip:
      if (conn.drip(h.bytes, kDripGap)) conn.drain();
      return;
  }
}

}  // namespace lmcache::storage_testing
