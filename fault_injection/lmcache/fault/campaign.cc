// File: lmcache/fault/campaign.cc
//
// run_campaign() and most of its driver, class Campaign (internal/campaign_driver.h): the waves of
// operations chosen by the Workload, their results, the FaultLog's events attributed to them, the
// Judge's check of each completed task, close()'s obligations at the end of each epoch, and the
// watchdog's callbacks. The real storage faults are in internal/campaign_strikes.cc; the pieces the
// driver uses live in internal/ too: campaign_stack (each epoch's stack, built bottom up),
// campaign_workload (keys, model, the seeded choice of operations), campaign_invariants
// (Attribution, Judge), campaign_ledger (every check's outcome, the summary) and
// campaign_watchdog (stuck tasks and calls, fd and thread accounting).
#include "lmcache/fault/campaign.h"
#include "lmcache/fault/internal/campaign_driver.h"

#include <poll.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/process_resources.h"
#include "lmcache/fault/fault_inject_adapter.h"
#include "lmcache/fault/internal/campaign_invariants.h"
#include "lmcache/fault/internal/campaign_ledger.h"
#include "lmcache/fault/internal/campaign_stack.h"
#include "lmcache/fault/internal/campaign_watchdog.h"
#include "lmcache/fault/internal/campaign_workload.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/serde_config.h"

namespace lmcache::fault_internal {

// ---------------------------------------------------------------------------------------------
// The driver (internal/campaign_driver.h).

namespace {

using namespace std::chrono_literals;

// Whether `serde` (a serde config) has an integrity stage: checksum, aesgcm or encrypt, alone or
// in a chain. Such a serde must refuse damaged frames (docs/integrity.md).
bool serde_detects_corruption(const Json& serde) {
  auto integrity = [](const Json& c) {
    auto t = c.find("type");
    return t != c.end() && t->is_string() &&
           (*t == "checksum" || *t == "aesgcm" || *t == "encrypt");
  };
  if (!serde.is_object()) return false;
  if (integrity(serde)) return true;
  auto t = serde.find("type");
  auto stages = serde.find("stages");
  if (t == serde.end() || *t != "chain" || stages == serde.end() || !stages->is_array()) {
    return false;
  }
  for (const Json& stage : *stages) {
    if (stage.is_object() && integrity(stage)) return true;
  }
  return false;
}

}  // namespace

using namespace ::lmcache::fault;  // the public types the driver works with

Campaign::Campaign(const fault::CampaignOptions& options, std::ostream& out)
    : o_(options),
      ledger_(out),
      workload_(options.seed, options.key_count, options.max_batch),
      judge_(
          ledger_, workload_, model_, [this] { return stack_->top().get_usage(); },
          SerdeConfig::from_json(options.serde).type == "fp8",
          serde_detects_corruption(options.serde)),
      watchdog_(
          options.task_timeout,
          [this](std::optional<std::size_t> key0) { return describe_stack(key0); },
          [this](const std::string& message) { fire_watchdog(message); }) {
  if (o_.operations == 0 && !(o_.seconds > 0)) {
    throw std::invalid_argument("campaign: give a number of operations or a duration");
  }
  if (o_.key_count < 8) throw std::invalid_argument("campaign: key_count must be >= 8");
  if (o_.max_batch == 0 || o_.max_in_flight == 0 || o_.epoch_ops == 0) {
    throw std::invalid_argument("campaign: max_batch, max_in_flight and epoch_ops must be > 0");
  }
  if (o_.expect_strikes && !o_.storage_faults) {
    throw std::invalid_argument(
        "campaign: expecting real storage strikes needs real storage faults (--storage-faults)");
  }
  log_ = std::make_shared<FaultLog>();
  storage_strikes_ = o_.storage_faults && !o_.storage_faults->kinds().empty();
}

bool Campaign::finished() const {
  if (o_.operations > 0 && ops_ >= o_.operations) return true;
  if (o_.seconds > 0 &&
      std::chrono::duration<double>(Clock::now() - start_).count() >= o_.seconds) {
    return true;
  }
  return false;
}

void Campaign::build_stack() {
  auto stack = std::make_unique<CampaignStack>(o_, epoch_, log_);
  std::lock_guard lock(stack_mu_);
  stack_ = std::move(stack);
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
    if (o_.storage_faults) {
      cfg["storage_faults"] = o_.storage_faults->kinds();
      cfg["storage_faults_skipped"] = o_.storage_faults->skipped();
      cfg["storage_rate"] = o_.storage_rate;
    }
    ledger_.update([&](CampaignSummary& s) {
      s.seed = o_.seed;
      s.config = cfg;
      if (o_.storage_faults) {
        for (const std::string& k : o_.storage_faults->kinds()) s.storage_faults_struck[k] = 0;
        s.storage_faults_skipped = o_.storage_faults->skipped();
      }
    });
  }
  say("lmcache-fault-campaign: operations=" + std::to_string(o_.operations) +
      (o_.seconds > 0 ? " seconds=" + Json(o_.seconds).dump() : "") + " faults=" + o_.faults +
      " rate=" + Json(o_.rate).dump() + " inner=" + o_.inner.value("type", "?") +
      (o_.storage_faults ? " storage_rate=" + Json(o_.storage_rate).dump() : "") +
      " serde=" + o_.serde.dump() +
      (o_.mutant != StackMutant::kNone ? " mutant=" + std::string(mutant_info(o_.mutant).name)
                                       : ""));
  workload_.prepare_keys(o_.serde);
  // A wave's temps must fit in L1: an L1 too small for them fails loads no fault explains, which
  // the judge would report as violations of the stack (miss_explained) rather than of the setup.
  const std::uint64_t wave_temps =
      static_cast<std::uint64_t>(workload_.largest_temp_bytes()) * o_.max_batch * o_.max_in_flight;
  if (o_.l1_capacity_bytes < wave_temps) {
    throw std::invalid_argument(
        "campaign: an L1 budget of " + std::to_string(o_.l1_capacity_bytes) +
        " bytes (--l1-capacity-mb) cannot hold the temps of one wave: " +
        std::to_string(o_.max_in_flight) + " tasks (--max-in-flight) x " +
        std::to_string(o_.max_batch) + " keys (--max-batch) x " +
        std::to_string(workload_.largest_temp_bytes()) + " bytes = " + std::to_string(wave_temps) +
        " bytes; raise --l1-capacity-mb or lower the others");
  }
  watchdog_.start();
  base_resources_ = ProcessResources::take();
  try {
    while (!finished()) run_epoch();
  } catch (...) {
    watchdog_.stop();
    throw;
  }
  watchdog_.stop();
  if (o_.expect_injections) {
    for (FaultKind k : o_.plan.enabled_kinds()) {
      check(log_->count(k) > 0, invariant::kFaultInjected, [&] {
        return "fault kind " + std::string(fault_kind_name(k)) +
               " is enabled but was never injected (raise --rate or --operations)";
      });
    }
  }
  if ((o_.expect_injections || o_.expect_strikes) && o_.storage_faults) {
    const auto struck = ledger_.summary().storage_faults_struck;
    for (const std::string& k : o_.storage_faults->kinds()) {
      auto it = struck.find(k);
      check(it != struck.end() && it->second > 0, invariant::kFaultInjected, [&] {
        return "storage fault " + k +
               " is enabled but never struck (raise --storage-rate or --operations)";
      });
    }
  }
  CampaignSummary s = snapshot();
  say(s.to_text());
  return s;
}

