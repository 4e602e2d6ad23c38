// MockL2Adapter (the behaviour is documented in mock_adapter.h). Over 600 lines: one adapter's
// config, scheduling, task bodies, lending and views share its tables and its one worker.
#include "lmcache/l2/mock_adapter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "lmcache/l2/internal/lend_ledger.h"

namespace lmcache {

namespace {

constexpr long double kBytesPerGb = 1024.0L * 1024.0L * 1024.0L;

std::string show(double value) { return Json(value).dump(); }

// int(gb * 2^30), or std::invalid_argument "<prefix><key> must be a positive number, got x".
std::uint64_t gb_to_bytes(const std::string& prefix, const std::string& key, double gb) {
  if (!std::isfinite(gb) || !(gb > 0)) {
    throw std::invalid_argument(prefix + key + " must be a positive number, got " + show(gb));
  }
  const long double bytes = static_cast<long double>(gb) * kBytesPerGb;
  if (bytes >= 18446744073709551616.0L) {  // 2^64
    throw std::invalid_argument(prefix + key + " is too large: " + show(gb) +
                                " GB does not fit in 64-bit bytes");
  }
  const auto out = static_cast<std::uint64_t>(bytes);  // truncates, as Python int()
  if (out == 0) {
    throw std::invalid_argument(prefix + key + " is too small: " + show(gb) +
                                " GB rounds to 0 bytes");
  }
  return out;
}

}  // namespace

MockL2AdapterOptions MockL2AdapterOptions::from_gb(double max_size_gb, double mock_bandwidth_gb) {
  MockL2AdapterOptions options;
  options.max_capacity_bytes = gb_to_bytes("", "max_size_gb", max_size_gb);
  options.bandwidth_bytes_per_sec = gb_to_bytes("", "mock_bandwidth_gb", mock_bandwidth_gb);
  return options;
}

MockL2AdapterOptions MockL2Adapter::parse_config(const Json& config) {
  ConfigReader reader(config, "mock adapter config");
  // Unknown keys first, so a misspelt "max_size_gb" is reported as the typo it is.
  reader.allow("type");
  reader.allow("max_size_gb");
  reader.allow("mock_bandwidth_gb");
  reader.allow("lend_load_views");
  reader.allow("run_when_idle");
  reader.finish();

  if (const Json* type = reader.raw("type"); type != nullptr) {
    if (!type->is_string() || type->get<std::string>() != kTypeName) {
      reader.error("'type' must be \"mock\", got " + type->dump());
    }
  }
  auto read_gb = [&](const std::string& key) -> std::uint64_t {
    const Json* v = reader.raw(key);
    if (v == nullptr) reader.error(key + " must be a positive number, but it is missing");
    // nlohmann's is_number() is false for booleans, so `true` is rejected here.
    if (!v->is_number()) reader.error(key + " must be a positive number, got " + v->dump());
    return gb_to_bytes(reader.context() + ": ", key, v->get<double>());
  };
  MockL2AdapterOptions options;
  options.max_capacity_bytes = read_gb("max_size_gb");
  options.bandwidth_bytes_per_sec = read_gb("mock_bandwidth_gb");
  auto read_flag = [&](const char* key, bool* out) {
    if (const Json* v = reader.raw(key); v != nullptr) {
      if (!v->is_boolean()) reader.error(std::string(key) + " must be a boolean, got " + v->dump());
      *out = v->get<bool>();
    }
  };
  read_flag("lend_load_views", &options.lend_load_views);
  read_flag("run_when_idle", &options.run_when_idle);
  return options;
}

std::unique_ptr<MockL2Adapter> MockL2Adapter::from_json(const Json& config) {
  return std::make_unique<MockL2Adapter>(parse_config(config));
}

MockL2Adapter::MockL2Adapter(MockL2AdapterOptions options)
    : L2AdapterBase("MockL2Adapter"),
      options_(options),
      usage_(options.max_capacity_bytes),
      ledger_(std::make_shared<l2_internal::LendLedger>()) {
  if (options_.max_capacity_bytes == 0) {
    throw std::invalid_argument("MockL2Adapter: max_capacity_bytes must be > 0");
  }
  if (options_.bandwidth_bytes_per_sec == 0) {
    throw std::invalid_argument("MockL2Adapter: bandwidth_bytes_per_sec must be > 0");
  }
  worker_ = std::thread([this] { worker_loop(); });
}

MockL2Adapter::~MockL2Adapter() { close(); }

// --- scheduling ---------------------------------------------------------------------------

bool MockL2Adapter::schedule(Clock::time_point due, Step step) {
  {
    std::lock_guard lock(sched_mu_);
    if (closed_.load(std::memory_order_relaxed)) return false;
    schedule_.emplace(std::make_pair(due, next_seq_++), std::move(step));
  }
  sched_cv_.notify_one();
  return true;
}

void MockL2Adapter::submit(const char* what, Body body) {
  Clock::time_point now;
  {
    // Under the schedule lock, so no task slips in after close() flips closed_.
    std::lock_guard lock(sched_mu_);
    if (closed_.load(std::memory_order_relaxed)) throw_closed(what);
    // Reading the clock under the lock keeps due times in submission order.
    now = Clock::now();
    if (!options_.run_when_idle || busy_ || !schedule_.empty()) {
      schedule_.emplace(std::make_pair(now, next_seq_++),
                        [body = std::move(body), now] { body(now); });
      body = nullptr;
    } else {
      busy_ = true;  // later submits queue behind this task; the worker waits for it
      runner_ = std::this_thread::get_id();
    }
  }
  if (!body) {
    sched_cv_.notify_one();
    return;
  }
  try {
    body(now);
  } catch (...) {
    // As on the worker: the bodies turn their own failures into failed results.
  }
  body = nullptr;  // drop the buffers it held before the next task can run
  {
    std::lock_guard lock(sched_mu_);
    busy_ = false;
    runner_ = {};
    // Under the lock: a close() that sees !busy_ may return and destroy the adapter at once.
    sched_cv_.notify_all();  // the worker (tasks queued meanwhile) and a waiting close()
  }
}

MockL2Adapter::Clock::time_point MockL2Adapter::due_after(Clock::time_point submitted,
                                                          std::uint64_t bytes) const {
  if (bytes == 0) return submitted;
  const std::chrono::duration<double> seconds(
      static_cast<double>(bytes) / static_cast<double>(options_.bandwidth_bytes_per_sec));
  // Rounded up: a task never completes before its simulated transfer time.
  return submitted + std::chrono::ceil<Clock::duration>(seconds);
}

void MockL2Adapter::complete_at(Clock::time_point due, Step step) {
  if (options_.run_when_idle && due <= Clock::now()) {
    // close() waits for the running step, so the queues are still open here.
    if (!closed_.load(std::memory_order_acquire)) step();
    return;
  }
  schedule(due, std::move(step));
}

void MockL2Adapter::worker_loop() {
  std::unique_lock lock(sched_mu_);
  while (!closed_.load(std::memory_order_relaxed)) {
    if (schedule_.empty() || busy_) {
      sched_cv_.wait(lock);
      continue;
    }
    auto it = schedule_.begin();
    if (it->first.first > Clock::now()) {
      sched_cv_.wait_until(lock, it->first.first);
      continue;
    }
    Step step = std::move(it->second);
    schedule_.erase(it);
    busy_ = true;
    runner_ = std::this_thread::get_id();
    lock.unlock();
    try {
      step();
    } catch (...) {
      // Steps turn their own failures into failed results; this only guards the thread
      // against an unexpected error (an eventfd write failure).
    }
    step = nullptr;  // drop the buffers it held before taking the lock again
    lock.lock();
    busy_ = false;
    runner_ = {};
    sched_cv_.notify_all();  // a close() waiting for this step (no waiter: no syscall)
  }
}

// --- submits --------------------------------------------------------------------------------

void MockL2Adapter::do_store(TaskId id, const std::vector<ObjectKey>& keys,
                             const std::vector<MemoryObjPtr>& objects) {
  // Sizes are fixed at submit: what the caller handed us is what we store. Lent buffers are
  // adopted here, so the caller's last write happened before (it does not write after submit).
  std::vector<std::uint64_t> sizes(objects.size());
  std::vector<bool> adopted(objects.size(), false);
  for (std::size_t i = 0; i < objects.size(); ++i) {
    sizes[i] = objects[i]->size();
    adopted[i] = ledger_->adopt(keys[i], objects[i]->data());
  }
  submit("submit_store_task",
         [this, id, keys, objects, sizes, adopted](Clock::time_point submitted) {
           L2StoreResult result = L2StoreResult::failure();
           try {
             result = run_store(keys, objects, sizes, adopted);
           } catch (...) {
             result = L2StoreResult::failure();  // e.g. std::bad_alloc while copying
           }
           complete_at(due_after(submitted, result.bytes_transferred()),
                       [this, id, result] { complete(id, result); });
         });
}

void MockL2Adapter::do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) {
  // Lookups move no bytes: completed as soon as they ran.
  submit("submit_lookup_and_lock_task",
         [this, id, keys](Clock::time_point) { complete(id, run_lookup(keys)); });
}

