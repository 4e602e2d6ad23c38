#include "lmcache/l2/usage_tracker.h"

#include <stdexcept>
#include <utility>

namespace lmcache {

namespace {

void check_lengths(const char* what, std::size_t keys, std::size_t sizes) {
  if (keys != sizes) {
    throw std::invalid_argument(std::string("UsageTracker::") + what + ": " + std::to_string(keys) +
                                " keys but " + std::to_string(sizes) + " sizes");
  }
}

}  // namespace

UsageTracker::UsageTracker(std::uint64_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

std::uint64_t UsageTracker::total_bytes_used() const {
  std::lock_guard lock(usage_mu_);
  return total_bytes_;
}

AdapterUsage UsageTracker::get_usage() const {
  std::lock_guard lock(usage_mu_);
  AdapterUsage usage;
  usage.total_bytes_used = total_bytes_;
  usage.total_capacity_bytes = capacity_bytes_;
  usage.bytes_by_cache_salt = bytes_by_salt_;
  return usage;
}

void UsageTracker::register_listener(std::shared_ptr<L2AdapterListener> listener) {
  if (!listener) throw std::invalid_argument("UsageTracker::register_listener: null listener");
  std::lock_guard lock(listeners_mu_);
  listeners_.push_back(std::move(listener));
}

std::size_t UsageTracker::listener_count() const {
  std::lock_guard lock(listeners_mu_);
  return listeners_.size();
}

std::uint64_t UsageTracker::clamp_events() const {
  std::lock_guard lock(usage_mu_);
  return clamp_events_;
}

std::uint64_t UsageTracker::listener_errors() const {
  std::lock_guard lock(listeners_mu_);
  return listener_errors_;
}

std::vector<std::shared_ptr<L2AdapterListener>> UsageTracker::listeners_snapshot() const {
  std::lock_guard lock(listeners_mu_);
  return listeners_;
}

template <class Fn>
void UsageTracker::for_each_listener(Fn&& fn) {
  // A snapshot, so listeners run without any of our locks held and may even register more.
  std::uint64_t errors = 0;
  for (const auto& listener : listeners_snapshot()) {
    try {
      fn(*listener);
    } catch (...) {
      ++errors;
    }
  }
  if (errors != 0) {
    std::lock_guard lock(listeners_mu_);
    listener_errors_ += errors;
  }
}

void UsageTracker::notify_stored(const std::vector<ObjectKey>& keys,
                                 const std::vector<std::uint64_t>& sizes) {
  record_stored(keys, sizes);
  fire_stored(keys, sizes);
}

void UsageTracker::notify_deleted(const std::vector<ObjectKey>& keys,
                                  const std::vector<std::uint64_t>& sizes) {
  record_deleted(keys, sizes);
  fire_deleted(keys, sizes);
}

void UsageTracker::record_stored(const std::vector<ObjectKey>& keys,
                                 const std::vector<std::uint64_t>& sizes) {
  check_lengths("record_stored", keys.size(), sizes.size());
  std::lock_guard lock(usage_mu_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    total_bytes_ += sizes[i];
    // A zero-byte object leaves no salt entry: salts at 0 are absent from get_usage().
    if (sizes[i] > 0) bytes_by_salt_[keys[i].cache_salt()] += sizes[i];
  }
}

void UsageTracker::record_deleted(const std::vector<ObjectKey>& keys,
                                  const std::vector<std::uint64_t>& sizes) {
  check_lengths("record_deleted", keys.size(), sizes.size());
  std::lock_guard lock(usage_mu_);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (sizes[i] > total_bytes_) {
      ++clamp_events_;
      total_bytes_ = 0;
    } else {
      total_bytes_ -= sizes[i];
    }
    auto it = bytes_by_salt_.find(keys[i].cache_salt());
    if (it == bytes_by_salt_.end()) {
      if (sizes[i] > 0) ++clamp_events_;
      continue;
    }
    if (sizes[i] > it->second) ++clamp_events_;
    if (sizes[i] >= it->second) {
      bytes_by_salt_.erase(it);
    } else {
      it->second -= sizes[i];
    }
  }
}

void UsageTracker::fire_stored(const std::vector<ObjectKey>& keys,
                               const std::vector<std::uint64_t>& sizes) {
  check_lengths("fire_stored", keys.size(), sizes.size());
  if (keys.empty()) return;
  for_each_listener([&](L2AdapterListener& l) { l.on_l2_keys_stored(keys, sizes); });
}

void UsageTracker::fire_deleted(const std::vector<ObjectKey>& keys,
                                const std::vector<std::uint64_t>& sizes) {
  check_lengths("fire_deleted", keys.size(), sizes.size());
  if (keys.empty()) return;
  for_each_listener([&](L2AdapterListener& l) { l.on_l2_keys_deleted(keys, sizes); });
}

void UsageTracker::notify_accessed(const std::vector<ObjectKey>& keys) {
  if (keys.empty()) return;
  for_each_listener([&](L2AdapterListener& l) { l.on_l2_keys_accessed(keys); });
}

}  // namespace lmcache