CampaignSummary Campaign::snapshot() {
  CampaignSummary s = ledger_.summary();
  s.operations = ops_;
  s.epochs = epoch_;
  s.duration_s = std::chrono::duration<double>(Clock::now() - start_).count();
  s.faults_injected = log_->counts_json();
  for (const auto& [kind, n] : s.storage_faults_struck) s.faults_injected[kind] = n;
  std::uint64_t fp = s.fingerprint;
  for (auto it = s.faults_injected.begin(); it != s.faults_injected.end(); ++it) {
    fp ^= splitmix64(Fnv1a64().add(it.key()).add_u64(it.value().get<std::uint64_t>()).value());
  }
  s.fingerprint = fp;
  return s;
}

void Campaign::run_epoch() {
  ++epoch_;
  ledger_.at(ops_, epoch_);
  build_stack();
  model_.assign(workload_.size(), KeyState{});
  epoch_ops_ = 0;
  hang_seen_ = false;
  while (!finished() && epoch_ops_ < o_.epoch_ops && !hang_seen_) run_wave();
  // The stack closes over healthy storage; a strike cut short by the epoch ends here.
  if (strike_active_) {
    if (!strike_healed_) heal_storage();
    end_strike();
  }
  close_stack();
  if (o_.verbose) {
    say("[epoch " + std::to_string(epoch_) + "] done at operation " + std::to_string(ops_));
  }
}

void Campaign::run_wave() {
  const std::uint64_t width = 1 + workload_.below(o_.max_in_flight);
  for (std::uint64_t w = 0; w < width && !finished(); ++w) submit_random_op();
  if (!strike_active_) maybe_strike();
  wait_wave();
  after_wave_storage();
  bool hung = false;
  for (const auto& [s, t] : tasks_) hung |= t.hung;
  if (!hung) check_idle();
}

