// File: lmcache/fault/internal/campaign_ledger.h
//
// Internal to the campaign: the ledger of invariant checks. Every check the campaign makes ends
// here, as a pass or a violation, together with the summary's counters; violations are printed
// as they are found. Thread-safe: the driver and the watchdog both record.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>

#include "lmcache/fault/campaign.h"

namespace lmcache::fault_internal {

class Ledger {
 public:
  explicit Ledger(std::ostream& out) : out_(out) {}

  // say()
  //
  // Writes one line to the campaign's stream (and flushes it), clearing a write error of an
  // earlier line first.
  void say(const std::string& line);

  // at()
  //
  // Where the driver is (operation count, epoch): violations are stamped with it.
  void at(std::uint64_t operation, std::uint64_t epoch) {
    operation_.store(operation, std::memory_order_relaxed);
    epoch_.store(epoch, std::memory_order_relaxed);
  }

  // pass() / violate() / check()
  //
  // Records one check of `invariant`: passed, or violated with `message` (printed as
  // "VIOLATION [invariant] epoch=E op=N: message"). check() builds the message only on failure.
  void pass(const char* invariant);
  void violate(const char* invariant, const std::string& message);
  template <class F>
  void check(bool ok, const char* invariant, F&& message) {
    if (ok) {
      pass(invariant);
    } else {
      violate(invariant, message());
    }
  }

  // update()
  //
  // Runs `f(summary)` under the ledger's lock (counters other than checks).
  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mu_);
    f(summary_);
  }

  // summary()
  //
  // A copy of the summary so far.
  fault::CampaignSummary summary() const;

  // fire_once()
  //
  // Marks the watchdog as fired; true only for the first call.
  bool fire_once();

 private:
  std::ostream& out_;
  std::mutex out_mu_;
  mutable std::mutex mu_;
  fault::CampaignSummary summary_;  // guarded by mu_
  bool fired_ = false;              // guarded by mu_
  std::atomic<std::uint64_t> operation_{0};
  std::atomic<std::uint64_t> epoch_{0};
};

}  // namespace lmcache::fault_internal