void MockL2Adapter::do_unlock(const std::vector<ObjectKey>& keys) {
  submit("submit_unlock", [this, keys](Clock::time_point) { run_unlock(keys); });
}

void MockL2Adapter::do_load(TaskId id, const std::vector<ObjectKey>& keys,
                            const std::vector<MemoryObjPtr>& objects) {
  submit("submit_load_task", [this, id, keys, objects](Clock::time_point submitted) {
    std::uint64_t moved = 0;
    Bitmap bits(keys.size());
    try {
      bits = run_load(keys, objects, &moved);
    } catch (...) {
      bits = Bitmap(keys.size());  // nothing counts as loaded
      moved = 0;
    }
    complete_at(due_after(submitted, moved), [this, id, bits] { complete(id, bits); });
  });
}

void MockL2Adapter::do_load_view(TaskId id, const std::vector<ObjectKey>& keys) {
  submit("submit_load_view_task", [this, id, keys](Clock::time_point submitted) {
    std::uint64_t moved = 0;
    L2LoadViews result;
    try {
      result = run_load_views(keys, &moved);
    } catch (...) {
      // Nothing counts as loaded.
      result = L2LoadViews{Bitmap(keys.size()), std::vector<MemoryObjPtr>(keys.size())};
      moved = 0;
    }
    complete_at(due_after(submitted, moved), [this, id, result] { complete(id, result); });
  });
}

