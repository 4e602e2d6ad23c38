// File: conformance/selftest/mutants_internal.h
//
// Each mutant family appends its mutants; all_mutants() concatenates them. mutant() builds one
// entry of a family.
#pragma once

#include <cstdint>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/core/completion_queue.h"
#include "lmcache/core/object_key.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "mutants.h"

namespace lmcache::conformance::selftest {

void add_serde_mutants(std::vector<Mutant>& out);
void add_integrity_mutants(std::vector<Mutant>& out);
void add_lmcr_mutants(std::vector<Mutant>& out);
void add_processor_mutants(std::vector<Mutant>& out);
void add_adapter_mutants(std::vector<Mutant>& out);
void add_connector_mutants(std::vector<Mutant>& out);
void add_wrapper_mutants(std::vector<Mutant>& out);
void add_sequential_wrapper_mutants(std::vector<Mutant>& out);

// The serde families' shared pieces (mutant_integrity.cc).
// serde_impl(): an Impl holding serde `s`.
Impl serde_impl(SerdeUnderTest s);
// frame_of(): `s`'s frame of an `n`-byte pattern object (from `seed`) under `key`, narrowed.
MemoryObjPtr frame_of(const SerdeUnderTest& s, const ObjectKey& key, std::uint8_t seed = 1,
                      std::size_t n = 16);
// loads(): whether `s` reads `frame` under `key` into an `n`-byte object without throwing.
bool loads(const SerdeUnderTest& s, const MemoryObj& frame, const ObjectKey& key,
           std::size_t n = 16);

// submits_share_an_id()
//
// Runs `submit(t)` for t = 0..3 on four threads released at once; whether two of them got the
// same task id (a witness of a racy id counter).
inline bool submits_share_an_id(const std::function<TaskId(std::uint32_t)>& submit) {
  constexpr std::uint32_t kThreads = 4;
  std::vector<TaskId> ids(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> pool;
  for (std::uint32_t t = 0; t < kThreads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      ids[t] = submit(t);
    });
  }
  for (auto& th : pool) th.join();
  return std::set<TaskId>(ids.begin(), ids.end()).size() != kThreads;
}

// The keys of each view load task in flight (ViewRewritingAdapter). Thread-safe.
class ViewTaskKeys {
 public:
  void remember(TaskId id, std::vector<ObjectKey> keys) {
    std::lock_guard lock(mu_);
    keys_[id] = std::move(keys);
  }
  // The keys remembered for `id` (empty when none), forgotten.
  std::vector<ObjectKey> take(TaskId id) {
    std::lock_guard lock(mu_);
    auto it = keys_.find(id);
    if (it == keys_.end()) return {};
    std::vector<ObjectKey> keys = std::move(it->second);
    keys_.erase(it);
    return keys;
  }

 private:
  std::mutex mu_;
  std::map<TaskId, std::vector<ObjectKey>> keys_;
};

// ViewRewritingAdapter
//
// A decorator that passes load views on and hands each view result, with the keys the caller
// asked for, to rewrite_views(); inner_keys() maps those keys for the inner (default: as they
// are). For mutants whose bug lives in what a view load answers.
class ViewRewritingAdapter : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  bool supports_load_views() const override { return inner().supports_load_views(); }
  TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) override {
    const TaskId id = inner().submit_load_view_task(inner_keys(keys));
    view_keys_.remember(id, keys);
    return id;
  }
  std::optional<L2LoadViews> query_load_view_result(TaskId id) override {
    std::optional<L2LoadViews> r = inner().query_load_view_result(id);
    if (r) rewrite_views(view_keys_.take(id), *r);
    return r;
  }

 protected:
  virtual std::vector<ObjectKey> inner_keys(const std::vector<ObjectKey>& keys) const {
    return keys;
  }
  virtual void rewrite_views(const std::vector<ObjectKey>& keys, L2LoadViews& result) = 0;

 private:
  ViewTaskKeys view_keys_;
};

// A mutant of `kind` caught by `property` of the same kind's suite. `impl` and `base` have
// the field of `kind` filled; the mutant's implementation is renamed `name`.
inline Mutant mutant(std::string name, ImplementationKind kind, BugClass bug_class,
                     std::string property, std::string bug, Impl impl, Impl base,
                     std::function<std::string(const Impl&)> witness,
                     Status expected = Status::kFail) {
  Mutant m;
  static_cast<Impl&>(m) = std::move(impl);
  m.serde.name = m.processor.name = m.adapter.name = m.wrapper.name = name;
  m.name = std::move(name);
  m.kind = kind;
  m.suite = kind;
  m.property = std::move(property);
  m.expected = expected;
  m.bug_class = bug_class;
  m.bug = std::move(bug);
  m.base = std::move(base);
  m.witness = std::move(witness);
  return m;
}

}  // namespace lmcache::conformance::selftest
