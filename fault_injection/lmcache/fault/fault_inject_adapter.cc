#include "lmcache/fault/fault_inject_adapter.h"

#include <sys/eventfd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "lmcache/core/close_quietly.h"
#include "lmcache/core/poll_loop.h"
#include "lmcache/fault/internal/knobs.h"
#include "lmcache/fault/internal/publication_schedule.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::fault {
namespace {

using namespace fault_internal;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and bookkeeping.

FaultInjectL2Adapter::FaultInjectL2Adapter(L2AdapterPtr inner, FaultInjectOptions options,
                                           std::shared_ptr<FaultLog> log)
    : L2AdapterBase("FaultInjectL2Adapter"),
      inner_(inner ? std::move(inner)
                   : throw std::invalid_argument("FaultInjectL2Adapter: inner adapter is null")),
      options_(std::move(options)),
      log_(log ? std::move(log) : std::make_shared<FaultLog>()),
      rng_(static_cast<std::uint64_t>(options_.seed())),
      schedule_(std::make_unique<fault_internal::PublicationSchedule>()) {
  pump_ = std::make_unique<PollLoop>(
      std::vector<int>{this->inner().get_store_event_fd(),
                       this->inner().get_lookup_and_lock_event_fd(),
                       this->inner().get_load_event_fd()},
      std::vector<PollLoop::Step>{[this] { collect_inner_stores(); },
                                  [this] { collect_inner_queries(Op::kLookup); },
                                  [this] { collect_inner_queries(Op::kLoad); },
                                  [this] {
                                    std::lock_guard lock(mu_);
                                    publish_due_locked(Clock::now());
                                  }},
      PollLoopOptions{std::chrono::milliseconds(100)}, [this] {
        std::lock_guard lock(mu_);
        return next_deadline_locked();
      });
  pump_->start();
}

FaultInjectL2Adapter::~FaultInjectL2Adapter() { close_quietly(*this); }

const char* FaultInjectL2Adapter::op_name(Op op) {
  switch (op) {
    case Op::kStore:
      return "store";
    case Op::kLookup:
      return "lookup";
    case Op::kLoad:
      return "load";
  }
  return "?";
}

void FaultInjectL2Adapter::record(FaultKind kind, FaultEffect effect, const Task& task,
                                  std::vector<ObjectKey> keys, std::string detail, bool effective,
                                  std::vector<const MemoryObj*> objects) {
  log_->record({.kind = kind,
                .effect = effect,
                .keys = std::move(keys),
                .objects = std::move(objects),
                .effective = effective,
                .detail = std::string(op_name(task.op)) + (detail.empty() ? "" : ": " + detail)});
}

void FaultInjectL2Adapter::record_damage(FaultKind kind, FaultEffect effect, const Task& task,
                                         std::vector<ObjectKey> keys, std::string detail,
                                         std::size_t position, const MemoryObj& obj,
                                         std::optional<std::size_t> first_damaged_byte) {
  log_->record({.kind = kind,
                .effect = effect,
                .keys = std::move(keys),
                .objects = {&obj},
                .effective = first_damaged_byte.has_value(),
                .detail = std::string(op_name(task.op)) + ": " + detail,
                .damaged_key = task.keys.at(position),
                .first_damaged_byte = first_damaged_byte});
}

std::uint64_t FaultInjectL2Adapter::decision_index(Op op, const std::vector<ObjectKey>& keys) {
  return occurrences_.next(static_cast<std::uint64_t>(op) + 1, digest_keys(keys));
}

void FaultInjectL2Adapter::maybe_throw_at_submit(Op op, const std::vector<ObjectKey>& keys,
                                                 std::uint64_t index) {
  if (!rng_.chance(options_.submit_throw_rate, "submit_throw", index)) return;
  Task t;
  t.op = op;
  record(FaultKind::kSubmitThrow, FaultEffect::kFailsTask, t, keys, "");
  throw InjectedFault(std::string("submit_") + op_name(op) + "_task of " +
                      std::to_string(keys.size()) + " keys (fault_inject)");
}

// ---------------------------------------------------------------------------------------------
// Submits.

FaultInjectL2Adapter::Task FaultInjectL2Adapter::new_task(
    Op op, const std::vector<ObjectKey>& keys, const std::vector<MemoryObjPtr>& objects) {
  const std::uint64_t index = decision_index(op, keys);
  maybe_throw_at_submit(op, keys, index);
  Task task;
  task.op = op;
  task.keys = keys;
  task.objects = objects;
  task.index = index;
  task.submitted = Clock::now();
  return task;
}

void FaultInjectL2Adapter::track_locked(TaskId id, Task task, TaskId inner_id) {
  task.inner_id = inner_id;
  inner_to_outer_[static_cast<int>(task.op)][inner_id] = id;
  tasks_.emplace(id, std::move(task));
}

void FaultInjectL2Adapter::do_store(TaskId id, const std::vector<ObjectKey>& keys,
                                    const std::vector<MemoryObjPtr>& objects) {
  Task task = new_task(Op::kStore, keys, objects);
  const std::uint64_t index = task.index;
  task.fail_store = rng_.chance(options_.store_fail_rate, "store_fail", index);
  if (task.fail_store) {
    task.delete_after = options_.store_fail_mode == StoreFailMode::kMixed
                            ? rng_.chance(0.5, "store_fail_mode", index)
                            : options_.store_fail_mode == StoreFailMode::kDeleteAfter;
  } else {
    task.hang = rng_.chance(options_.hang_rate, "hang", index);
  }

  std::lock_guard lock(mu_);
  if (closing_) throw_closed("submit_store_task");
  // Record before anything can complete: the pump needs mu_ to publish.
  if (task.fail_store) {
    record(FaultKind::kStoreFail, FaultEffect::kFailsTask, task, keys,
           task.delete_after ? "delete_after" : "never_forward");
  }
  if (task.hang) record(FaultKind::kHang, FaultEffect::kHang, task, keys, "");
  if (task.fail_store && !task.delete_after) {
    task.store_result = L2StoreResult::failure();
    Task& t = tasks_.emplace(id, std::move(task)).first->second;
    schedule_locked(id, t);
    pump_->wake();
    return;
  }
  track_locked(id, std::move(task), inner().submit_store_task(keys, objects));
}

void FaultInjectL2Adapter::do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) {
  Task task = new_task(Op::kLookup, keys, {});
  std::lock_guard lock(mu_);
  if (closing_) throw_closed("submit_lookup_and_lock_task");
  track_locked(id, std::move(task), inner().submit_lookup_and_lock_task(keys));
}