// --- task bodies (worker thread) -------------------------------------------------------------

L2StoreResult MockL2Adapter::run_store(const std::vector<ObjectKey>& keys,
                                       const std::vector<MemoryObjPtr>& objects,
                                       const std::vector<std::uint64_t>& sizes,
                                       const std::vector<bool>& adopted) {
  // 1. Decide which pairs are new and whether they all fit. The worker is the only thread that
  //    adds objects, so the decision stays valid while we copy outside the lock: a concurrent
  //    delete_keys() can only free space (a key it removes meanwhile is simply not stored).
  std::vector<std::size_t> fresh;
  std::uint64_t needed = 0;
  {
    std::lock_guard lock(state_mu_);
    std::unordered_set<ObjectKey> in_batch;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (objects_.count(keys[i]) != 0) continue;      // no overwrite
      if (!in_batch.insert(keys[i]).second) continue;  // the first copy in a batch wins
      fresh.push_back(i);
      needed += sizes[i];
    }
    const std::uint64_t room = options_.max_capacity_bytes - current_size_bytes_;
    if (needed > room) return L2StoreResult::failure();  // all or nothing
  }

  // 2. Deep copies, without the lock; adopted lent buffers are kept as they are.
  std::vector<StoredEntry> copies(fresh.size());
  for (std::size_t j = 0; j < fresh.size(); ++j) {
    const std::size_t i = fresh[j];
    if (adopted[i]) {
      const MemoryObjPtr& lent = objects[i];
      copies[j] = StoredEntry{std::shared_ptr<const std::byte>(lent, lent->data()), sizes[i]};
      continue;
    }
    std::shared_ptr<std::byte> data = allocate_host_buffer(sizes[i], BufferFill::kUninitialized);
    if (sizes[i] > 0) std::memcpy(data.get(), objects[i]->data(), sizes[i]);
    copies[j] = StoredEntry{std::move(data), sizes[i]};
  }

  // 3. Publish, counting usage under the same lock so a racing delete cannot be counted first.
  std::vector<ObjectKey> stored_keys;
  std::vector<std::uint64_t> stored_sizes;
  stored_keys.reserve(fresh.size());
  stored_sizes.reserve(fresh.size());
  {
    std::lock_guard lock(state_mu_);
    for (std::size_t j = 0; j < fresh.size(); ++j) {
      const ObjectKey& key = keys[fresh[j]];
      const std::uint64_t size = copies[j].size;
      if (!objects_.try_emplace(key, std::move(copies[j])).second) continue;
      current_size_bytes_ += size;
      stored_keys.push_back(key);
      stored_sizes.push_back(size);
    }
    usage_.record_stored(stored_keys, stored_sizes);
  }
  usage_.fire_stored(stored_keys, stored_sizes);
  std::uint64_t bytes = 0;
  for (std::uint64_t s : stored_sizes) bytes += s;
  return L2StoreResult::success(bytes);
}

