#include "lmcache/fault/campaign.h"

#include <dirent.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include "lmcache/core/event_notifier.h"
#include "lmcache/fault/fault_hooks.h"
#include "lmcache/fault/fault_inject_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/serde_config.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/serde/serde_utils.h"
#include "lmcache/wrapper/adapter_factory.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::fault {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Entries of a /proc directory ("." and ".." excluded); the open DIR's own fd is counted the
// same way every time, so comparisons are exact.
std::size_t count_dir_entries(const char* path) {
  DIR* dir = ::opendir(path);
  if (dir == nullptr) return 0;
  std::size_t n = 0;
  while (dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  }
  ::closedir(dir);
  return n;
}

std::size_t open_fd_count() { return count_dir_entries("/proc/self/fd"); }
std::size_t thread_count() { return count_dir_entries("/proc/self/task"); }

enum class OpKind : std::uint8_t { kStore, kLoad, kLookup, kDelete };

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::kStore:
      return "store";
    case OpKind::kLoad:
      return "load";
    case OpKind::kLookup:
      return "lookup";
    case OpKind::kDelete:
      return "delete";
  }
  return "?";
}

// Three layouts: one bf16 group, a mixed fp16 + fp32 pair of groups, and an odd fp32 count.
constexpr int kLayoutClasses = 3;

MemoryLayoutDesc layout_for_class(int c) {
  switch (c) {
    case 0:
      return MemoryLayoutDesc::single({8, 32}, DType::kBFloat16);
    case 1:
      return MemoryLayoutDesc({{4, 16}, {2, 16}}, {DType::kFloat16, DType::kFloat32});
    default:
      return MemoryLayoutDesc::single({3, 91}, DType::kFloat32);
  }
}

// Finite values of magnitude below 8 (plus a few zeros): exact in neither fp8 format in
// general, never NaN or out of range, so every fp8 code of the expected bytes is a finite
// value and any changed code decodes to different bytes.
void fill_source(MemoryObj& obj, std::uint64_t seed, std::size_t key_index) {
  const MemoryLayoutDesc& layout = obj.layout();
  std::uint64_t counter = splitmix64(seed ^ (0xA5A5A5A5ULL + key_index * 0x9E3779B97F4A7C15ULL));
  for (std::size_t g = 0; g < layout.num_groups(); ++g) {
    std::byte* out = obj.group_bytes(g).data();
    for (std::size_t j = 0; j < layout.group_elements(g); ++j) {
      std::uint64_t bits = splitmix64(counter++);
      bool zero = ((bits >> 40) & 15) == 0;
      std::uint64_t sign = bits >> 63;
      std::uint64_t e = (bits >> 32) & 7;
      switch (layout.dtypes()[g]) {
        case DType::kFloat32: {
          std::uint32_t v =
              zero ? 0 : static_cast<std::uint32_t>((122 + e) << 23 | (bits & 0x7FFFFF));
          v |= static_cast<std::uint32_t>(sign << 31);
          std::memcpy(out + 4 * j, &v, 4);
          break;
        }
        case DType::kBFloat16: {
          std::uint16_t v = zero ? 0 : static_cast<std::uint16_t>((122 + e) << 7 | (bits & 0x7F));
          v |= static_cast<std::uint16_t>(sign << 15);
          std::memcpy(out + 2 * j, &v, 2);
          break;
        }
        case DType::kFloat16: {
          std::uint16_t v = zero ? 0 : static_cast<std::uint16_t>((10 + e) << 10 | (bits & 0x3FF));
          v |= static_cast<std::uint16_t>(sign << 15);
          std::memcpy(out + 2 * j, &v, 2);
          break;
        }
        default:
          throw std::logic_error("campaign: unexpected dtype in a layout class");
      }
    }
  }
}

std::optional<bool> wait_serde(SerdeProcessor& p, TaskId id, bool serialize) {
  auto deadline = Clock::now() + 10s;
  while (Clock::now() < deadline) {
    auto r = serialize ? p.query_serialize_result(id) : p.query_deserialize_result(id);
    if (r) return r;
    wait_readable(serialize ? p.get_serialize_event_fd() : p.get_deserialize_event_fd(), 20ms);
  }
  return std::nullopt;
}

std::string keys_text(const std::vector<std::size_t>& idx) {
  std::string out = "[";
  for (std::size_t i = 0; i < idx.size(); ++i) out += (i ? "," : "") + std::to_string(idx[i]);
  return out + "]";
}

// What the events attributed to one task oblige it to report. Positions index the task's keys.
struct Attribution {
  bool fails_task = false;
  bool may_fail = false;
  bool hang = false;
  std::set<std::size_t> miss;
  std::set<std::size_t> corrupt;
  std::set<std::size_t> corrupt_effective;
  std::set<std::size_t> poison;
  std::vector<std::string> texts;

