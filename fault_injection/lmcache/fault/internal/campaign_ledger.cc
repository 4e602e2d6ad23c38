#include "lmcache/fault/internal/campaign_ledger.h"

namespace lmcache::fault_internal {

void Ledger::say(const std::string& line) {
  std::lock_guard lock(out_mu_);
  // A line written while an fs_full storage fault limits file sizes fails when the stream is a
  // file (EFBIG); the stream must not stay failed and swallow the summary (the JSON summary
  // keeps the violations either way).
  out_.clear();
  out_ << line << "\n";
  out_.flush();
}

void Ledger::pass(const char* invariant) {
  std::lock_guard lock(mu_);
  ++summary_.checks_passed[invariant];
}

void Ledger::violate(const char* invariant, const std::string& message) {
  const std::uint64_t op = operation_.load(std::memory_order_relaxed);
  const std::uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  {
    std::lock_guard lock(mu_);
    ++summary_.violation_count;
    ++summary_.violations_by_invariant[invariant];
    if (summary_.violations.size() < fault::CampaignSummary::kMaxViolationsKept) {
      summary_.violations.push_back({invariant, message, op, epoch});
    }
  }
  say("VIOLATION [" + std::string(invariant) + "] epoch=" + std::to_string(epoch) +
      " op=" + std::to_string(op) + ": " + message);
}

fault::CampaignSummary Ledger::summary() const {
  std::lock_guard lock(mu_);
  return summary_;
}

bool Ledger::fire_once() {
  std::lock_guard lock(mu_);
  if (fired_) return false;
  fired_ = true;
  summary_.watchdog_fired = true;
  return true;
}

}  // namespace lmcache::fault_internal
