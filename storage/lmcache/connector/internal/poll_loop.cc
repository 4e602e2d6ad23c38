#include "lmcache/connector/internal/poll_loop.h"

#include <poll.h>

#include <cerrno>

namespace lmcache::connector_internal {

PollLoop::PollLoop(std::vector<int> fds, Callbacks callbacks)
    : fds_(std::move(fds)), callbacks_(std::move(callbacks)), thread_([this] { run(); }) {}

PollLoop::~PollLoop() { stop(); }

void PollLoop::wake() {
  if (!stop_.load(std::memory_order_acquire)) wake_.notify();
}

void PollLoop::stop() {
  if (stop_.exchange(true, std::memory_order_acq_rel)) return;
  wake_.notify();
  if (thread_.joinable()) thread_.join();
  wake_.close();
}

void PollLoop::run() {
  std::vector<pollfd> p;
  for (int fd : fds_) p.push_back(pollfd{fd, POLLIN, 0});
  p.push_back(pollfd{wake_.fd(), POLLIN, 0});
  std::vector<bool> readable(fds_.size());
  while (!stop_.load(std::memory_order_acquire)) {
    const int timeout = callbacks_.next_timeout_ms();
    const int rc = ::poll(p.data(), p.size(), timeout);
    if (rc < 0 && errno != EINTR) continue;
    if (p.back().revents & POLLIN) wake_.consume();
    if (stop_.load(std::memory_order_acquire)) break;
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      readable[i] = (p[i].revents & POLLIN) != 0;
      if ((p[i].revents & (POLLERR | POLLNVAL)) != 0 && p[i].fd >= 0) {
        p[i].fd = -1;  // poll() skips negative fds
        callbacks_.on_broken(i);
      }
      p[i].revents = 0;
    }
    p.back().revents = 0;
    callbacks_.on_wake(readable);
  }
}

}  // namespace lmcache::connector_internal
