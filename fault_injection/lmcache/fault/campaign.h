// File: lmcache/fault/campaign.h
//
// The seeded fault campaign: randomized store / load / lookup / delete workloads driven
// through a SerdeL2AdapterWrapper over an inner adapter wrapped by FaultInjectL2Adapter, with
// the L1 and serde hooks of a FaultPlan, checking invariants after every step. The
// lmcache-fault-campaign tool is a thin command line over run_campaign(); the README lists
// every invariant.
//
// Determinism: one seed drives the workload (a std::mt19937_64 on the driver thread) and the
// fault plan (FaultRng, content-indexed). The driver is single-threaded and works in waves: it
// submits up to max_in_flight tasks on disjoint keys, then waits until each one has completed
// or has been marked hung by an attributed hang fault, and only then chooses the next wave
// from the model. What it submits is therefore a function of the seed and of the results, and
// the results are a function of the fault decisions. Timing-dependent, on purpose: the moment
// completions are published (delays, holds), the order in which the wrapper drains them, and
// wall-clock figures. With a serde of max_workers > 1 the order of inner store submissions
// can vary, which does not change the decisions (they are keyed by content) but can change
// what the inner adapter sees first.
//
// Epochs: the campaign builds a fresh stack every epoch_ops operations (and right after a wave
// that saw a hang fault), closes it, and checks close()'s obligations: every task completed
// exactly once (hung ones as failures), L1 back to its baseline, no fd or thread left behind.
// The in-memory inner adapter starts empty each epoch, and so does the model. A real inner
// adapter (resp, fs) keeps its data, so each epoch writes under a key namespace of its own
// ("<key_namespace>-s<seed>e<epoch>"): it starts empty as far as the campaign can see.
//
// Real storage faults: with a StorageFaultSource the campaign also strikes the storage under a
// real inner adapter (a Redis server killed, paused, its clients killed, out of memory; a cache
// directory full or read-only, its files damaged or deleted), at a seeded rate per wave, right
// after the wave's tasks are submitted. The source says what a strike does: which waves it
// disturbs (their tasks may fail and their keys may miss) and which stored keys it may have
// lost or damaged; the invariants then hold with those allowances and no others.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lmcache/core/config.h"
#include "lmcache/core/object_key.h"
#include "lmcache/fault/fault_plan.h"
#include "lmcache/fault/mutants.h"

namespace lmcache::fault {

// Invariant names, as they appear in violations ("VIOLATION [name] ...") and in the JSON.
namespace invariant {
inline constexpr const char* kCompletesExactlyOnce = "completes_exactly_once";
inline constexpr const char* kQueryOneShot = "query_one_shot";
inline constexpr const char* kCompletesByClose = "completes_by_close";
inline constexpr const char* kInjectedFaultNeverSuccess = "injected_fault_never_success";
inline constexpr const char* kHungTaskFails = "hung_task_fails_at_close";
inline constexpr const char* kFailedStoreInvisible = "failed_store_invisible";
inline constexpr const char* kAbsentKeyNotFound = "absent_key_not_found";
inline constexpr const char* kStoreFailureExplained = "store_failure_explained";
inline constexpr const char* kMissExplained = "miss_explained";
inline constexpr const char* kLoadedDataMatches = "loaded_data_matches";
inline constexpr const char* kCorruptionDetected = "corruption_detected";
inline constexpr const char* kCorruptionNeverLoads = "corruption_never_loads";
inline constexpr const char* kBitmapSize = "bitmap_size";
inline constexpr const char* kSubmitDoesNotThrow = "submit_does_not_throw";
inline constexpr const char* kNoTempLeakIdle = "no_temp_leak_idle";
inline constexpr const char* kNoTempLeakAfterClose = "no_temp_leak_after_close";
inline constexpr const char* kNoLockLeak = "no_lock_leak";
inline constexpr const char* kNoFdLeak = "no_fd_leak";
inline constexpr const char* kNoThreadLeak = "no_thread_leak";
inline constexpr const char* kNoDeadlock = "no_deadlock";
inline constexpr const char* kFaultAttributed = "fault_attributed";
inline constexpr const char* kFaultInjected = "fault_injected";
}  // namespace invariant

struct CampaignSummary;

// StorageStrike
//
// What one real storage fault did, as its StorageFaultSource reports it to the campaign.
struct StorageStrike {
  std::string kind;    // "redis_kill", as lmcache/storage_fault/storage_faults.h names it
  std::string detail;  // what was done, for violation messages ("SIGKILL pid 123")
  // The tasks in flight when it struck, and those of the next `disturbed_waves` waves, may
  // fail and may miss any key (a server down, paused or full; a directory full). false for a
  // strike on one key's file, which spares every task in flight.
  bool disturbs_tasks = true;
  int disturbed_waves = 0;
  // Every key stored before heal() may be gone (a server restarted empty).
  bool loses_stored = false;
  // These keys may be gone (a file deleted): a load or lookup may miss them.
  std::vector<ObjectKey> gone;
  // These keys' objects may be unreadable (a file truncated, or flipped under a checksum): a
  // load may miss them, and must never load wrong bytes; a lookup may still find them.
  std::vector<ObjectKey> lost;
  // These keys may load wrong bytes or fail (a file flipped with no checksum).
  std::vector<ObjectKey> damaged;
};

// StorageFaultSource
//
// Real faults for the storage under a real inner adapter, made for a campaign by
// lmcache/storage_fault/storage_campaign.h. Called from the campaign's driver thread only.
class StorageFaultSource {
 public:
  virtual ~StorageFaultSource() = default;

  // kinds()
  //
  // The kinds strike() takes turns at (their names), and the kinds that cannot strike here,
  // each with the reason ("fs_unwritable: root ignores directory permissions").
  virtual std::vector<std::string> kinds() const = 0;
  virtual std::vector<std::string> skipped() const = 0;

