// File: lmcache/fault/campaign_summary.cc
//
// CampaignSummary's JSON and text forms (campaign.h).
#include <iomanip>
#include <sstream>

#include "lmcache/fault/campaign.h"

namespace lmcache::fault {

Json CampaignSummary::to_json() const {
  Json v = Json::array();
  for (const auto& x : violations) {
    v.push_back({{"invariant", x.invariant},
                 {"message", x.message},
                 {"operation", x.operation},
                 {"epoch", x.epoch}});
  }
  std::ostringstream fp;
  fp << std::hex << std::setw(16) << std::setfill('0') << fingerprint;
  std::uint64_t passed_total = 0;
  for (const auto& [k, n] : checks_passed) passed_total += n;
  return {{"tool", "lmcache-fault-campaign"},
          {"result", passed() ? "pass" : "fail"},
          {"seed", seed},
          {"operations", operations},
          {"operations_by_kind", operations_by_kind},
          {"epochs", epochs},
          {"duration_s", duration_s},
          {"faults_injected", faults_injected},
          {"checks_passed", checks_passed},
          {"checks_passed_total", passed_total},
          {"violation_count", violation_count},
          {"violations_by_invariant", violations_by_invariant},
          {"violations", v},
          {"corruptions_caught", corruptions_caught},
          {"corruptions_detected", corruptions_detected},
          {"damage_past_frame", damage_past_frame},
          {"hung_tasks", hung_tasks},
          {"storage_faults_struck", storage_faults_struck},
          {"storage_faults_skipped", storage_faults_skipped},
          {"storage_losses", storage_losses},
          {"breaker_trips_seen", breaker_trips_seen},
          {"breaker_recoveries", breaker_recoveries},
          {"fingerprint", fp.str()},
          {"watchdog_fired", watchdog_fired},
          {"config", config}};
}

std::string CampaignSummary::to_text() const {
  std::ostringstream out;
  out << "== lmcache-fault-campaign summary ==\n";
  out << "seed: " << seed << " (rerun with --seed " << seed << " and the same options)\n";
  out << "operations: " << operations << " (";
  bool first = true;
  for (const auto& [k, n] : operations_by_kind) {
    out << (first ? "" : ", ") << k << " " << n;
    first = false;
  }
  out << ") in " << std::fixed << std::setprecision(2) << duration_s << " s over " << epochs
      << " epochs\n";
  std::uint64_t total = 0;
  std::string kinds;
  for (auto it = faults_injected.begin(); it != faults_injected.end(); ++it) {
    auto n = it.value().get<std::uint64_t>();
    total += n;
    if (n) kinds += " " + it.key() + "=" + std::to_string(n);
  }
  out << "faults injected: " << total << (kinds.empty() ? " (none)" : ":" + kinds) << "\n";
  out << "corruptions caught by the data check: " << corruptions_caught
      << "; refused by an integrity serde: " << corruptions_detected
      << "; hung tasks failed by close(): " << hung_tasks << "\n";
  out << "damage past the serialized frame (harmless): " << damage_past_frame << "\n";
  if (!storage_faults_struck.empty() || !storage_faults_skipped.empty()) {
    out << "real storage faults struck:";
    for (const auto& [k, n] : storage_faults_struck) out << " " << k << "=" << n;
    out << "; stored keys they took, seen as misses: " << storage_losses;
    if (breaker_trips_seen > 0) {
      out << "; circuit breaker open after " << breaker_trips_seen << " of them, closed again "
          << breaker_recoveries << " times";
    }
    out << "\n";
    for (const auto& why : storage_faults_skipped) out << "  skipped " << why << "\n";
  }
  std::uint64_t passed_total = 0;
  for (const auto& [k, n] : checks_passed) passed_total += n;
  out << "checks passed: " << passed_total << "\n";
  for (const auto& [k, n] : checks_passed)
    out << "  " << std::left << std::setw(30) << k << n << "\n";
  out << "violations: " << violation_count << "\n";
  for (const auto& [k, n] : violations_by_invariant) {
    out << "  [" << k << "] " << n << "\n";
  }
  std::ostringstream fp;
  fp << std::hex << std::setw(16) << std::setfill('0') << fingerprint;
  out << "fingerprint: " << fp.str() << "\n";
  out << "RESULT: " << (passed() ? "PASS" : watchdog_fired ? "FAIL (watchdog)" : "FAIL") << "\n";
  return out.str();
}

}  // namespace lmcache::fault
