// File: lmcache/fault/internal/campaign_watchdog.h
//
// Internal to the campaign: the accounting that does not depend on a task's outcome. The
// Watchdog notices a task that never completes, or a driver stuck inside a call, while the
// driver cannot (it may be the one stuck); check_process_resources() compares the process's fds
// and threads after a stack was closed with those before it was built.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "lmcache/core/process_resources.h"
#include "lmcache/fault/internal/campaign_ledger.h"
#include "lmcache/fault/internal/campaign_workload.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache::fault_internal {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // Extra state for the message (the stack's view of the task whose first key is `key0`);
  // called on the watchdog thread, which must not block on a stuck driver.
  using Describe = std::function<std::string(std::optional<std::size_t> key0)>;
  // Reports a firing (once per campaign is the caller's business); watchdog thread.
  using Fire = std::function<void(const std::string& message)>;

  Watchdog(std::chrono::milliseconds task_timeout, Describe describe, Fire fire);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // start() / stop()
  //
  // Starts the thread that checks every 100 ms; stop() is idempotent and joins it.
  void start();
  void stop();

  // watch() / submitted() / forget()
  //
  // A task enters the watch before its submit, is marked submitted with its wrapper id, and
  // leaves when it is judged (or hung on purpose). A watched task older than the task timeout
  // fires the watchdog.
  void watch(std::uint64_t serial, OpKind kind, std::size_t key0);
  void submitted(std::uint64_t serial, TaskId id);
  void forget(std::uint64_t serial);

  // Call
  //
  // While it lives, the driver is inside `what`; longer than `timeout` fires the watchdog.
  class Call {
   public:
    Call(Watchdog& w, std::string what, std::chrono::milliseconds timeout);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    Watchdog& w_;
  };

 private:
  struct Watch {
    OpKind kind;
    std::size_t key0;
    TaskId id = 0;
    bool submitted = false;
    Clock::time_point since;
  };

  void loop();
  void check();

  const std::chrono::milliseconds task_timeout_;
  const Describe describe_;
  const Fire fire_;

  std::mutex mu_;  // the watch and the current call
  std::map<std::uint64_t, Watch> watch_;
  std::string call_;
  Clock::time_point call_since_;
  std::chrono::milliseconds call_timeout_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

// check_process_resources()
//
// The no_fd_leak and no_thread_leak invariants: after close() the process holds no more fds
// and threads than `before` (the stack was built), allowing a joined thread a moment to leave.
void check_process_resources(Ledger& ledger, const ProcessResources& before);

}  // namespace lmcache::fault_internal