Bitmap MockL2Adapter::run_lookup(const std::vector<ObjectKey>& keys) {
  Bitmap bits(keys.size());
  std::lock_guard lock(state_mu_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (objects_.count(keys[i]) == 0) continue;
    ++lock_counts_[keys[i]];
    bits.set(i);
  }
  return bits;
}

void MockL2Adapter::run_unlock(const std::vector<ObjectKey>& keys) {
  std::lock_guard lock(state_mu_);
  for (const ObjectKey& key : keys) {
    auto it = lock_counts_.find(key);
    if (it == lock_counts_.end()) continue;  // unknown or not locked: ignored
    if (--it->second == 0) lock_counts_.erase(it);
  }
}

std::vector<std::pair<std::size_t, MockL2Adapter::StoredEntry>> MockL2Adapter::snapshot_entries(
    const std::vector<ObjectKey>& keys) const {
  // Under the lock; the shared bytes outlive a concurrent delete.
  std::vector<std::pair<std::size_t, StoredEntry>> hits;
  std::lock_guard lock(state_mu_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = objects_.find(keys[i]);
    if (it != objects_.end()) hits.emplace_back(i, it->second);
  }
  return hits;
}

L2LoadViews MockL2Adapter::run_load_views(const std::vector<ObjectKey>& keys,
                                          std::uint64_t* bytes_moved) {
  // Every view shares its entry's bytes.
  const std::vector<std::pair<std::size_t, StoredEntry>> hits = snapshot_entries(keys);
  L2LoadViews out{Bitmap(keys.size()), std::vector<MemoryObjPtr>(keys.size())};
  std::vector<ObjectKey> accessed;
  *bytes_moved = 0;
  for (const auto& [i, entry] : hits) {
    const MemoryLayoutDesc layout =
        MemoryLayoutDesc::single({static_cast<std::int64_t>(entry.size)}, DType::kUInt8);
    if (entry.size == 0) {
      out.views[i] = MemoryObj::allocate(layout);
    } else {
      // Read-only by contract: MemoryObj has no const form, the caller promises not to write.
      auto* bytes = const_cast<std::byte*>(entry.data.get());
      out.views[i] = std::make_shared<MemoryObj>(std::shared_ptr<void>(entry.data, bytes), bytes,
                                                 entry.size, layout);
    }
    out.loaded.set(i);
    *bytes_moved += entry.size;
    accessed.push_back(keys[i]);
  }
  usage_.notify_accessed(accessed);
  return out;
}

Bitmap MockL2Adapter::run_load(const std::vector<ObjectKey>& keys,
                               const std::vector<MemoryObjPtr>& objects,
                               std::uint64_t* bytes_moved) {
  const std::vector<std::pair<std::size_t, StoredEntry>> hits = snapshot_entries(keys);
  Bitmap bits(keys.size());
  std::vector<ObjectKey> accessed;
  *bytes_moved = 0;
  for (const auto& [i, entry] : hits) {
    MemoryObj& dst = *objects[i];
    // Would overrun the caller's buffer: that key fails.
    if (dst.physical_size() < entry.size) continue;
    if (entry.size > 0) std::memcpy(dst.data(), entry.data.get(), entry.size);
    // The logical size reports the bytes loaded, so a deserializer of a variable-size payload
    // reads exactly what was stored (a no-op when the sizes already match).
    dst.set_used_size(entry.size);
    bits.set(i);
    *bytes_moved += entry.size;
    accessed.push_back(keys[i]);
  }
  usage_.notify_accessed(accessed);
  return bits;
}

// --- synchronous calls ---------------------------------------------------------------------

