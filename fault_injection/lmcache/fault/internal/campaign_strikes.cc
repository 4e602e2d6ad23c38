// File: lmcache/fault/internal/campaign_strikes.cc
//
// The campaign driver's real storage faults (campaign_driver.h): a strike drawn per wave from
// the StorageFaultSource, the tasks and keys it may disturb, the heal once its waves are over,
// and, where the strike opened an inner adapter's circuit breaker, the wait until a probe has
// closed it again.
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>

#include "lmcache/fault/internal/campaign_driver.h"

namespace lmcache::fault_internal {

using namespace ::lmcache::fault;  // the public types the driver works with

void Campaign::maybe_strike() {
  if (!storage_strikes_) return;
  if (!(workload_.uniform01() < o_.storage_rate)) return;
  const std::uint64_t draw = workload_.below(std::numeric_limits<std::uint64_t>::max());
  std::vector<ObjectKey> stored;
  for (std::size_t i = 0; i < model_.size(); ++i) {
    if (model_[i].present && !key_owner_.count(i)) stored.push_back(workload_.key(i).key);
  }
  std::optional<StorageStrike> strike;
  try {
    strike = o_.storage_faults->strike(draw, stored, stack_->key_namespace());
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("campaign: the storage fault could not strike: ") +
                             e.what());
  }
  if (!strike) return;
  strike_active_ = true;
  strike_disturbs_ = strike->disturbs_tasks;
  strike_loses_ = strike->loses_stored;
  disturbed_left_ = strike->disturbed_waves;
  strike_text_ = strike->kind + ": " + strike->detail;
  ledger_.update([&](CampaignSummary& s) { ++s.storage_faults_struck[strike->kind]; });
  if (o_.verbose) say("[storage] " + strike_text_);
  if (strike_disturbs_) {
    for (auto& [serial, t] : tasks_) t.storage_faults.push_back(strike_text_);
  }
  if (strike_loses_) mark_present_lost();
  for (const ObjectKey& k : strike->gone) {
    if (auto i = workload_.index_of(k)) model_[*i].may_be_gone = true;
  }
  for (const ObjectKey& k : strike->lost) {
    if (auto i = workload_.index_of(k)) model_[*i].may_be_lost = true;
  }
  for (const ObjectKey& k : strike->damaged) {
    if (auto i = workload_.index_of(k)) model_[*i].poisoned = true;
  }
}

void Campaign::after_wave_storage() {
  if (!strike_active_) return;
  if (disturbed_left_ > 0) {
    --disturbed_left_;
    return;
  }
  if (!strike_healed_) heal_storage();
  // A circuit breaker the strike opened (a resp inner adapter's, lmcache/bridge/circuit_breaker.h)
  // fails tasks at once until its first probe after the cooldown succeeds: the strike's
  // disturbance lasts until the breaker has closed again.
  if (const std::optional<double> retry_in = inner_breaker_retry_in()) {
    // Wait for its retry time (bounded): the next wave's first task is then its probe.
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(*retry_in, 1.0)));
    if (!breaker_opened_) {
      breaker_opened_ = true;
      ledger_.update([](CampaignSummary& s) { ++s.breaker_trips_seen; });
      if (o_.verbose) say("[storage] circuit breaker open after " + strike_text_);
    }
    return;
  }
  if (breaker_opened_) {
    ledger_.update([](CampaignSummary& s) { ++s.breaker_recoveries; });
    if (o_.verbose) say("[storage] circuit breaker closed again: its probe succeeded");
  }
  end_strike();
}

std::optional<double> Campaign::inner_breaker_retry_in() {
  const Json status = stack_->fault_injector().report_status();
  if (!status.is_object() || !status.value("connection_disabled", false)) return std::nullopt;
  return std::max(0.0, status.value("breaker_retry_in_seconds", 0.0));
}

void Campaign::end_strike() {
  strike_active_ = false;
  strike_healed_ = false;
  breaker_opened_ = false;
}

void Campaign::heal_storage() {
  try {
    o_.storage_faults->heal();
  } catch (const std::exception& e) {
    throw std::runtime_error("campaign: the storage did not heal after " + strike_text_ + ": " +
                             e.what());
  }
  // Stores that completed between the strike and the heal are gone too.
  if (strike_loses_) mark_present_lost();
  strike_healed_ = true;
}

void Campaign::mark_present_lost() {
  for (KeyState& st : model_) {
    if (st.present) st.may_be_gone = true;
  }
}

}  // namespace lmcache::fault_internal
