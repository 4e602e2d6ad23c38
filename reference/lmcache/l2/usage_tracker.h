// File: lmcache/l2/usage_tracker.h
//
// UsageTracker is the byte accounting and listener fan-out that every L2 adapter composes (the
// Python base class's `_notify_keys_stored / _notify_keys_deleted / _notify_keys_accessed`).
// An adapter calls notify_stored() / notify_deleted() with the sizes it really stored or
// removed, and notify_accessed() for keys it served; the tracker keeps the totals and per
// cache_salt counts under its own lock, then calls the listeners outside that lock.
//
// Accounting: every byte is attributed to the key's cache_salt (the empty salt included), so
// the per-salt counts always sum to the total. A subtraction that would go below zero is
// clamped at 0 and counted in clamp_events() (the Python original logs a warning); a salt
// whose count reaches 0 is removed.
//
// Listeners: called in registration order, on the notifying thread, after the counts have
// changed. An exception thrown by a listener is caught and counted in listener_errors(), so a
// faulty observer cannot kill an adapter's worker thread or skip the remaining listeners.
// Empty key lists update nothing and call no listener.
//
// Thread safety: every member is safe to call concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lmcache/core/object_key.h"
#include "lmcache/l2/l2_adapter.h"

namespace lmcache {

class UsageTracker {
 public:
  // UsageTracker()
  //
  // `capacity_bytes` is reported by get_usage(); 0 means unbounded (usage_fraction() -1.0).
  explicit UsageTracker(std::uint64_t capacity_bytes = 0);

  UsageTracker(const UsageTracker&) = delete;
  UsageTracker& operator=(const UsageTracker&) = delete;

  // The capacity given at construction (0 = unbounded).
  std::uint64_t capacity_bytes() const { return capacity_bytes_; }

  // total_bytes_used()
  //
  // The running total of stored minus deleted bytes.
  std::uint64_t total_bytes_used() const;

  // get_usage()
  //
  // A snapshot: total, capacity and the per cache_salt counts (salts at 0 are absent).
  AdapterUsage get_usage() const;

  // register_listener()
  //
  // Adds `listener` (kept alive by the tracker). Throws std::invalid_argument for a null
  // pointer. A listener registered during a notification is called from the next one on.
  void register_listener(std::shared_ptr<L2AdapterListener> listener);

  // How many listeners are registered.
  std::size_t listener_count() const;

  // notify_stored()
  //
  // record_stored() then fire_stored(): adds sizes[i] to the total and to
  // keys[i].cache_salt(), then calls on_l2_keys_stored on every listener. Throws
  // std::invalid_argument (before changing anything) when the lists differ in length.
  void notify_stored(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);

  // notify_deleted()
  //
  // record_deleted() then fire_deleted(): subtracts sizes[i] (clamping at 0), then calls
  // on_l2_keys_deleted on every listener. Throws std::invalid_argument (before changing
  // anything) when the lists differ in length.
  void notify_deleted(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);

  // notify_accessed()
  //
  // Calls on_l2_keys_accessed on every listener; the counts do not change.
  void notify_accessed(const std::vector<ObjectKey>& keys);

  // record_stored() / record_deleted()
  //
  // The counting halves of notify_stored() / notify_deleted(), without listener calls. An
  // adapter whose store and delete run on different threads calls these under its own state
  // lock, so the counts can never be applied out of order (a delete counted before the store
  // it removes would be clamped and lost), then calls fire_*() after releasing that lock. They
  // take only the tracker's usage lock and call nothing, so holding an adapter lock is safe.
  // Same length check as notify_*().
  void record_stored(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);
  void record_deleted(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);

  // fire_stored() / fire_deleted()
  //
  // The listener halves: call on_l2_keys_stored / on_l2_keys_deleted on every listener. Call
  // them with no lock held.
  void fire_stored(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);
  void fire_deleted(const std::vector<ObjectKey>& keys, const std::vector<std::uint64_t>& sizes);

  // clamp_events()
  //
  // How many subtractions were clamped at 0 (a total or a salt); non-zero means the adapter's
  // accounting is off.
  std::uint64_t clamp_events() const;

  // listener_errors()
  //
  // How many listener calls threw (and were swallowed).
  std::uint64_t listener_errors() const;

 private:
  std::vector<std::shared_ptr<L2AdapterListener>> listeners_snapshot() const;

  // Calls `fn(listener)` for each listener, outside every lock, counting exceptions.
  template <class Fn>
  void for_each_listener(Fn&& fn);

  const std::uint64_t capacity_bytes_;

  mutable std::mutex usage_mu_;  // guards the counts below
  std::uint64_t total_bytes_ = 0;
  std::map<std::string, std::uint64_t> bytes_by_salt_;
  std::uint64_t clamp_events_ = 0;

  mutable std::mutex listeners_mu_;  // guards listeners_ and listener_errors_
  std::vector<std::shared_ptr<L2AdapterListener>> listeners_;
  std::uint64_t listener_errors_ = 0;
};

}  // namespace lmcache
