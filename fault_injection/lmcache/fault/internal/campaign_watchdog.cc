#include "lmcache/fault/internal/campaign_watchdog.h"

#include <sstream>
#include <utility>

#include "lmcache/fault/campaign.h"

namespace lmcache::fault_internal {

using namespace std::chrono_literals;

Watchdog::Watchdog(std::chrono::milliseconds task_timeout, Describe describe, Fire fire)
    : task_timeout_(task_timeout), describe_(std::move(describe)), fire_(std::move(fire)) {}

Watchdog::~Watchdog() { stop(); }

void Watchdog::start() {
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::stop() {
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::watch(std::uint64_t serial, OpKind kind, std::size_t key0) {
  std::lock_guard lock(mu_);
  watch_[serial] = Watch{kind, key0, 0, false, Clock::now()};
}

void Watchdog::submitted(std::uint64_t serial, TaskId id) {
  std::lock_guard lock(mu_);
  auto& w = watch_[serial];
  w.id = id;
  w.submitted = true;
}

void Watchdog::forget(std::uint64_t serial) {
  std::lock_guard lock(mu_);
  watch_.erase(serial);
}

Watchdog::Call::Call(Watchdog& w, std::string what, std::chrono::milliseconds timeout) : w_(w) {
  std::lock_guard lock(w_.mu_);
  w_.call_ = std::move(what);
  w_.call_since_ = Clock::now();
  w_.call_timeout_ = timeout;
}

Watchdog::Call::~Call() {
  std::lock_guard lock(w_.mu_);
  w_.call_.clear();
}

void Watchdog::loop() {
  std::unique_lock lock(stop_mu_);
  while (!stop_) {
    stop_cv_.wait_for(lock, 100ms);
    if (stop_) break;
    lock.unlock();
    check();
    lock.lock();
  }
}

void Watchdog::check() {
  const auto now = Clock::now();
  std::string message;
  std::optional<std::size_t> key0;
  {
    std::lock_guard lock(mu_);
    for (const auto& [serial, w] : watch_) {
      if (now - w.since <= task_timeout_) continue;
      std::ostringstream m;
      m << op_name(w.kind) << " task #" << serial;
      if (w.submitted) {
        m << " (wrapper id " << w.id << ") has not completed after "
          << std::chrono::duration<double>(now - w.since).count()
          << " s; campaign phase: submitted, waiting for its completion";
      } else {
        m << " is still inside its submit call after "
          << std::chrono::duration<double>(now - w.since).count() << " s";
      }
      message = m.str();
      key0 = w.key0;
      break;
    }
    if (message.empty() && !call_.empty() && now - call_since_ > call_timeout_) {
      message = "the driver is stuck in " + call_ + " for " +
                std::to_string(std::chrono::duration<double>(now - call_since_).count()) + " s";
    }
  }
  if (message.empty()) return;
  if (describe_) message += describe_(key0);
  fire_(message);
}

void check_process_resources(Ledger& ledger, const ProcessResources& before) {
  const ProcessResources after = wait_for_resources(before, 1s);
  ledger.check(after.fds <= before.fds, fault::invariant::kNoFdLeak, [&] {
    return "after close() the process has " + std::to_string(after.fds) + " open fds, " +
           std::to_string(before.fds) + " before the stack was built";
  });
  ledger.check(after.threads <= before.threads, fault::invariant::kNoThreadLeak, [&] {
    return "after close() the process has " + std::to_string(after.threads) + " threads, " +
           std::to_string(before.threads) + " before the stack was built";
  });
}

}  // namespace lmcache::fault_internal