void FaultInjectL2Adapter::do_unlock(const std::vector<ObjectKey>& keys) {
  inner().submit_unlock(keys);
}

void FaultInjectL2Adapter::do_load(TaskId id, const std::vector<ObjectKey>& keys,
                                   const std::vector<MemoryObjPtr>& objects) {
  Task task = new_task(Op::kLoad, keys, objects);
  task.hang = rng_.chance(options_.hang_rate, "hang", task.index);
  std::lock_guard lock(mu_);
  if (closing_) throw_closed("submit_load_task");
  if (task.hang) record(FaultKind::kHang, FaultEffect::kHang, task, keys, "");
  track_locked(id, std::move(task), inner().submit_load_task(keys, objects));
}

void FaultInjectL2Adapter::do_delete(const std::vector<ObjectKey>& keys) {
  inner().delete_keys(keys);
}

// ---------------------------------------------------------------------------------------------
// The pump.

void FaultInjectL2Adapter::collect_inner_stores() {
  auto done = inner().pop_completed_store_tasks();
  if (done.empty()) return;
  struct Hit {
    TaskId id;
    Task* task;
    L2StoreResult result;
  };
  std::vector<Hit> hits;
  {
    std::lock_guard lock(mu_);
    auto& map = inner_to_outer_[static_cast<int>(Op::kStore)];
    for (auto& [inner_id, result] : done) {
      auto it = map.find(inner_id);
      if (it == map.end()) {
        stray_results_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      hits.push_back({it->second, &tasks_.at(it->second), result});
      map.erase(it);
    }
  }
  // Tasks stay put: only this thread erases them (or close(), after joining it).
  for (auto& h : hits) h.result = apply_store_faults(*h.task, h.result);
  std::lock_guard lock(mu_);
  for (auto& h : hits) {
    h.task->store_result = h.result;
    schedule_locked(h.id, *h.task);
  }
}

void FaultInjectL2Adapter::collect_inner_queries(Op op) {
  std::vector<std::pair<TaskId, TaskId>> pending;
  {
    std::lock_guard lock(mu_);
    const auto& map = inner_to_outer_[static_cast<int>(op)];
    pending.assign(map.begin(), map.end());
  }
  for (auto [inner_id, id] : pending) {
    std::optional<Bitmap> bits = op == Op::kLookup ? inner().query_lookup_and_lock_result(inner_id)
                                                   : inner().query_load_result(inner_id);
    if (!bits) continue;
    Task* task;
    {
      std::lock_guard lock(mu_);
      inner_to_outer_[static_cast<int>(op)].erase(inner_id);
      task = &tasks_.at(id);
    }
    Bitmap out = op == Op::kLookup ? apply_lookup_faults(*task, std::move(*bits))
                                   : apply_load_faults(*task, std::move(*bits));
    std::lock_guard lock(mu_);
    task->bitmap = std::move(out);
    schedule_locked(id, *task);
  }
}

L2StoreResult FaultInjectL2Adapter::apply_store_faults(Task& task, L2StoreResult result) {
  if (!task.fail_store) return result;
  // delete_after: the inner adapter may hold the keys now; they must not stay visible once
  // the failure is published.
  if (result.is_successful()) inner().delete_keys(task.keys);
  return L2StoreResult::failure();
}

Bitmap FaultInjectL2Adapter::apply_lookup_faults(Task& task, Bitmap bits) {
  if (!(options_.lookup_miss_rate > 0.0)) return bits;
  std::vector<ObjectKey> unlock;
  for (std::size_t i : bits.set_indices()) {
    if (i >= task.keys.size()) break;
    if (!rng_.chance(options_.lookup_miss_rate, "lookup_miss", task.index, i)) continue;
    bits.clear(i);
    unlock.push_back(task.keys[i]);
    record(FaultKind::kLookupMiss, FaultEffect::kMiss, task, {task.keys[i]},
           "position " + std::to_string(i));
  }
  // The inner adapter locked what it found; the caller will not unlock what it was told is
  // absent, so the injector must.
  if (!unlock.empty()) inner().submit_unlock(unlock);
  return bits;
}

Bitmap FaultInjectL2Adapter::apply_load_faults(Task& task, Bitmap bits) {
  // 1. The Python rule: clear dropped positions (only a set bit is a real drop).
  for (std::size_t i : options_.drop.dropped_positions(task.keys)) {
    if (!bits.test(i)) continue;
    bits.clear(i);
    record(FaultKind::kLoadDrop, FaultEffect::kMiss, task, {task.keys[i]},
           "position " + std::to_string(i));
  }
  // 2. Damage the bytes of keys that stay loaded.
  for (std::size_t i : bits.set_indices()) {
    if (i >= task.objects.size() || !task.objects[i]) continue;
    MemoryObj& obj = *task.objects[i];
    const std::size_t size = obj.size();
    if (rng_.chance(options_.truncate_rate, "truncate", task.index, i)) {
      const bool narrow = options_.truncate_mode == TruncateMode::kMixed
                              ? rng_.chance(0.5, "truncate_mode", task.index, i)
                              : options_.truncate_mode == TruncateMode::kNarrow;
      const std::size_t keep = static_cast<std::size_t>(
          rng_.below(size, "truncate_keep", task.index, i));  // in [0, size)
      if (narrow) {
        if (size > 0) obj.set_used_size(keep);
        // A short source must be rejected by the deserializer: the whole wrapped load fails
        // (when the cut reaches into the frame; see FaultEvent::first_damaged_byte).
        record_damage(FaultKind::kTruncate, FaultEffect::kFailsTask, task, task.keys,
                      "narrow position " + std::to_string(i) + " " + std::to_string(size) + " -> " +
                          std::to_string(keep) + " bytes",
                      i, obj, size > 0 ? std::optional<std::size_t>(keep) : std::nullopt);
        continue;
      }
      std::optional<std::size_t> first_changed;
      auto bytes = obj.bytes();
      for (std::size_t b = keep; b < size; ++b) {
        if (bytes[b] != std::byte{0} && !first_changed) first_changed = b;
        bytes[b] = std::byte{0};
      }
      record_damage(FaultKind::kTruncate, FaultEffect::kCorruptsData, task, {task.keys[i]},
                    "zero_tail position " + std::to_string(i) + " from byte " +
                        std::to_string(keep) + " of " + std::to_string(size),
                    i, obj, first_changed);
      continue;
    }
    if (rng_.chance(options_.corrupt_rate, "corrupt", task.index, i)) {
      std::map<std::size_t, std::uint8_t> masks;
      if (size > 0) {
        for (std::int64_t b = 0; b < options_.corrupt_bits; ++b) {
          std::uint64_t bit = rng_.below(size * 8, "corrupt_bit", task.index,
                                         (static_cast<std::uint64_t>(i) << 8) | b);
          masks[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        }
      }
      std::optional<std::size_t> first_changed;  // masks are in byte order
      std::string where;
      auto bytes = obj.bytes();
      for (auto [byte, mask] : masks) {
        if (!mask) continue;
        if (!first_changed) first_changed = byte;
        bytes[byte] ^= std::byte{mask};
        where += (where.empty() ? "" : ",") + std::to_string(byte);
      }
      record_damage(FaultKind::kCorrupt, FaultEffect::kCorruptsData, task, {task.keys[i]},
                    "position " + std::to_string(i) + " bytes " + (where.empty() ? "none" : where),
                    i, obj, first_changed);
    }
  }
  return bits;
}

void FaultInjectL2Adapter::schedule_locked(TaskId id, Task& task) {
  if (task.hang) {
    task.state = State::kHung;
    return;
  }
  const auto now = Clock::now();
  const std::uint64_t idx = task.index;
  if (rng_.chance(options_.reorder_rate, "reorder", idx) ||
      rng_.chance(options_.coalesce_rate, "coalesce", idx)) {
    task.coalesce = !rng_.chance(options_.reorder_rate, "reorder", idx);
    record(task.coalesce ? FaultKind::kCoalesce : FaultKind::kReorder, FaultEffect::kNone, task,
           task.keys, "held up to " + Json(options_.max_hold_ms).dump() + " ms");
    task.state = State::kHeld;
    task.due = now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(options_.max_hold_ms));
    schedule_->hold(static_cast<int>(task.op), id, task.due, task.coalesce);
    return;
  }
  task.due = now;
  if (rng_.chance(options_.delay_rate, "delay", idx)) {
    double ms = rng_.uniform("delay_ms", idx) * options_.max_delay_ms;
    task.due = now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double, std::milli>(ms));
    record(FaultKind::kDelay, FaultEffect::kNone, task, task.keys,
           "+" + std::to_string(static_cast<int>(ms * 1000)) + " us");
  }
  task.state = State::kScheduled;
  schedule_->schedule(id, task.due);
  if (task.due > now) pump_->wake();  // let the pump recompute its timeout
}

