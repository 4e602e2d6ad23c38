// File: lmcache/testing/memory_connector.h
//
// An in-memory native connector (lmcache/bridge/native_connector.h) for tests and fault
// campaigns: every batch runs synchronously inside its submit against a MemoryStore (shared, so
// a test can look at the store as another client would), and its completion is queued and the
// eventfd notified before the submit returns, unless the faults say to hold it.
//
// BasicMemoryConnector<kWithDelete, kPerKeyGet> comes in the shapes LMCache's connectors have had:
//   MemoryConnector         submit_batch_delete and per-key get flags (current LMCache);
//   LegacyMemoryConnector   neither: a get with any miss fails the whole batch and a successful
//                           get carries no flags (older LMCache connectors).
//
// Faults (MemoryConnectorFaults, shared and atomic, switchable while the connector runs):
//   hold_completions        completions are kept back (a connector that never completes) until
//                           release_held() or the switch is turned off and another batch completes;
//   fail_sets_after_write   a set writes every key, then completes with ok = false (the worst
//                           case of a set failing midway);
//   fail_sets_before_write  a set writes nothing and completes with ok = false;
//   fail_deletes            a delete removes nothing and completes with ok = false;
//   throw_on_submit         every submit throws std::runtime_error.
// Counters (submitted batches by op) let tests check what the bridge sent.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lmcache/bridge/native_connector.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::storage_testing {

// MemoryStore
//
// The "server": string keys to byte values.
class MemoryStore {
 public:
  void put(const std::string& key, std::vector<std::byte> value);
  std::optional<std::vector<std::byte>> get(const std::string& key) const;
  bool contains(const std::string& key) const;
  bool erase(const std::string& key);
  std::size_t size() const;
  std::vector<std::string> keys() const;
  void clear();

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::byte>> objects_;
};

struct MemoryConnectorFaults {
  std::atomic<bool> hold_completions{false};
  std::atomic<bool> fail_sets_after_write{false};
  std::atomic<bool> fail_sets_before_write{false};
  std::atomic<bool> fail_deletes{false};
  std::atomic<bool> throw_on_submit{false};
};

struct MemoryConnectorCounters {
  std::atomic<std::uint64_t> gets{0};
  std::atomic<std::uint64_t> sets{0};
  std::atomic<std::uint64_t> exists{0};
  std::atomic<std::uint64_t> deletes{0};
  std::atomic<std::uint64_t> keys_got{0};  // keys in get batches
};

}  // namespace lmcache::storage_testing

namespace lmcache::storage_testing_internal {

using storage_testing::MemoryConnectorCounters;
using storage_testing::MemoryConnectorFaults;
using storage_testing::MemoryStore;

// The non-template part: the completion queue and the batch semantics.
class MemoryConnectorCore {
 public:
  MemoryConnectorCore(std::shared_ptr<MemoryStore> store,
                      std::shared_ptr<MemoryConnectorFaults> faults, bool per_key_get);
  ~MemoryConnectorCore();

  int event_fd() const { return notifier_.fd(); }
  std::uint64_t get(const std::vector<std::string>& keys, const std::vector<void*>& bufs,
                    const std::vector<std::size_t>& lens, std::size_t chunk);
  std::uint64_t set(const std::vector<std::string>& keys, const std::vector<void*>& bufs,
                    const std::vector<std::size_t>& lens, std::size_t chunk);
  std::uint64_t exists(const std::vector<std::string>& keys);
  std::uint64_t del(const std::vector<std::string>& keys);
  std::vector<bridge::Completion> drain();
  void close();
  std::size_t release_held();
  std::size_t held() const;
  const MemoryConnectorCounters& counters() const { return counters_; }

 private:
  std::uint64_t begin(const std::vector<std::string>& keys, const std::vector<void*>* bufs,
                      const std::vector<std::size_t>* lens, std::size_t chunk);
  void complete(bridge::Completion c);

  std::shared_ptr<MemoryStore> store_;
  std::shared_ptr<MemoryConnectorFaults> faults_;
  const bool per_key_get_;
  MemoryConnectorCounters counters_;
  EventNotifier notifier_;
  mutable std::mutex mu_;
  std::deque<bridge::Completion> ready_;
  std::deque<bridge::Completion> held_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace lmcache::storage_testing_internal

namespace lmcache::storage_testing {

template <bool kWithDelete, bool kPerKeyGet>
class BasicMemoryConnector {
 public:
  static constexpr bool kPerKeyGetResults = kPerKeyGet;

  // A connector over `store` (shared with the test) failing as `faults` says.
  explicit BasicMemoryConnector(
      std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>(),
      std::shared_ptr<MemoryConnectorFaults> faults = std::make_shared<MemoryConnectorFaults>())
      : core_(std::move(store), std::move(faults), kPerKeyGet) {}

  int event_fd() const { return core_.event_fd(); }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) {
    return core_.get(keys, bufs, lens, chunk);
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) {
    return core_.set(keys, bufs, lens, chunk);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) {
    return core_.exists(keys);
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) requires kWithDelete {
    return core_.del(keys);
  }
  std::vector<bridge::Completion> drain_completions() { return core_.drain(); }
  void close() { core_.close(); }

  // Publishes every held completion; returns how many.
  std::size_t release_held() { return core_.release_held(); }
  std::size_t held() const { return core_.held(); }
  const MemoryConnectorCounters& counters() const { return core_.counters(); }

 private:
  storage_testing_internal::MemoryConnectorCore core_;
};

using MemoryConnector = BasicMemoryConnector<true, true>;
using LegacyMemoryConnector = BasicMemoryConnector<false, false>;

}  // namespace lmcache::storage_testing
