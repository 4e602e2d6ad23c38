// File: lmcache/core/event_notifier.h
//
// EventNotifier owns one Linux eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) in counter mode: notify()
// adds 1 and consume() reads (and so resets) the counter. Many notifies may fold into one
// wake-up, so a consumer must scan all of its pending tasks after every wake-up.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace lmcache {

class EventNotifier {
 public:
  // Throws std::system_error when the eventfd cannot be created.
  EventNotifier();
  ~EventNotifier();
  EventNotifier(const EventNotifier&) = delete;
  EventNotifier& operator=(const EventNotifier&) = delete;

  // fd()
  //
  // The descriptor to poll for POLLIN; -1 once closed.
  int fd() const { return fd_.load(std::memory_order_acquire); }

  // notify()
  //
  // Adds 1 to the counter. A no-op after close(). Throws std::system_error on an unexpected
  // write failure.
  void notify();

  // consume()
  //
  // Reads and resets the counter; returns the count drained (0 when nothing was pending).
  std::uint64_t consume();

  // close()
  //
  // Closes the descriptor. Idempotent. Callers must make sure no other thread still notifies.
  void close();

 private:
  std::atomic<int> fd_;
};

// consume_fd()
//
// Drains the counter of someone else's eventfd; returns the count (0 if none or on EAGAIN).
std::uint64_t consume_fd(int fd);

// wait_readable()
//
// Polls `fd` for POLLIN up to `timeout`; true when it became readable.
bool wait_readable(int fd, std::chrono::milliseconds timeout);

// wait_readable_spinning()
//
// As wait_readable(), but first re-checks `fd` without sleeping (poll() with a zero timeout, in
// a loop) for up to `spin`, then sleeps in poll() for what is left of `timeout`. A sleeping
// thread is woken by the kernel, and where an idle vCPU wakes slowly (a VM: tens of µs per
// wake-up) an event that comes within `spin` is seen that much sooner, for up to `spin` of CPU
// per call. When `spun` is given, the time spent re-checking is added to it (the CPU cost).
// spin <= 0 is wait_readable().
bool wait_readable_spinning(int fd, std::chrono::microseconds spin,
                            std::chrono::milliseconds timeout,
                            std::chrono::nanoseconds* spun = nullptr);

}  // namespace lmcache