FaultInjectL2Adapter::Clock::time_point FaultInjectL2Adapter::next_deadline_locked() const {
  return schedule_->next_deadline();
}

void FaultInjectL2Adapter::publish_due_locked(Clock::time_point now) {
  const auto direction_of = [this](TaskId id) { return static_cast<int>(tasks_.at(id).op); };
  for (TaskId id : schedule_->take_due(now, direction_of)) complete_locked(id);
}

void FaultInjectL2Adapter::complete_locked(TaskId id) {
  auto it = tasks_.find(id);
  Task& t = it->second;
  int spurious_fd = -1;
  if (rng_.chance(options_.spurious_wakeup_rate, "spurious", t.index)) {
    static constexpr const char* kNames[] = {"store", "lookup", "load"};
    const auto which = rng_.below(3, "spurious_fd", t.index);
    spurious_fd = which == 0   ? get_store_event_fd()
                  : which == 1 ? get_lookup_and_lock_event_fd()
                               : get_load_event_fd();
    // Recorded before the completion becomes visible, like every event.
    record(FaultKind::kSpuriousWakeup, FaultEffect::kNone, t, t.keys,
           std::string("extra notify on the ") + kNames[which] + " fd");
  }
  if (t.op == Op::kStore) {
    complete(id, *t.store_result);
  } else {
    complete(id, std::move(*t.bitmap));
  }
  // A notify with no result behind it: a consumer must cope with an empty scan.
  if (spurious_fd >= 0) ::eventfd_write(spurious_fd, 1);
  tasks_.erase(it);
}