  std::string describe() const {
    if (texts.empty()) return "no fault attributed";
    std::string out;
    for (const auto& t : texts) out += (out.empty() ? "" : "; ") + t;
    return out;
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Summary.

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
          {"hung_tasks", hung_tasks},
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
      << "; hung tasks failed by close(): " << hung_tasks << "\n";
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

// ---------------------------------------------------------------------------------------------
// The campaign.

namespace {

class Campaign {
 public:
  Campaign(const CampaignOptions& options, std::ostream& out)
      : o_(options), out_(out), rng_(splitmix64(options.seed ^ 0xD1B54A32D192ED03ULL)) {
    if (o_.operations == 0 && !(o_.seconds > 0)) {
      throw std::invalid_argument("campaign: give a number of operations or a duration");
    }
    if (o_.key_count < 8) throw std::invalid_argument("campaign: key_count must be >= 8");
    if (o_.max_batch == 0 || o_.max_in_flight == 0 || o_.epoch_ops == 0) {
      throw std::invalid_argument("campaign: max_batch, max_in_flight and epoch_ops must be > 0");
    }
    log_ = std::make_shared<FaultLog>();
    serde_injective_ = SerdeConfig::from_json(o_.serde).type == "fp8";
  }

  CampaignSummary run();

 private:
  struct KeyInfo {
    ObjectKey key;
    int layout_class = 0;
    std::vector<std::byte> source;
    std::vector<std::byte> expected;
    std::size_t serialized_bytes = 0;
  };
  struct KeyState {
    bool present = false;
    bool poisoned = false;
    bool last_store_failed = false;
  };
  struct Task {
    std::uint64_t serial = 0;
    std::uint64_t since = 0;  // first FaultLog seq that may concern this task
    OpKind kind = OpKind::kStore;
    TaskId id = 0;
    bool submitted = false;
    bool completed = false;
    bool hung = false;
    std::uint64_t op = 0;
    std::vector<std::size_t> key_idx;
    std::vector<ObjectKey> keys;
    std::vector<MemoryObjPtr> objects;
    std::optional<L2StoreResult> store_result;
    std::optional<Bitmap> bitmap;
    std::vector<FaultEvent> events;
  };
  // What the watchdog may read (under watch_mu_).
  struct Watch {
    OpKind kind;
    std::size_t key0;
    TaskId id = 0;
    bool submitted = false;
    Clock::time_point since;
  };

  // --- setup ---
  void prepare_keys();
  void build_stack();
  void close_stack();
  bool finished() const;

  // --- workload ---
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  double uniform01() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  void run_epoch();
  void run_wave();
  void submit_random_op();
  void submit(OpKind kind, std::vector<std::size_t> key_idx);
  void wait_wave();
  bool any_waiting() const;
  void collect_results(bool after_close);
  void attribute_events();
  void evaluate_completed();
  void evaluate(Task& t);
  Attribution attribute(const Task& t) const;
  void eval_store(Task& t, const Attribution& a);
  void eval_load(Task& t, const Attribution& a);
  void eval_lookup(Task& t, const Attribution& a);
  // The kBitmapSize invariant of a load or lookup result: one bit per key.
  bool check_bitmap_size(const Task& t);
  void release(std::uint64_t serial);
  void check_idle();
  void check_process_resources();
  std::string task_text(const Task& t) const;

  // --- checks ---
  void pass(const char* inv);
  void violate(const char* inv, const std::string& message);
  template <class F>
  void check(bool ok, const char* inv, F&& message) {
    if (ok) {
      pass(inv);
    } else {
      violate(inv, message());
    }
  }
  void say(const std::string& line);

  // --- watchdog ---
  void watchdog_loop();
  void watchdog_check();
  void fire_watchdog(const std::string& message);
  CampaignSummary snapshot();
  class DriverCall {
   public:
    DriverCall(Campaign& c, std::string what, std::chrono::milliseconds timeout) : c_(c) {
      std::lock_guard lock(c_.watch_mu_);
      c_.call_ = std::move(what);
      c_.call_since_ = Clock::now();
      c_.call_timeout_ = timeout;
    }
    ~DriverCall() {
      std::lock_guard lock(c_.watch_mu_);
      c_.call_.clear();
    }

   private:
    Campaign& c_;
  };

  const CampaignOptions& o_;
  std::ostream& out_;
  std::mutex out_mu_;
  std::mt19937_64 rng_;
  std::shared_ptr<FaultLog> log_;
  bool serde_injective_ = false;
  Clock::time_point start_;

  std::vector<KeyInfo> keys_;
  std::vector<std::vector<std::size_t>> keys_by_class_;
  std::unordered_map<ObjectKey, std::size_t> key_index_;
  std::vector<KeyState> model_;

  // The stack of the current epoch. stack_mu_ guards the pointers against the watchdog.
  std::timed_mutex stack_mu_;
  std::shared_ptr<L1Manager> l1_;
  std::size_t l1_baseline_ = 0;
  L2AdapterPtr top_;
  SerdeL2AdapterWrapper* wrapper_ = nullptr;
  FaultInjectL2Adapter* fault_ = nullptr;
  MockL2Adapter* mock_ = nullptr;
  int store_fd_ = -1, load_fd_ = -1, lookup_fd_ = -1;

  // Tasks in flight (driver thread only).
  std::map<std::uint64_t, Task> tasks_;
  std::map<TaskId, std::uint64_t> store_ids_, load_ids_, lookup_ids_;
  // Owner task serial, and the first event seq that may concern it.
  std::unordered_map<std::size_t, std::pair<std::uint64_t, std::uint64_t>> key_owner_;
  std::unordered_map<const MemoryObj*, std::pair<std::uint64_t, std::uint64_t>> object_owner_;
  std::uint64_t serial_ = 0;
  std::uint64_t ops_ = 0;
  std::uint64_t epoch_ops_ = 0;
  std::uint64_t epoch_ = 0;
  bool hang_seen_ = false;
  std::size_t base_fds_ = 0, base_threads_ = 0;

  // Summary (summary_mu_: the watchdog adds to it too).
  std::mutex summary_mu_;
  CampaignSummary summary_;
  bool fired_ = false;

  // Watchdog.
  std::mutex watch_mu_;
  std::map<std::uint64_t, Watch> watch_;
  std::string call_;
  Clock::time_point call_since_;
  std::chrono::milliseconds call_timeout_{0};
  std::mutex wd_mu_;
  std::condition_variable wd_cv_;
  bool wd_stop_ = false;
};

void Campaign::say(const std::string& line) {
  std::lock_guard lock(out_mu_);
  out_ << line << "\n";
  out_.flush();
}

void Campaign::pass(const char* inv) {
  std::lock_guard lock(summary_mu_);
  ++summary_.checks_passed[inv];
}

void Campaign::violate(const char* inv, const std::string& message) {
  {
    std::lock_guard lock(summary_mu_);
    ++summary_.violation_count;
    ++summary_.violations_by_invariant[inv];
    if (summary_.violations.size() < CampaignSummary::kMaxViolationsKept) {
      summary_.violations.push_back({inv, message, ops_, epoch_});
    }
  }
  say("VIOLATION [" + std::string(inv) + "] epoch=" + std::to_string(epoch_) +
      " op=" + std::to_string(ops_) + ": " + message);
}

bool Campaign::finished() const {
  if (o_.operations > 0 && ops_ >= o_.operations) return true;
  if (o_.seconds > 0 &&
      std::chrono::duration<double>(Clock::now() - start_).count() >= o_.seconds) {
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Setup.

void Campaign::prepare_keys() {
  SerdeProcessorPtr oracle = create_serde_processor(o_.serde);  // fault-free
  keys_by_class_.assign(kLayoutClasses, {});
  for (std::size_t i = 0; i < o_.key_count; ++i) {
    const int cls = static_cast<int>(i % kLayoutClasses);
    ObjectKey key(int_hash_to_bytes(static_cast<std::uint32_t>(i)) + "fc", "campaign-model",
                  static_cast<std::int64_t>(i % 4), static_cast<std::int64_t>(i % 2),
                  i % 3 == 0 ? "" : "salt" + std::to_string(i % 3));
    MemoryLayoutDesc layout = layout_for_class(cls);
    MemoryObjPtr src = MemoryObj::allocate(layout);
    fill_source(*src, o_.seed, i);
    MemoryObjPtr temp = MemoryObj::allocate(serialized_layout_desc(layout, *oracle));
    MemoryObjPtr dst = MemoryObj::allocate(layout);
    auto ok = wait_serde(*oracle, oracle->submit_serialize({src}, {temp}), true);
    if (!ok || !*ok) throw std::runtime_error("campaign: the oracle serde failed to serialize");
    const std::size_t serialized = temp->size();
    ok = wait_serde(*oracle, oracle->submit_deserialize({temp}, {dst}), false);
    if (!ok || !*ok) throw std::runtime_error("campaign: the oracle serde failed to deserialize");
    KeyInfo info{key, cls, {}, {}, serialized};
    auto s = std::as_const(*src).bytes();
    info.source.assign(s.begin(), s.end());
    auto d = std::as_const(*dst).bytes();
    info.expected.assign(d.begin(), d.end());
    key_index_.emplace(key, i);
    keys_by_class_[cls].push_back(i);
    keys_.push_back(std::move(info));
  }
  oracle->close();
}

void Campaign::build_stack() {
  const std::int64_t seed = static_cast<std::int64_t>(o_.seed);
  L1AllocFaultHook hook(o_.plan.l1, seed, log_);
  auto l1 = std::make_shared<L1Manager>(o_.l1_capacity_bytes, hook.factory());
  AdapterContext ctx{l1};
  L2AdapterPtr inner = create_l2_adapter(o_.inner, ctx);
  MockL2Adapter* mock = dynamic_cast<MockL2Adapter*>(inner.get());
  auto fault = std::make_unique<FaultInjectL2Adapter>(std::move(inner), o_.plan.adapter, log_);
  FaultInjectL2Adapter* fault_ptr = fault.get();
  L2AdapterPtr below = wrap_adapter_mutant(o_.mutant, std::move(fault), l1, log_);
  SerdeDecorators deco;
  const Mutant m = o_.mutant;
  deco.deserializer = [m](DeserializerPtr d) { return wrap_deserializer_mutant(m, std::move(d)); };
  deco.processor = [m](SerdeProcessorPtr p) { return wrap_processor_mutant(m, std::move(p)); };
  FaultySerde serde = make_faulty_serde_processor(o_.serde, o_.plan.serde, seed, log_, deco);
  auto wrapper =
      std::make_unique<SerdeL2AdapterWrapper>(std::move(below), std::move(serde.processor), l1);
  SerdeL2AdapterWrapper* wrapper_ptr = wrapper.get();
  L2AdapterPtr top = wrap_top_mutant(o_.mutant, std::move(wrapper));
  std::lock_guard lock(stack_mu_);
  l1_ = std::move(l1);
  l1_baseline_ = l1_->get_memory_usage().used_bytes;
  top_ = std::move(top);
  wrapper_ = wrapper_ptr;
  fault_ = fault_ptr;
  mock_ = mock;
  store_fd_ = top_->get_store_event_fd();
  load_fd_ = top_->get_load_event_fd();
  lookup_fd_ = top_->get_lookup_and_lock_event_fd();
}

// ---------------------------------------------------------------------------------------------
// Run.

CampaignSummary Campaign::run() {
  start_ = Clock::now();
  say("seed=" + std::to_string(o_.seed));
  {
    Json cfg = {{"seed", o_.seed},
                {"operations", o_.operations},
                {"seconds", o_.seconds},
                {"faults", o_.faults},
                {"rate", o_.rate},
                {"plan", o_.plan.to_json()},
                {"inner", o_.inner},
                {"serde", o_.serde},
                {"keys", o_.key_count},
                {"max_batch", o_.max_batch},
                {"max_in_flight", o_.max_in_flight},
                {"epoch_ops", o_.epoch_ops},
                {"task_timeout_ms", o_.task_timeout.count()},
                {"l1_capacity_bytes", o_.l1_capacity_bytes},
                {"mutant", std::string(mutant_info(o_.mutant).name)}};
    std::lock_guard lock(summary_mu_);
    summary_.seed = o_.seed;
    summary_.config = cfg;
  }
  say("lmcache-fault-campaign: operations=" + std::to_string(o_.operations) +
      (o_.seconds > 0 ? " seconds=" + Json(o_.seconds).dump() : "") + " faults=" + o_.faults +
      " rate=" + Json(o_.rate).dump() + " inner=" + o_.inner.value("type", "?") +
      " serde=" + o_.serde.dump() +
      (o_.mutant != Mutant::kNone ? " mutant=" + std::string(mutant_info(o_.mutant).name) : ""));
  prepare_keys();
  std::thread watchdog([this] { watchdog_loop(); });
  base_fds_ = open_fd_count();
  base_threads_ = thread_count();
  try {
    while (!finished()) run_epoch();
  } catch (...) {
    {
      std::lock_guard lock(wd_mu_);
      wd_stop_ = true;
    }
    wd_cv_.notify_all();
    watchdog.join();
    throw;
  }
  {
    std::lock_guard lock(wd_mu_);
    wd_stop_ = true;
  }
  wd_cv_.notify_all();
  watchdog.join();
  if (o_.expect_injections) {
    for (FaultKind k : o_.plan.enabled_kinds()) {
      check(log_->count(k) > 0, invariant::kFaultInjected, [&] {
        return "fault kind " + std::string(fault_kind_name(k)) +
               " is enabled but was never injected (raise --rate or --operations)";
      });
    }
  }
  CampaignSummary s = snapshot();
  say(s.to_text());
  return s;
}

CampaignSummary Campaign::snapshot() {
  std::lock_guard lock(summary_mu_);
  CampaignSummary s = summary_;
  s.operations = ops_;
  s.epochs = epoch_;
  s.duration_s = std::chrono::duration<double>(Clock::now() - start_).count();
  s.faults_injected = log_->counts_json();
  std::uint64_t fp = s.fingerprint;
  for (auto it = s.faults_injected.begin(); it != s.faults_injected.end(); ++it) {
    fp ^= splitmix64(Fnv1a64().add(it.key()).add_u64(it.value().get<std::uint64_t>()).value());
  }
  s.fingerprint = fp;
  return s;
}

void Campaign::run_epoch() {
  ++epoch_;
  build_stack();
  model_.assign(keys_.size(), KeyState{});
  epoch_ops_ = 0;
  hang_seen_ = false;
  while (!finished() && epoch_ops_ < o_.epoch_ops && !hang_seen_) run_wave();
  close_stack();
  if (o_.verbose) {
    say("[epoch " + std::to_string(epoch_) + "] done at operation " + std::to_string(ops_));
  }
}

void Campaign::run_wave() {
  const std::uint64_t width = 1 + below(o_.max_in_flight);
  for (std::uint64_t w = 0; w < width && !finished(); ++w) submit_random_op();
  wait_wave();
  bool hung = false;
  for (const auto& [s, t] : tasks_) hung |= t.hung;
  if (!hung) check_idle();
}

void Campaign::submit_random_op() {
  const double r = uniform01();
  OpKind kind = r < 0.35   ? OpKind::kStore
                : r < 0.70 ? OpKind::kLoad
                : r < 0.85 ? OpKind::kLookup
                           : OpKind::kDelete;
  const auto& cls = keys_by_class_[below(kLayoutClasses)];
  std::vector<std::size_t> free_all, free_absent, free_present;
  for (std::size_t i : cls) {
    if (key_owner_.count(i)) continue;
    free_all.push_back(i);
    (model_[i].present ? free_present : free_absent).push_back(i);
  }
  if (kind == OpKind::kStore && free_absent.empty()) kind = OpKind::kLoad;
  std::vector<std::size_t>* pool = &free_all;
  if (kind == OpKind::kStore) {
    pool = &free_absent;
  } else if (kind == OpKind::kLoad || kind == OpKind::kDelete) {
    if (!free_present.empty() && uniform01() < 0.8) pool = &free_present;
  }
  if (pool->empty()) return;
  const std::size_t b = std::min<std::size_t>(1 + below(o_.max_batch), pool->size());
  for (std::size_t i = 0; i < b; ++i) std::swap((*pool)[i], (*pool)[i + below(pool->size() - i)]);
  pool->resize(b);
  ++ops_;
  ++epoch_ops_;
  {
    std::lock_guard lock(summary_mu_);
    ++summary_.operations_by_kind[op_name(kind)];
  }
  submit(kind, std::move(*pool));
}

void Campaign::submit(OpKind kind, std::vector<std::size_t> key_idx) {
  Task t;
  t.serial = ++serial_;
  t.kind = kind;
  t.op = ops_;
  t.key_idx = std::move(key_idx);
  for (std::size_t i : t.key_idx) t.keys.push_back(keys_[i].key);

  if (kind == OpKind::kDelete) {
    DriverCall call(*this, "delete_keys", o_.task_timeout);
    try {
      top_->delete_keys(t.keys);
      pass(invariant::kSubmitDoesNotThrow);
      for (std::size_t i : t.key_idx) model_[i] = KeyState{};
    } catch (const std::exception& e) {
      violate(invariant::kSubmitDoesNotThrow, "delete_keys threw: " + std::string(e.what()));
    }
    return;
  }
  if (kind != OpKind::kLookup) {
    for (std::size_t i : t.key_idx) {
      MemoryObjPtr obj = MemoryObj::allocate(layout_for_class(keys_[i].layout_class));
      if (kind == OpKind::kStore) {
        std::memcpy(obj->data(), keys_[i].source.data(), keys_[i].source.size());
      }
      t.objects.push_back(std::move(obj));
    }
  }
  // Own the keys and objects before submitting: events recorded during the submit must find
  // their task. Events recorded before this point cannot concern this task (its objects did not
  // exist, and an address in an older event may be a freed buffer that now is one of ours), so
  // only events with seq >= since are attributed to it.
  const std::uint64_t serial = t.serial;
  t.since = log_->next_seq();
  for (std::size_t i : t.key_idx) key_owner_[i] = {serial, t.since};
  for (const auto& obj : t.objects) object_owner_[obj.get()] = {serial, t.since};
  {
    std::lock_guard lock(watch_mu_);
    watch_[serial] = Watch{kind, t.key_idx.front(), 0, false, Clock::now()};
  }
  Task& task = tasks_.emplace(serial, std::move(t)).first->second;

  const char* call_name = kind == OpKind::kStore  ? "submit_store_task"
                          : kind == OpKind::kLoad ? "submit_load_task"
                                                  : "submit_lookup_and_lock_task";
  try {
    DriverCall call(*this, call_name, o_.task_timeout);
    AttributionScope scope(serial);
    switch (kind) {
      case OpKind::kStore:
        task.id = top_->submit_store_task(task.keys, task.objects);
        break;
      case OpKind::kLoad:
        task.id = top_->submit_load_task(task.keys, task.objects);
        break;
      default:
        task.id = top_->submit_lookup_and_lock_task(task.keys);
        break;
    }
  } catch (const InjectedFault& e) {
    // Only a lookup may see an injected throw: the wrapper passes lookups through, and must
    // turn every other failure into a failed task.
    attribute_events();
    bool attributed = false;
    for (const auto& ev : task.events) {
      attributed |= ev.kind == FaultKind::kSubmitThrow && ev.scope_tag == serial;
    }
    check(kind == OpKind::kLookup && attributed, invariant::kSubmitDoesNotThrow, [&] {
      return task_text(task) +
             ": submit threw an injected fault the wrapper should have "
             "turned into a failed task: " +
             e.what();
    });
    release(serial);
    return;
  } catch (const std::exception& e) {
    violate(invariant::kSubmitDoesNotThrow, task_text(task) + ": submit threw: " + e.what());
    release(serial);
    return;
  }
  pass(invariant::kSubmitDoesNotThrow);
  task.submitted = true;
  (kind == OpKind::kStore  ? store_ids_
   : kind == OpKind::kLoad ? load_ids_
                           : lookup_ids_)[task.id] = serial;
  std::lock_guard lock(watch_mu_);
  auto& w = watch_[serial];
  w.id = task.id;
  w.submitted = true;
}

bool Campaign::any_waiting() const {
  for (const auto& [s, t] : tasks_) {
    if (t.submitted && !t.completed && !t.hung) return true;
  }
  return false;
}

void Campaign::wait_wave() {
  while (any_waiting()) {
    pollfd fds[3] = {{store_fd_, POLLIN, 0}, {load_fd_, POLLIN, 0}, {lookup_fd_, POLLIN, 0}};
    ::poll(fds, 3, 20);
    for (auto& p : fds) {
      if (p.revents & POLLIN) consume_fd(p.fd);
    }
    collect_results(false);
    attribute_events();
    evaluate_completed();
  }
}

void Campaign::collect_results(bool after_close) {
  for (auto& [id, result] : top_->pop_completed_store_tasks()) {
    auto it = store_ids_.find(id);
    if (it == store_ids_.end()) {
      violate(invariant::kCompletesExactlyOnce,
              "a store result for wrapper task " + std::to_string(id) +
                  ", which is not in flight (completed before, or never submitted): " +
                  result.to_string());
      continue;
    }
    pass(invariant::kCompletesExactlyOnce);
    Task& t = tasks_.at(it->second);
    t.store_result = result;
    t.completed = true;
    store_ids_.erase(it);
  }
  auto take = [&](std::map<TaskId, std::uint64_t>& ids, bool lookup) {
    for (auto it = ids.begin(); it != ids.end();) {
      std::optional<Bitmap> bits = lookup ? top_->query_lookup_and_lock_result(it->first)
                                          : top_->query_load_result(it->first);
      if (!bits) {
        ++it;
        continue;
      }
      Task& t = tasks_.at(it->second);
      std::optional<Bitmap> again = lookup ? top_->query_lookup_and_lock_result(it->first)
                                           : top_->query_load_result(it->first);
      check(!again, invariant::kQueryOneShot,
            [&] { return task_text(t) + ": a second query returned a result again"; });
      pass(invariant::kCompletesExactlyOnce);
      t.bitmap = std::move(bits);
      t.completed = true;
      it = ids.erase(it);
    }
  };
  take(load_ids_, false);
  if (!after_close) take(lookup_ids_, true);
}

void Campaign::attribute_events() {
  for (FaultEvent& e : log_->drain()) {
    std::set<std::uint64_t> owners;
    if (e.scope_tag && tasks_.count(e.scope_tag)) owners.insert(e.scope_tag);
    for (const auto& k : e.keys) {
      auto ki = key_index_.find(k);
      if (ki == key_index_.end()) continue;
      auto ow = key_owner_.find(ki->second);
      if (ow != key_owner_.end() && e.seq >= ow->second.second) owners.insert(ow->second.first);
    }
    for (const MemoryObj* obj : e.objects) {
      auto ow = object_owner_.find(obj);
      if (ow != object_owner_.end() && e.seq >= ow->second.second) owners.insert(ow->second.first);
    }
    if (owners.empty()) {
      // Timing-only events need no owner (slow_close has none by nature).
      if (e.effect != FaultEffect::kNone) {
        violate(invariant::kFaultAttributed,
                "injected fault matches no task in flight: " + e.to_string());
      }
      continue;
    }
    if (e.effect != FaultEffect::kNone) pass(invariant::kFaultAttributed);
    for (std::uint64_t s : owners) {
      Task& t = tasks_.at(s);
      if (e.effect == FaultEffect::kHang && !t.hung) {
        t.hung = true;
        hang_seen_ = true;
        std::lock_guard lock(summary_mu_);
        ++summary_.hung_tasks;
      }
      t.events.push_back(e);
    }
  }
  // The watchdog ignores hung tasks.
  std::lock_guard lock(watch_mu_);
  for (const auto& [s, t] : tasks_) {
    if (t.hung) watch_.erase(s);
  }
}

void Campaign::evaluate_completed() {
  std::vector<std::uint64_t> done;
  for (const auto& [s, t] : tasks_) {
    if (t.completed) done.push_back(s);
  }
  for (std::uint64_t s : done) {
    evaluate(tasks_.at(s));
    release(s);
  }
}

std::string Campaign::task_text(const Task& t) const {
  return std::string(op_name(t.kind)) + " task #" + std::to_string(t.serial) + " (wrapper id " +
         (t.submitted ? std::to_string(t.id) : std::string("-")) + ", op " + std::to_string(t.op) +
         ", keys " + keys_text(t.key_idx) + ")";
}

Attribution Campaign::attribute(const Task& t) const {
  Attribution a;
  for (const auto& e : t.events) {
    if (e.effect == FaultEffect::kNone) continue;
    a.texts.push_back(e.to_string());
    std::set<std::size_t> positions;
    for (const auto& k : e.keys) {
      for (std::size_t i = 0; i < t.keys.size(); ++i) {
        if (t.keys[i] == k) positions.insert(i);
      }
    }
    for (const MemoryObj* obj : e.objects) {
      for (std::size_t i = 0; i < t.objects.size() && e.seq >= t.since; ++i) {
        if (t.objects[i].get() == obj) positions.insert(i);
      }
    }
    switch (e.effect) {
      case FaultEffect::kFailsTask:
        a.fails_task = true;
        break;
      case FaultEffect::kMayFail:
        a.may_fail = true;
        break;
      case FaultEffect::kHang:
        a.hang = true;
        break;
      case FaultEffect::kMiss:
        a.miss.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kCorruptsData:
        a.corrupt.insert(positions.begin(), positions.end());
        if (e.effective) a.corrupt_effective.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kPoisonsStored:
        a.poison.insert(positions.begin(), positions.end());
        break;
      case FaultEffect::kNone:
        break;
    }
  }
  return a;
}

void Campaign::evaluate(Task& t) {
  const Attribution a = attribute(t);
  switch (t.kind) {
    case OpKind::kStore:
      eval_store(t, a);
      break;
    case OpKind::kLoad:
      eval_load(t, a);
      break;
    case OpKind::kLookup:
      eval_lookup(t, a);
      break;
    case OpKind::kDelete:
      break;
  }
  // Order-independent digest of what happened: the task, its outcome and its faults.
  Fnv1a64 h;
  h.add_u64(t.serial).add_u64(static_cast<std::uint64_t>(t.kind));
  for (std::size_t i : t.key_idx) h.add_u64(i);
  if (t.store_result) h.add_u64(t.store_result->is_successful() ? 1 : 2);
  if (t.bitmap) h.add(t.bitmap->to_string());
  for (const auto& e : t.events) h.add_u64(static_cast<std::uint64_t>(e.kind));
  std::lock_guard lock(summary_mu_);
  summary_.fingerprint += splitmix64(h.value());
}

void Campaign::eval_store(Task& t, const Attribution& a) {
  const L2StoreResult& r = *t.store_result;
  if (r.is_successful()) {
    if (a.hang) {
      violate(invariant::kHungTaskFails,
              task_text(t) + " reported success although it was hung on purpose: " + a.describe());
    }
    if (a.fails_task) {
      violate(invariant::kInjectedFaultNeverSuccess,
              task_text(t) +
                  " reported success although an injected fault must fail it: " + a.describe());
    }
    for (std::size_t p = 0; p < t.key_idx.size(); ++p) {
      KeyState& st = model_[t.key_idx[p]];
      st.present = true;
      st.poisoned = a.poison.count(p) > 0;
      st.last_store_failed = false;
    }
    return;
  }
  if (a.hang) pass(invariant::kHungTaskFails);
  if (a.fails_task) pass(invariant::kInjectedFaultNeverSuccess);
  bool explained = a.fails_task || a.may_fail || a.hang || !a.poison.empty();
  if (!explained) {
    // The inner adapter may be full: then a failure is legitimate.
    std::uint64_t need = 0;
    for (std::size_t i : t.key_idx) need += keys_[i].serialized_bytes;
    AdapterUsage u = top_->get_usage();
    explained = u.total_capacity_bytes > 0 && u.total_bytes_used + need > u.total_capacity_bytes;
  }
  check(explained, invariant::kStoreFailureExplained,
        [&] { return task_text(t) + " failed with no injected fault to explain it"; });
  for (std::size_t i : t.key_idx) model_[i] = KeyState{false, false, true};
}

bool Campaign::check_bitmap_size(const Task& t) {
  const std::size_t bits = t.bitmap->size();
  const bool ok = bits == t.keys.size();
  check(ok, invariant::kBitmapSize, [&] {
    return task_text(t) + ": bitmap of " + std::to_string(bits) + " bits for " +
           std::to_string(t.keys.size()) + " keys";
  });
  return ok;
}

void Campaign::eval_load(Task& t, const Attribution& a) {
  const Bitmap& bits = *t.bitmap;
  const std::size_t n = t.keys.size();
  if (!check_bitmap_size(t)) return;
  if (a.hang) {
    check(bits.none(), invariant::kHungTaskFails, [&] {
      return task_text(t) + " loaded " + bits.to_string() +
             " although it was hung on purpose: " + a.describe();
    });
  }
  if (a.fails_task) {
    check(bits.none(), invariant::kInjectedFaultNeverSuccess, [&] {
      return task_text(t) + " loaded " + bits.to_string() +
             " although an injected fault must fail the whole load: " + a.describe();
    });
  }
  bool batch_may_fail = a.fails_task || a.may_fail || a.hang;
  for (std::size_t i : t.key_idx) batch_may_fail |= model_[i].poisoned;
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t ki = t.key_idx[p];
    const KeyState& st = model_[ki];
    if (a.miss.count(p)) {
      check(!bits.test(p), invariant::kInjectedFaultNeverSuccess, [&] {
        return task_text(t) + ": key " + std::to_string(ki) +
               " was dropped on purpose but its bit is set: " + a.describe();
      });
    }
    if (!bits.test(p)) {
      if (st.present) {
        check(batch_may_fail || a.miss.count(p) > 0, invariant::kMissExplained, [&] {
          return task_text(t) + ": stored key " + std::to_string(ki) +
                 " was not loaded and no injected fault explains it";
        });
      } else {
        pass(st.last_store_failed ? invariant::kFailedStoreInvisible
                                  : invariant::kAbsentKeyNotFound);
      }
      continue;
    }
    if (!st.present) {
      const char* inv =
          st.last_store_failed ? invariant::kFailedStoreInvisible : invariant::kAbsentKeyNotFound;
      violate(inv, task_text(t) + ": key " + std::to_string(ki) + " loaded although " +
                       (st.last_store_failed ? "its last store failed" : "it was never stored") +
                       " (model: absent)");
      continue;
    }
    const auto& expected = keys_[ki].expected;
    auto got = std::as_const(*t.objects[p]).bytes();
    const bool match =
        got.size() == expected.size() && std::equal(got.begin(), got.end(), expected.begin());
    if (match) {
      pass(invariant::kLoadedDataMatches);
      if (serde_injective_ && a.corrupt_effective.count(p)) {
        violate(invariant::kCorruptionDetected,
                task_text(t) + ": key " + std::to_string(ki) +
                    " carries an effective injected corruption but its bytes equal the "
                    "expected ones; the data check is blind: " +
                    a.describe());
      }
      continue;
    }
    if (a.corrupt.count(p) || st.poisoned) {
      pass(invariant::kCorruptionDetected);
      std::lock_guard lock(summary_mu_);
      ++summary_.corruptions_caught;
      continue;
    }
    std::size_t first = 0;
    while (first < got.size() && first < expected.size() && got[first] == expected[first]) ++first;
    violate(invariant::kLoadedDataMatches,
            task_text(t) + ": key " + std::to_string(ki) +
                " loaded with success but its bytes differ from the expected round trip "
                "(first difference at byte " +
                std::to_string(first) + " of " + std::to_string(expected.size()) + "); " +
                a.describe());
  }
}

void Campaign::eval_lookup(Task& t, const Attribution& a) {
  const Bitmap& bits = *t.bitmap;
  const std::size_t n = t.keys.size();
  if (!check_bitmap_size(t)) return;
  std::vector<ObjectKey> unlock;
  for (std::size_t p = 0; p < n; ++p) {
    const std::size_t ki = t.key_idx[p];
    const KeyState& st = model_[ki];
    if (a.miss.count(p)) {
      check(!bits.test(p), invariant::kInjectedFaultNeverSuccess, [&] {
        return task_text(t) + ": key " + std::to_string(ki) +
               " was hidden on purpose but lookup reports it: " + a.describe();
      });
    }
    if (bits.test(p)) {
      unlock.push_back(t.keys[p]);
      if (!st.present) {
        violate(
            st.last_store_failed ? invariant::kFailedStoreInvisible : invariant::kAbsentKeyNotFound,
            task_text(t) + ": lookup found key " + std::to_string(ki) + " although " +
                (st.last_store_failed ? "its last store failed" : "it was never stored"));
      }
    } else if (st.present) {
      check(a.miss.count(p) > 0 || a.fails_task, invariant::kMissExplained, [&] {
        return task_text(t) + ": lookup misses stored key " + std::to_string(ki) +
               " and no injected fault explains it";
      });
    } else {
      pass(st.last_store_failed ? invariant::kFailedStoreInvisible : invariant::kAbsentKeyNotFound);
    }
  }
  if (!unlock.empty()) {
    DriverCall call(*this, "submit_unlock", o_.task_timeout);
    top_->submit_unlock(unlock);
  }
}

void Campaign::release(std::uint64_t serial) {
  auto it = tasks_.find(serial);
  if (it == tasks_.end()) return;
  for (std::size_t i : it->second.key_idx) {
    auto ow = key_owner_.find(i);
    if (ow != key_owner_.end() && ow->second.first == serial) key_owner_.erase(ow);
  }
  for (const auto& obj : it->second.objects) object_owner_.erase(obj.get());
  tasks_.erase(it);
  std::lock_guard lock(watch_mu_);
  watch_.erase(serial);
}

void Campaign::check_idle() {
  const std::size_t used = l1_->get_memory_usage().used_bytes;
  check(used == l1_baseline_, invariant::kNoTempLeakIdle, [&] {
    std::string held = "?";
    try {
      held = wrapper_->report_status()["serde_wrapper"]["temp_bytes_held"].dump();
    } catch (...) {
    }
    return "L1 holds " + std::to_string(used) + " bytes with no task in flight (baseline " +
           std::to_string(l1_baseline_) + "; the wrapper counts " + held + " temp bytes)";
  });
}

void Campaign::check_process_resources() {
  // A thread that was joined can linger in /proc for a moment; give the kernel a little time.
  auto settle = [](auto count, std::size_t base) {
    std::size_t now = count();
    for (int i = 0; i < 50 && now > base; ++i) {
      std::this_thread::sleep_for(20ms);
      now = count();
    }
    return now;
  };
  const std::size_t fds = settle(open_fd_count, base_fds_);
  check(fds <= base_fds_, invariant::kNoFdLeak, [&] {
    return "after close() the process has " + std::to_string(fds) + " open fds, " +
           std::to_string(base_fds_) + " before the stack was built";
  });
  const std::size_t threads = settle(thread_count, base_threads_);
  check(threads <= base_threads_, invariant::kNoThreadLeak, [&] {
    return "after close() the process has " + std::to_string(threads) + " threads, " +
           std::to_string(base_threads_) + " before the stack was built";
  });
}

void Campaign::close_stack() {
  if (mock_ != nullptr) {
    // Unlocks are fire and forget; give them a moment to land.
    auto deadline = Clock::now() + 2s;
    while (mock_->locked_key_count() != 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(2ms);
    const std::size_t locked = mock_->locked_key_count();
    check(locked == 0, invariant::kNoLockLeak, [&] {
      return std::to_string(locked) +
             " keys stay locked in the inner adapter after every "
             "lookup hit was unlocked";
    });
  }
  bool hung = false;
  for (const auto& [s, t] : tasks_) hung |= t.hung;
  if (!hung) check_idle();
  {
    DriverCall call(*this, "close()",
                    o_.task_timeout + std::chrono::milliseconds(o_.plan.adapter.slow_close_ms));
    try {
      top_->close();
    } catch (const std::exception& e) {
      violate(invariant::kSubmitDoesNotThrow, std::string("close() threw: ") + e.what());
    }
  }
  collect_results(true);
  attribute_events();
  evaluate_completed();
  std::vector<std::uint64_t> left;
  for (const auto& [s, t] : tasks_) left.push_back(s);
  for (std::uint64_t s : left) {
    const Task& t = tasks_.at(s);
    violate(invariant::kCompletesByClose, task_text(t) + (t.hung ? " (hung on purpose)" : "") +
                                              " never completed, not even by close()");
    release(s);
  }
  if (left.empty()) pass(invariant::kCompletesByClose);
  const std::size_t used = l1_->get_memory_usage().used_bytes;
  check(used == l1_baseline_, invariant::kNoTempLeakAfterClose, [&] {
    return "after close() L1 holds " + std::to_string(used) + " bytes (baseline " +
           std::to_string(l1_baseline_) + ")";
  });
  check_process_resources();
  std::shared_ptr<L1Manager> l1;
  {
    std::lock_guard lock(stack_mu_);
    top_.reset();
    wrapper_ = nullptr;
    fault_ = nullptr;
    mock_ = nullptr;
    l1 = std::move(l1_);
  }
  l1.reset();
  store_ids_.clear();
  load_ids_.clear();
  lookup_ids_.clear();
  key_owner_.clear();
  object_owner_.clear();
  tasks_.clear();
}

// ---------------------------------------------------------------------------------------------
// Watchdog.

void Campaign::watchdog_loop() {
  std::unique_lock lock(wd_mu_);
  while (!wd_stop_) {
    wd_cv_.wait_for(lock, 100ms);
    if (wd_stop_) break;
    lock.unlock();
    watchdog_check();
    lock.lock();
  }
}

void Campaign::watchdog_check() {
  const auto now = Clock::now();
  std::string message;
  std::optional<std::size_t> key0;
  {
    std::lock_guard lock(watch_mu_);
    for (const auto& [serial, w] : watch_) {
      if (now - w.since <= o_.task_timeout) continue;
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
  std::unique_lock stack(stack_mu_, std::defer_lock);
  if (stack.try_lock_for(200ms) && top_) {
    try {
      if (fault_ && key0) message += "; fault injector: " + fault_->describe_task(keys_[*key0].key);
      if (wrapper_) {
        message += "; wrapper tasks_in_flight by phase: " +
                   wrapper_->report_status()["serde_wrapper"]["tasks_in_flight"].dump();
      }
    } catch (const std::exception& e) {
      message += std::string("; (status unavailable: ") + e.what() + ")";
    }
  }
  fire_watchdog(message);
}

void Campaign::fire_watchdog(const std::string& message) {
  {
    std::lock_guard lock(summary_mu_);
    if (fired_) return;
    fired_ = true;
    summary_.watchdog_fired = true;
  }
  violate(invariant::kNoDeadlock, message);
  CampaignSummary s = snapshot();
  say(s.to_text());
  if (o_.on_watchdog) {
    o_.on_watchdog(s);
    return;
  }
  std::_Exit(3);
}

}  // namespace

CampaignSummary run_campaign(const CampaignOptions& options, std::ostream& out) {
  register_fault_injection_adapters();
  Campaign campaign(options, out);
  return campaign.run();
}

}  // namespace lmcache::fault