void Campaign::submit_random_op() {
  std::optional<Workload::NextOp> next =
      workload_.next_op(model_, [this](std::size_t i) { return key_owner_.count(i) != 0; });
  if (!next) return;
  ++ops_;
  ++epoch_ops_;
  ledger_.at(ops_, epoch_);
  ledger_.update([&](CampaignSummary& s) { ++s.operations_by_kind[op_name(next->kind)]; });
  submit(next->kind, std::move(next->key_indexes));
}

void Campaign::submit(OpKind kind, std::vector<std::size_t> key_idx) {
  CampaignTask t;
  t.serial = ++serial_;
  t.kind = kind;
  t.op = ops_;
  t.key_idx = std::move(key_idx);
  for (std::size_t i : t.key_idx) {
    t.keys.push_back(workload_.key(i).key);
    t.frame_bytes.push_back(workload_.key(i).serialized_bytes);
  }

  if (kind == OpKind::kDelete) {
    Watchdog::Call call(watchdog_, "delete_keys", o_.task_timeout);
    try {
      stack_->top().delete_keys(t.keys);
      pass(invariant::kSubmitDoesNotThrow);
      for (std::size_t i : t.key_idx) model_[i] = KeyState{};
    } catch (const std::exception& e) {
      violate(invariant::kSubmitDoesNotThrow, "delete_keys threw: " + std::string(e.what()));
    }
    return;
  }
  if (kind != OpKind::kLookup) {
    for (std::size_t i : t.key_idx) {
      MemoryObjPtr obj = MemoryObj::allocate(layout_for_class(workload_.key(i).layout_class));
      if (kind == OpKind::kStore) {
        std::memcpy(obj->data(), workload_.key(i).source.data(), workload_.key(i).source.size());
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
  watchdog_.watch(serial, kind, t.key_idx.front());
  CampaignTask& task = tasks_.emplace(serial, std::move(t)).first->second;
  if (strike_active_ && strike_disturbs_) task.storage_faults.push_back(strike_text_);

  const char* call_name = kind == OpKind::kStore  ? "submit_store_task"
                          : kind == OpKind::kLoad ? "submit_load_task"
                                                  : "submit_lookup_and_lock_task";
  try {
    Watchdog::Call call(watchdog_, call_name, o_.task_timeout);
    AttributionScope scope(serial);
    switch (kind) {
      case OpKind::kStore:
        task.id = stack_->top().submit_store_task(task.keys, task.objects);
        break;
      case OpKind::kLoad:
        task.id = stack_->top().submit_load_task(task.keys, task.objects);
        break;
      default:
        task.id = stack_->top().submit_lookup_and_lock_task(task.keys);
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
  watchdog_.submitted(serial, task.id);
}

bool Campaign::any_waiting() const {
  for (const auto& [s, t] : tasks_) {
    if (t.submitted && !t.completed && !t.hung) return true;
  }
  return false;
}

void Campaign::wait_wave() {
  while (any_waiting()) {
    pollfd fds[3] = {{stack_->store_fd(), POLLIN, 0},
                     {stack_->load_fd(), POLLIN, 0},
                     {stack_->lookup_fd(), POLLIN, 0}};
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
  for (auto& [id, result] : stack_->top().pop_completed_store_tasks()) {
    auto it = store_ids_.find(id);
    if (it == store_ids_.end()) {
      violate(invariant::kCompletesExactlyOnce,
              "a store result for wrapper task " + std::to_string(id) +
                  ", which is not in flight (completed before, or never submitted): " +
                  result.to_string());
      continue;
    }
    pass(invariant::kCompletesExactlyOnce);
    CampaignTask& t = tasks_.at(it->second);
    t.store_result = result;
    t.completed = true;
    store_ids_.erase(it);
  }
  auto take = [&](std::map<TaskId, std::uint64_t>& ids, bool lookup) {
    for (auto it = ids.begin(); it != ids.end();) {
      std::optional<Bitmap> bits = lookup ? stack_->top().query_lookup_and_lock_result(it->first)
                                          : stack_->top().query_load_result(it->first);
      if (!bits) {
        ++it;
        continue;
      }
      CampaignTask& t = tasks_.at(it->second);
      std::optional<Bitmap> again = lookup ? stack_->top().query_lookup_and_lock_result(it->first)
                                           : stack_->top().query_load_result(it->first);
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
    // The event's keys and caller objects name its owners. The scope (the task whose submit ran
    // on the recording thread) only stands in when they name none: a submit may carry other
    // tasks on (the wrapper's finish_on_submit drains their completed steps), and a fault in
    // one of those belongs to that task, not to the submitter's.
    std::set<std::uint64_t> owners;
    for (const auto& k : e.keys) {
      std::optional<std::size_t> ki = workload_.index_of(k);
      if (!ki) continue;
      auto ow = key_owner_.find(*ki);
      if (ow != key_owner_.end() && e.seq >= ow->second.second) owners.insert(ow->second.first);
    }
    for (const MemoryObj* obj : e.objects) {
      auto ow = object_owner_.find(obj);
      if (ow != object_owner_.end() && e.seq >= ow->second.second) owners.insert(ow->second.first);
    }
    if (owners.empty() && e.scope_tag && tasks_.count(e.scope_tag)) owners.insert(e.scope_tag);
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
      CampaignTask& t = tasks_.at(s);
      if (e.effect == FaultEffect::kHang && !t.hung) {
        t.hung = true;
        hang_seen_ = true;
        ledger_.update([](CampaignSummary& s) { ++s.hung_tasks; });
      }
      t.events.push_back(e);
    }
  }
  // The watchdog ignores hung tasks.
  for (const auto& [s, t] : tasks_) {
    if (t.hung) watchdog_.forget(s);
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

void Campaign::evaluate(CampaignTask& t) {
  const Attribution a = attribute(t);
  switch (t.kind) {
    case OpKind::kStore:
      judge_.store(t, a);
      break;
    case OpKind::kLoad:
      judge_.load(t, a);
      break;
    case OpKind::kLookup: {
      std::vector<ObjectKey> unlock = judge_.lookup(t, a);
      if (!unlock.empty()) {
        Watchdog::Call call(watchdog_, "submit_unlock", o_.task_timeout);
        stack_->top().submit_unlock(unlock);
      }
      break;
    }
    case OpKind::kDelete:
      break;
  }
  const std::uint64_t fp = fingerprint_of(t);
  ledger_.update([fp](CampaignSummary& s) { s.fingerprint += fp; });
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
  watchdog_.forget(serial);
}

void Campaign::check_idle() {
  const std::size_t used = stack_->l1().get_memory_usage().used_bytes;
  check(used == stack_->l1_baseline(), invariant::kNoTempLeakIdle, [&] {
    std::string held = "?";
    try {
      held = stack_->wrapper().report_status()["serde_wrapper"]["temp_bytes_held"].dump();
    } catch (...) {
    }
    return "L1 holds " + std::to_string(used) + " bytes with no task in flight (baseline " +
           std::to_string(stack_->l1_baseline()) + "; the wrapper counts " + held + " temp bytes)";
  });
}

void Campaign::close_stack() {
  if (MockL2Adapter* mock = stack_->mock(); mock != nullptr) {
    // Unlocks are fire and forget; give them a moment to land.
    auto deadline = Clock::now() + 2s;
    while (mock->locked_key_count() != 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(2ms);
    const std::size_t locked = mock->locked_key_count();
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
    Watchdog::Call call(watchdog_, "close()",
                        o_.task_timeout + std::chrono::milliseconds(o_.plan.adapter.slow_close_ms));
    try {
      stack_->top().close();
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
    const CampaignTask& t = tasks_.at(s);
    violate(invariant::kCompletesByClose, task_text(t) + (t.hung ? " (hung on purpose)" : "") +
                                              " never completed, not even by close()");
    release(s);
  }
  if (left.empty()) pass(invariant::kCompletesByClose);
  const std::size_t used = stack_->l1().get_memory_usage().used_bytes;
  check(used == stack_->l1_baseline(), invariant::kNoTempLeakAfterClose, [&] {
    return "after close() L1 holds " + std::to_string(used) + " bytes (baseline " +
           std::to_string(stack_->l1_baseline()) + ")";
  });
  check_process_resources(ledger_, base_resources_);
  std::unique_ptr<CampaignStack> stack;
  {
    std::lock_guard lock(stack_mu_);
    stack = std::move(stack_);
  }
  stack.reset();  // top down, L1 last
  store_ids_.clear();
  load_ids_.clear();
  lookup_ids_.clear();
  key_owner_.clear();
  object_owner_.clear();
  tasks_.clear();
}

// ---------------------------------------------------------------------------------------------
// Watchdog.

std::string Campaign::describe_stack(std::optional<std::size_t> key0) {
  std::unique_lock stack(stack_mu_, std::defer_lock);
  if (!stack.try_lock_for(200ms) || !stack_) return "";
  std::optional<ObjectKey> key;
  if (key0) key = workload_.key(*key0).key;
  return stack_->describe(key);
}

void Campaign::fire_watchdog(const std::string& message) {
  if (!ledger_.fire_once()) return;
  violate(invariant::kNoDeadlock, message);
  CampaignSummary s = snapshot();
  say(s.to_text());
  if (o_.on_watchdog) {
    o_.on_watchdog(s);
    return;
  }
  std::_Exit(3);
}

}  // namespace lmcache::fault_internal

namespace lmcache::fault {

CampaignSummary run_campaign(const CampaignOptions& options, std::ostream& out) {
  register_fault_injection_adapters();
  fault_internal::Campaign campaign(options, out);
  return campaign.run();
}

}  // namespace lmcache::fault