// ---------------------------------------------------------------------------------------------
// Status and close.

Json FaultInjectL2Adapter::pending_summary() const {
  std::lock_guard lock(mu_);
  Json out = Json::object();
  for (Op op : {Op::kStore, Op::kLookup, Op::kLoad}) {
    out[op_name(op)] = {{"at_inner", 0}, {"scheduled", 0}, {"held", 0}, {"hung", 0}};
  }
  for (const auto& [id, t] : tasks_) {
    static constexpr const char* kStates[] = {"at_inner", "scheduled", "held", "hung"};
    auto& slot = out[op_name(t.op)][kStates[static_cast<int>(t.state)]];
    slot = slot.get<int>() + 1;
  }
  return out;
}

std::string FaultInjectL2Adapter::describe_task(const ObjectKey& key) const {
  std::lock_guard lock(mu_);
  for (auto it = tasks_.rbegin(); it != tasks_.rend(); ++it) {
    const Task& t = it->second;
    if (std::find(t.keys.begin(), t.keys.end(), key) == t.keys.end()) continue;
    static constexpr const char* kStates[] = {"at the inner adapter", "scheduled for publication",
                                              "held (reorder/coalesce)",
                                              "hung on purpose (hang fault)"};
    std::ostringstream out;
    out << op_name(t.op) << " task " << it->first;
    if (t.inner_id) out << " (inner " << *t.inner_id << ")";
    out << ": " << kStates[static_cast<int>(t.state)] << " for "
        << std::chrono::duration<double>(Clock::now() - t.submitted).count() << " s since submit";
    return out.str();
  }
  return "no unpublished task of the fault injector holds this key (it was published, or never "
         "reached the injector)";
}

