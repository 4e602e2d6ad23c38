// File: lmcache/conformance/doubles.h
//
// Failure-injecting collaborators for the wrapper suite: an fp8 serializer / deserializer pair
// and a serde processor whose calls can be made to fail, and an inner adapter (over any real
// adapter, the mock by default) that can produce every failure the wrapper contract lists:
// submits that throw, failed stores, loads that drop chosen indices, load bitmaps of the wrong
// size, result queries that throw, results held back. It also records what the wrapper passes
// through (unlocks, deletes, listener registrations, close) and what the inner reported for
// each store, and can answer usage / eviction support / status with values of its own, so a
// test sees whether the wrapper passes them through. The switches and records live in shared
// SerdeFaults / AdapterFaults objects, so a test keeps them after handing the doubles over to
// the wrapper (which owns them and may even destroy them).
//
// Thread safety: every switch is atomic or mutex-guarded; the doubles are called from the
// wrapper's threads.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include "lmcache/core/object_key.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/l2_adapter.h"
#include "lmcache/serde/forwarding_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serializer.h"

namespace lmcache::conformance {

// SerdeFaults
//
// Calls are counted from construction; a serialize call whose 0-based index equals
// serialize_fail_at throws std::runtime_error; *_fail_always makes every call throw.
// Deserialize failures are aimed at one task's destinations instead of a global call index,
// because a failed load may complete while pairs of its deserialize task still run: counted
// globally, those late calls would take the index meant for the next load.
struct SerdeFaults {
  std::atomic<long> serialize_calls{0};
  std::atomic<long> serialize_fail_at{-1};
  std::atomic<bool> serialize_fail_always{false};
  std::atomic<long> deserialize_calls{0};
  std::atomic<bool> deserialize_fail_always{false};
  std::atomic<bool> throw_on_submit_serialize{false};
  std::atomic<bool> throw_on_submit_deserialize{false};
  // query_serialize_result / query_deserialize_result throw std::runtime_error.
  std::atomic<bool> throw_on_query{false};
  // Set by the processor's close().
  std::atomic<bool> closed{false};

  // Makes the `i`-th serialize call from now on (0 = the next one) throw.
  void fail_serialize_call_from_now(long i) { serialize_fail_at = serialize_calls.load() + i; }
  // Watches the deserialize calls that write into one of `dsts` (the destinations of the load
  // about to be submitted): the `i`-th of them (0 = the first) throws; i < 0 only counts. Calls
  // into other destinations neither count nor fail. Replaces an earlier watch.
  void watch_deserialize_into(const std::vector<MemoryObjPtr>& dsts, long i);
  // Ends the watch; deserialize calls no longer fail through it.
  void unwatch_deserialize();
  // The deserialize calls into the watched destinations so far.
  long watched_deserialize_calls() const;
  // Called by the scripted deserializer: counts the call when `dst` is watched; true when this
  // call is the one to fail.
  bool count_deserialize_into(const MemoryObj& dst);

 private:
  mutable std::mutex watch_mu_;
  std::set<const MemoryObj*> watched_dsts_;
  long watched_calls_ = 0;
  long watched_fail_at_ = -1;
};

// ScriptedSerializer / ScriptedDeserializer
//
// The reference fp8 e4m3fn pair, failing as `faults` says.
class ScriptedSerializer final : public Serializer {
 public:
  explicit ScriptedSerializer(std::shared_ptr<SerdeFaults> faults) : faults_(std::move(faults)) {}
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return inner_.estimate_serialized_size(layout);
  }

 private:
  std::shared_ptr<SerdeFaults> faults_;
  Fp8Serializer inner_;
};

class ScriptedDeserializer final : public Deserializer {
 public:
  explicit ScriptedDeserializer(std::shared_ptr<SerdeFaults> faults) : faults_(std::move(faults)) {}
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;

 private:
  std::shared_ptr<SerdeFaults> faults_;
  Fp8Deserializer inner_;
};

// ScriptedProcessor
//
// An AsyncSerdeProcessor over the scripted pair whose submits can throw.
class ScriptedProcessor final : public ForwardingSerdeProcessor {
 public:
  explicit ScriptedProcessor(std::shared_ptr<SerdeFaults> faults);
  TaskId submit_serialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                          std::vector<ObjectKey> keys) override;
  TaskId submit_deserialize(std::vector<MemoryObjPtr> srcs, std::vector<MemoryObjPtr> dsts,
                            std::vector<ObjectKey> keys) override;
  std::optional<bool> query_serialize_result(TaskId id) override;
  std::optional<bool> query_deserialize_result(TaskId id) override;
  void close() override;

 private:
  std::shared_ptr<SerdeFaults> faults_;
};