  // strike()
  //
  // Strikes the next kind now, while the wave's tasks are in flight. `draw` is a seeded
  // random number; `stored` are keys the model holds that no task in flight owns (a kind that
  // damages one key's file picks one of them); `key_namespace` is the epoch's. nullopt when
  // the kind found nothing to strike (then the same kind is tried at the next strike).
  virtual std::optional<StorageStrike> strike(std::uint64_t draw,
                                              const std::vector<ObjectKey>& stored,
                                              const std::string& key_namespace) = 0;

  // heal()
  //
  // Ends the last strike's disturbance (restart the server, resume it, lift a limit), once
  // the waves it disturbs are over; called once after every strike that returned a value.
  virtual void heal() = 0;
};

struct CampaignOptions {
  std::uint64_t seed = 1;
  std::uint64_t operations = 10000;  // 0: no limit (then seconds must be > 0)
  double seconds = 0;                // 0: no time limit
  std::string faults = "all";        // as given on the command line (for the summary)
  double rate = 0.01;                // as given (for the summary)
  FaultPlan plan;
  Json inner = {{"type", "mock"}, {"max_size_gb", 0.25}, {"mock_bandwidth_gb", 64}};
  Json serde = {{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}};
  std::size_t key_count = 512;
  std::size_t max_batch = 8;
  std::size_t max_in_flight = 8;
  std::uint64_t epoch_ops = 5000;
  std::chrono::milliseconds task_timeout{10000};
  std::size_t l1_capacity_bytes = std::size_t{64} << 20;
  StackMutant mutant = StackMutant::kNone;
  // Report every kind the plan enables but that was never injected as a violation
  // (fault_injected): makes a short CI campaign prove it exercised its kind.
  bool expect_injections = false;
  // Report every real storage kind that could strike but never did as a violation
  // (fault_injected), and nothing about the simulated kinds: a campaign over real storage that
  // mixes in simulated faults proves its real faults struck, while which rare simulated kinds
  // fire there depends on timing. Needs storage_faults (std::invalid_argument otherwise).
  // expect_injections checks these too.
  bool expect_strikes = false;
  // Real storage faults (see above): null for none. Each wave is struck with probability
  // storage_rate, the kinds taking turns; the inner config must be the one the source was made
  // for.
  std::shared_ptr<StorageFaultSource> storage_faults;
  double storage_rate = 0.02;
  bool verbose = false;
  // Called by the watchdog after it recorded a no_deadlock violation, from the watchdog
  // thread, while the driver may be stuck. Default (null): print the summary to the campaign's
  // stream and std::_Exit(3).
  std::function<void(const CampaignSummary&)> on_watchdog;
};

struct Violation {
  std::string invariant;
  std::string message;
  std::uint64_t operation = 0;
  std::uint64_t epoch = 0;
};

struct CampaignSummary {
  std::uint64_t seed = 0;
  std::uint64_t operations = 0;
  std::map<std::string, std::uint64_t> operations_by_kind;  // store, load, lookup, delete
  std::uint64_t epochs = 0;
  double duration_s = 0;
  Json faults_injected = Json::object();               // kind -> count
  std::map<std::string, std::uint64_t> checks_passed;  // invariant -> count
  std::map<std::string, std::uint64_t> violations_by_invariant;
  std::vector<Violation> violations;  // the first kMaxViolationsKept
  std::uint64_t violation_count = 0;
  std::uint64_t corruptions_caught = 0;  // damaged loads the data check caught, as it must
  // Damaged frames an integrity serde (checksum, aesgcm) refused to load, as it must.
  std::uint64_t corruptions_detected = 0;
  // Load-time damage (truncate, corrupt) that lay wholly past the frame of its key, in bytes
  // the deserializer never reads (an object stored one byte long by serialize_wrong_count):
  // harmless, so such a load may succeed, and its data must still match.
  std::uint64_t damage_past_frame = 0;
  std::uint64_t hung_tasks = 0;
  // Real storage faults struck, by kind, and the kinds that could not strike here (and why).
  std::map<std::string, std::uint64_t> storage_faults_struck;
  std::vector<std::string> storage_faults_skipped;
  // Misses of stored keys that a real storage fault explains (data lost with a server, a
  // damaged or deleted file): they are misses, never wrong bytes.
  std::uint64_t storage_losses = 0;
  // Strikes after which the inner adapter's circuit breaker was open at the heal, and how many
  // of those saw it close again (its probe succeeded) before the campaign moved on.
  std::uint64_t breaker_trips_seen = 0;
  std::uint64_t breaker_recoveries = 0;
  std::uint64_t fingerprint = 0;  // order-independent digest of tasks, outcomes and faults
  bool watchdog_fired = false;
  Json config = Json::object();  // options and plan, to reproduce the run

  static constexpr std::size_t kMaxViolationsKept = 100;

  bool passed() const { return violation_count == 0; }
  // 0 when passed, 3 when the watchdog fired, 1 otherwise.
  int exit_code() const { return passed() ? 0 : watchdog_fired ? 3 : 1; }
  Json to_json() const;
  std::string to_text() const;
};

// run_campaign()
//
// Runs the campaign described by `options`, writing "seed=N" first, then violations as they
// are found ("VIOLATION [invariant] epoch=E op=N: message"), then the summary, to `out`.
// Throws std::invalid_argument for a bad configuration (unknown adapter or serde type, bad
// sizes, an L1 budget smaller than one wave's temps: max_in_flight x max_batch x the serde's
// estimate of the largest object). Not reentrant with itself in one process (fd and thread counts
// are process-wide).
CampaignSummary run_campaign(const CampaignOptions& options, std::ostream& out);

}  // namespace lmcache::fault
