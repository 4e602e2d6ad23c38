#include "lmcache/core/poll_loop.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <stdexcept>
#include <utility>

namespace lmcache {

PollLoop::PollLoop(std::vector<int> fds, std::vector<Step> steps, PollLoopOptions options,
                   NextDeadline next_deadline)
    : fds_(std::move(fds)),
      steps_(std::move(steps)),
      options_(options),
      next_deadline_(std::move(next_deadline)) {
  for (std::size_t i = 0; i < fds_.size(); ++i) {
    if (fds_[i] < 0) {
      throw std::invalid_argument("PollLoop: fd " + std::to_string(i) + " is negative (" +
                                  std::to_string(fds_[i]) + ")");
    }
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (!steps_[i])
      throw std::invalid_argument("PollLoop: scan step " + std::to_string(i) + " is empty");
  }
  if (options_.max_wait.count() <= 0) {
    throw std::invalid_argument("PollLoop: max_wait must be positive (got " +
                                std::to_string(options_.max_wait.count()) + " ms)");
  }
}

PollLoop::~PollLoop() { stop(); }

void PollLoop::start() {
  std::lock_guard lock(lifecycle_mu_);
  if (started_ || stopped_) {
    throw std::logic_error(stopped_ ? "PollLoop::start() after stop()"
                                    : "PollLoop::start() called twice");
  }
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void PollLoop::wake() {
  std::lock_guard lock(wake_mu_);
  if (!wake_closed_) wake_.notify();
}

void PollLoop::stop() {
  std::lock_guard lock(lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  stop_.store(true, std::memory_order_release);
  wake_.notify();
  if (thread_.joinable()) thread_.join();
  std::lock_guard wake_lock(wake_mu_);
  wake_closed_ = true;
  wake_.close();
}

std::uint64_t PollLoop::exceptions_swallowed() const {
  std::lock_guard lock(error_mu_);
  return exceptions_;
}

std::string PollLoop::last_exception() const {
  std::lock_guard lock(error_mu_);
  return last_exception_;
}

void PollLoop::record_exception(std::string what) {
  std::lock_guard lock(error_mu_);
  ++exceptions_;
  last_exception_ = std::move(what);
}

void PollLoop::run() {
  std::vector<pollfd> pfds;
  pfds.reserve(fds_.size() + 1);
  for (int fd : fds_) pfds.push_back({fd, POLLIN, 0});
  pfds.push_back({wake_.fd(), POLLIN, 0});
  const auto max_wait = options_.max_wait;
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  while (!stop_.load(std::memory_order_acquire)) {
    auto wait = max_wait;
    if (next_deadline_) {
      const Clock::time_point next = next_deadline_();
      if (next != Clock::time_point::max()) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
        wait = std::clamp(left, std::chrono::milliseconds(0), max_wait);
      }
    }
    const int rc = ::poll(pfds.data(), pfds.size(), static_cast<int>(wait.count()));
    if (rc < 0 && errno != EINTR) continue;
    // Drain the counters *before* scanning: a completion stored after this point signals again.
    // The wake fd is always ours to drain; the others only when options_.consume_fds.
    for (std::size_t i = 0; i < pfds.size(); ++i) {
      pollfd& p = pfds[i];
      const bool ours = i + 1 == pfds.size();
      if ((p.revents & POLLIN) && (ours || options_.consume_fds)) consume_fd(p.fd);
      if (!ours && (p.revents & (POLLERR | POLLNVAL)) && p.fd >= 0) {
        p.fd = -1;  // poll() ignores negative fds
        broken_fds_.fetch_add(1, std::memory_order_acq_rel);
      }
      p.revents = 0;
    }
    if (stop_.load(std::memory_order_acquire)) break;
    for (const Step& step : steps_) {
      try {
        step();
      } catch (const std::exception& e) {
        record_exception(e.what());
      } catch (...) {
        record_exception("an exception not derived from std::exception");
      }
    }
  }
}

}  // namespace lmcache