// AdapterFaults
//
// throw_on_submit_*: the submit throws std::runtime_error. fail_stores: every popped store
// result becomes a failure. drop_load_indices: those bits are cleared from load results.
// load_bitmap_size_delta: load results come back that many bits longer (> 0, the extra bits
// set) or shorter (< 0). throw_on_query_load: query_load_result throws. hold_results: pops
// return nothing and load queries none until released (results are kept).
// usage / eviction / status overrides: what get_usage(), supports_global_eviction() and
// report_status() answer instead of the inner's (status: the inner's plus a marker field).
// The records say what reached the scripted adapter.
struct AdapterFaults {
  std::atomic<bool> throw_on_submit_store{false};
  std::atomic<bool> fail_stores{false};
  std::atomic<bool> throw_on_submit_load{false};
  std::atomic<bool> throw_on_query_load{false};
  std::atomic<int> load_bitmap_size_delta{0};
  std::atomic<bool> hold_results{false};
  // -1: the inner's answer; 0 / 1: false / true.
  std::atomic<int> eviction_override{-1};
  // When set, report_status() adds {"scripted_inner_marker": value} to the inner's status.
  std::atomic<long> status_marker{-1};

  void set_dropped_load_indices(std::set<std::size_t> indices);
  std::set<std::size_t> dropped_load_indices() const;

  void set_usage_override(std::optional<AdapterUsage> usage);
  std::optional<AdapterUsage> usage_override() const;

  // What the wrapper passed through, in order.
  struct Records {
    std::vector<std::vector<ObjectKey>> unlocks;
    std::vector<std::vector<ObjectKey>> deletes;
    std::size_t listeners_registered = 0;
    bool closed = false;
    // Per inner store task: the keys submitted and the result the inner reported (set when
    // the scripted adapter popped it).
    struct Store {
      std::vector<ObjectKey> keys;
      std::optional<L2StoreResult> result;
    };
    std::map<TaskId, Store> stores;
  };
  Records records() const;
  void clear_records();

 private:
  friend class ScriptedAdapter;
  mutable std::mutex mu_;
  std::set<std::size_t> drop_load_indices_;
  std::optional<AdapterUsage> usage_override_;
  Records records_;
};

// ScriptedAdapter
//
// Forwards to a shared inner adapter (so a test can keep inspecting it), failing as `faults`
// says. Its fds are the inner's. The inner's optional capabilities (lent store buffers, load
// views) are passed on only as `forwarded` says (default: neither), and the load faults apply to
// view loads as to plain ones: a dropped index also drops its view, a resized bitmap resizes the
// views (new entries null).
struct ForwardedCapabilities {
  bool store_buffers = false;
  bool load_views = false;
};

class ScriptedAdapter final : public ForwardingL2Adapter {
 public:
  ScriptedAdapter(std::shared_ptr<L2AdapterInterface> inner, std::shared_ptr<AdapterFaults> faults,
                  ForwardedCapabilities forwarded = {});

  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override;
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override;
  void submit_unlock(const std::vector<ObjectKey>& keys) override;
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override;
  std::optional<Bitmap> query_load_result(TaskId id) override;
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    if (!forwarded_.store_buffers) return {};
    return inner().lend_store_buffers(keys, layout);
  }
  bool supports_load_views() const override {
    return forwarded_.load_views && inner().supports_load_views();
  }
  TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) override;
  std::optional<L2LoadViews> query_load_view_result(TaskId id) override;
  void delete_keys(const std::vector<ObjectKey>& keys) override;
  AdapterUsage get_usage() const override;
  bool supports_global_eviction() const override;
  void register_listener(std::shared_ptr<L2AdapterListener> listener) override;
  Json report_status() const override;
  void close() override;

 private:
  // The load faults' bitmap (dropped indices cleared, size changed by the delta); `views`, when
  // given, follows it.
  Bitmap apply_load_faults(Bitmap bits, std::vector<MemoryObjPtr>* views) const;

  std::shared_ptr<AdapterFaults> faults_;
  const ForwardedCapabilities forwarded_;
  std::mutex mu_;
  std::map<TaskId, L2StoreResult> held_;  // popped while held
};

}  // namespace lmcache::conformance
