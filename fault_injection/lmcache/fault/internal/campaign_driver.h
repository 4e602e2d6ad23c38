// File: lmcache/fault/internal/campaign_driver.h
//
// Campaign: the fault campaign's driver (run_campaign(), campaign.h). It builds a stack per
// epoch, submits waves of operations chosen by the Workload, collects their results,
// attributes the FaultLog's events to them, has the Judge check each completed task, and
// checks close()'s obligations at the end of each epoch (the stack itself is a CampaignStack,
// internal/campaign_stack.h). Its steps share the in-flight task
// tables below, so they are one class, defined over two files: campaign.cc (the stack, the
// operations, the watchdog's callbacks) and internal/campaign_strikes.cc (real storage faults:
// strike, heal, and the wait for an inner circuit breaker to close).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lmcache/core/process_resources.h"
#include "lmcache/fault/campaign.h"
#include "lmcache/fault/fault_inject_adapter.h"
#include "lmcache/fault/fault_log.h"
#include "lmcache/fault/internal/campaign_invariants.h"
#include "lmcache/fault/internal/campaign_ledger.h"
#include "lmcache/fault/internal/campaign_stack.h"
#include "lmcache/fault/internal/campaign_watchdog.h"
#include "lmcache/fault/internal/campaign_workload.h"

namespace lmcache::fault_internal {

class Campaign {
 public:
  using Clock = std::chrono::steady_clock;

  // Checks the options (std::invalid_argument naming the bad one) and starts the watchdog.
  Campaign(const fault::CampaignOptions& options, std::ostream& out);

  fault::CampaignSummary run();

 private:
  // --- stack ---
  void build_stack();
  void close_stack();
  bool finished() const;
  void check_idle();
  std::string describe_stack(std::optional<std::size_t> key0);  // watchdog thread

  // --- operations ---
  void run_epoch();
  void run_wave();
  void submit_random_op();
  void submit(OpKind kind, std::vector<std::size_t> key_idx);
  void wait_wave();
  bool any_waiting() const;
  void collect_results(bool after_close);
  void attribute_events();
  void evaluate_completed();
  void evaluate(CampaignTask& t);
  void release(std::uint64_t serial);

  // --- real storage faults ---
  void maybe_strike();
  void after_wave_storage();
  void heal_storage();
  // The retry time of the inner adapter's circuit breaker (report_status()) while it is open.
  std::optional<double> inner_breaker_retry_in();
  void end_strike();
  void mark_present_lost();

  // --- reporting ---
  void say(const std::string& line) { ledger_.say(line); }
  void pass(const char* inv) { ledger_.pass(inv); }
  void violate(const char* inv, const std::string& message) { ledger_.violate(inv, message); }
  template <class F>
  void check(bool ok, const char* inv, F&& message) {
    ledger_.check(ok, inv, std::forward<F>(message));
  }
  fault::CampaignSummary snapshot();
  void fire_watchdog(const std::string& message);  // watchdog thread

  const fault::CampaignOptions& o_;
  Ledger ledger_;
  Workload workload_;
  std::vector<KeyState> model_;
  Judge judge_;
  std::shared_ptr<fault::FaultLog> log_;
  Clock::time_point start_;

  // The stack of the current epoch. stack_mu_ guards the pointer against the watchdog.
  std::timed_mutex stack_mu_;
  std::unique_ptr<CampaignStack> stack_;

  // Tasks in flight (driver thread only).
  std::map<std::uint64_t, CampaignTask> tasks_;
  std::map<TaskId, std::uint64_t> store_ids_, load_ids_, lookup_ids_;
  // Owner task serial, and the first event seq that may concern it.
  std::unordered_map<std::size_t, std::pair<std::uint64_t, std::uint64_t>> key_owner_;
  std::unordered_map<const MemoryObj*, std::pair<std::uint64_t, std::uint64_t>> object_owner_;
  std::uint64_t serial_ = 0;
  std::uint64_t ops_ = 0;
  std::uint64_t epoch_ops_ = 0;
  std::uint64_t epoch_ = 0;
  bool hang_seen_ = false;
  ProcessResources base_resources_;

  // Whether a storage fault source with kinds to strike was given (asked once, not per wave).
  bool storage_strikes_ = false;
  // The storage fault striking now (driver thread only).
  bool strike_active_ = false;
  bool strike_disturbs_ = false;
  bool strike_loses_ = false;
  int disturbed_left_ = 0;
  bool strike_healed_ = false;   // heal() done; the strike lasts while a breaker stays open
  bool breaker_opened_ = false;  // this strike opened the inner adapter's breaker
  std::string strike_text_;

  // Last: its thread may call describe_stack() and fire_watchdog() until it is stopped.
  Watchdog watchdog_;
};

}  // namespace lmcache::fault_internal
