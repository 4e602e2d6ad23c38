#include "lmcache/core/event_notifier.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace lmcache {

EventNotifier::EventNotifier() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_.load() < 0) {
    throw std::system_error(errno, std::generic_category(), "eventfd");
  }
}

EventNotifier::~EventNotifier() { close(); }

void EventNotifier::notify() {
  int fd = this->fd();
  if (fd < 0) return;
  std::uint64_t one = 1;
  for (;;) {
    ssize_t n = ::write(fd, &one, sizeof one);
    if (n == static_cast<ssize_t>(sizeof one)) return;
    if (n < 0 && errno == EINTR) continue;
    // EAGAIN means the counter is at its maximum: the consumer will still wake up.
    if (n < 0 && errno == EAGAIN) return;
    throw std::system_error(errno, std::generic_category(), "eventfd notify");
  }
}

std::uint64_t EventNotifier::consume() { return consume_fd(fd()); }

void EventNotifier::close() {
  int fd = fd_.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0) ::close(fd);
}

std::uint64_t consume_fd(int fd) {
  if (fd < 0) return 0;
  std::uint64_t value = 0;
  for (;;) {
    ssize_t n = ::read(fd, &value, sizeof value);
    if (n == static_cast<ssize_t>(sizeof value)) return value;
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Rounded up: a wait never gives up before its timeout.
    auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (rc > 0) return (p.revents & POLLIN) != 0;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool wait_readable_spinning(int fd, std::chrono::microseconds spin,
                            std::chrono::milliseconds timeout, std::chrono::nanoseconds* spun) {
  if (fd < 0) return false;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  if (spin.count() > 0) {
    const Clock::time_point until = start + std::min<Clock::duration>(spin, timeout);
    pollfd p{fd, POLLIN, 0};
    Clock::time_point now = start;
    do {
      p.revents = 0;
      if (::poll(&p, 1, 0) > 0) {  // readable, or an error (a closed fd): no use spinning on
        if (spun) *spun += Clock::now() - start;
        return (p.revents & POLLIN) != 0;
      }
      now = Clock::now();
    } while (now < until);
    if (spun) *spun += now - start;
  }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(start + timeout - Clock::now());
  return wait_readable(fd, std::max(left, std::chrono::milliseconds(0)));
}

}  // namespace lmcache