Json FaultInjectL2Adapter::report_status() const {
  Json status = inner().report_status();
  Json fi = options_.to_json();
  fi["pending"] = pending_summary();
  fi["pump_errors"] = pump_->exceptions_swallowed();
  fi["stray_inner_results"] = stray_results_.load(std::memory_order_relaxed);
  fi["events_dropped"] = log_->dropped();
  fi["closed"] = closing();
  status["fault_inject"] = std::move(fi);
  return status;
}

void FaultInjectL2Adapter::do_close() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  if (options_.slow_close_ms > 0) {
    FaultEvent e;
    e.kind = FaultKind::kSlowClose;
    e.effect = FaultEffect::kNone;
    e.detail = std::to_string(options_.slow_close_ms) + " ms";
    log_->record(std::move(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.slow_close_ms));
  }
  pump_->stop();
  close_quietly(inner());
  {
    std::lock_guard lock(mu_);
    tasks_.clear();  // unpublished results are dropped, never signalled; release the buffers
    for (auto& m : inner_to_outer_) m.clear();
    schedule_->clear();
  }
}

// ---------------------------------------------------------------------------------------------
// Registration.

void register_fault_injection_adapters() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto names = registered_l2_adapter_types();
    if (std::find(names.begin(), names.end(), FaultInjectL2Adapter::kTypeName) != names.end()) {
      return;
    }
    register_l2_adapter_type(
        std::string(FaultInjectL2Adapter::kTypeName),
        [](const Json& config, const AdapterContext& ctx) -> L2AdapterPtr {
          FaultInjectConfig parsed = parse_fault_inject_config(config);  // before any thread
          const std::string inner_type = parsed.inner.at("type").get<std::string>();
          L2AdapterPtr inner = create_l2_adapter(parsed.inner, ctx);
          const auto& d = parsed.options.drop;
          std::cerr << "FaultInjectL2Adapter ACTIVE (rate=" << d.rate << ", seed=" << d.seed
                    << ", gap_indices=" << Json(d.gap_indices).dump()
                    << ", gap_tail_ratios=" << Json(d.gap_tail_ratios).dump() << ") wrapping "
                    << inner_type << " -- test/diagnostic use only.\n";
          return std::make_unique<FaultInjectL2Adapter>(std::move(inner),
                                                        std::move(parsed.options));
        });
  });
}

}  // namespace lmcache::fault
