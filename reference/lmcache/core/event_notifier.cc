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
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    int rc = ::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count())));
    if (rc > 0) return (p.revents & POLLIN) != 0;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace lmcache