std::vector<MemoryObjPtr> MockL2Adapter::lend_store_buffers(const std::vector<ObjectKey>& keys,
                                                            const MemoryLayoutDesc& layout) {
  if (closed_.load(std::memory_order_acquire)) {
    throw std::logic_error("MockL2Adapter::lend_store_buffers after close()");
  }
  if (keys.empty()) return {};
  // At least one byte each, so that every lent buffer has an address of its own.
  const std::uint64_t each = std::max<std::uint64_t>(layout.total_bytes(), 1);
  const std::uint64_t wanted = each * keys.size();
  if (wanted / keys.size() != each) return {};  // overflow: cannot lend that much
  // Lend only what could still be stored: lent buffers are bounded by the capacity.
  if (!ledger_->try_reserve(wanted, current_size_bytes(), options_.max_capacity_bytes)) return {};
  std::vector<MemoryObjPtr> lent;
  lent.reserve(keys.size());
  std::size_t leased = 0;  // each lent buffer gives its bytes back when its owner goes
  try {
    for (const ObjectKey& key : keys) {
      lent.push_back(ledger_->lend(key, each, layout));
      ++leased;
    }
  } catch (...) {
    // Out of memory. The buffers made so far go back with `lent`; what was reserved for keys
    // never lent is unreserved here.
    lent.clear();
    ledger_->unreserve(each * (keys.size() - leased));
    return {};
  }
  return lent;
}

std::uint64_t MockL2Adapter::lent_bytes_outstanding() const { return ledger_->outstanding(); }

void MockL2Adapter::do_delete(const std::vector<ObjectKey>& keys) {
  if (closed_.load(std::memory_order_acquire)) throw_closed("delete_keys");
  std::vector<ObjectKey> removed;
  std::vector<std::uint64_t> sizes;
  {
    std::lock_guard lock(state_mu_);
    for (const ObjectKey& key : keys) {
      auto it = objects_.find(key);
      if (it == objects_.end()) continue;
      removed.push_back(key);
      sizes.push_back(it->second.size);
      current_size_bytes_ -= it->second.size;
      objects_.erase(it);
    }
    usage_.record_deleted(removed, sizes);
  }
  usage_.fire_deleted(removed, sizes);
}

AdapterUsage MockL2Adapter::get_usage() const { return usage_.get_usage(); }

bool MockL2Adapter::supports_global_eviction() const { return true; }

void MockL2Adapter::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  usage_.register_listener(std::move(listener));
}

Json MockL2Adapter::report_status() const {
  std::lock_guard lock(state_mu_);
  return Json{{"is_healthy", !closed_.load(std::memory_order_acquire)},
              {"type", "MockL2Adapter"},
              {"stored_object_count", objects_.size()},
              {"locked_key_count", lock_counts_.size()},
              {"current_size_bytes", current_size_bytes_},
              {"max_capacity_bytes", options_.max_capacity_bytes}};
}

void MockL2Adapter::do_close() {
  if (worker_.joinable() && worker_.get_id() == std::this_thread::get_id()) {
    throw std::logic_error("MockL2Adapter::close() called from its own worker (a listener?)");
  }
  {
    std::unique_lock lock(sched_mu_);
    if (busy_ && runner_ == std::this_thread::get_id()) {
      throw std::logic_error("MockL2Adapter::close() called from a task it runs (a listener?)");
    }
    closed_.store(true, std::memory_order_release);
    sched_cv_.notify_all();
    // A task running on a submitter's thread (run_when_idle) finishes first: after close()
    // returns, no caller buffer is touched again.
    sched_cv_.wait(lock, [&] { return !busy_; });
  }
  if (worker_.joinable()) worker_.join();
  // Dropped, never signalled; this also releases the caller buffers the tasks held.
  std::map<std::pair<Clock::time_point, std::uint64_t>, Step> dropped;
  {
    std::lock_guard lock(sched_mu_);
    dropped.swap(schedule_);
  }
  dropped.clear();
}

// --- debug ---------------------------------------------------------------------------------

std::size_t MockL2Adapter::stored_object_count() const {
  std::lock_guard lock(state_mu_);
  return objects_.size();
}

std::size_t MockL2Adapter::locked_key_count() const {
  std::lock_guard lock(state_mu_);
  return lock_counts_.size();
}

bool MockL2Adapter::has_key(const ObjectKey& key) const {
  std::lock_guard lock(state_mu_);
  return objects_.count(key) != 0;
}

std::uint64_t MockL2Adapter::lock_count(const ObjectKey& key) const {
  std::lock_guard lock(state_mu_);
  auto it = lock_counts_.find(key);
  return it == lock_counts_.end() ? 0 : it->second;
}

std::optional<std::uint64_t> MockL2Adapter::stored_size(const ObjectKey& key) const {
  std::lock_guard lock(state_mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second.size;
}

std::uint64_t MockL2Adapter::current_size_bytes() const {
  std::lock_guard lock(state_mu_);
  return current_size_bytes_;
}

}  // namespace lmcache
