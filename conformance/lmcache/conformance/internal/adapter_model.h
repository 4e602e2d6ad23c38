// File: lmcache/conformance/internal/adapter_model.h
//
// The state of AdapterConformance's stateful model (adapter_conformance_model.cc): the model of
// what an adapter holds, the system under test with the checks every command runs after its
// tasks completed, and the listener that records what the adapter reports. Internal to the
// suites library.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// A result is stored before its fd is notified, so a wait that read a notify finds it at once.
inline constexpr const char* kNotifyBeforeResult =
    "a notify came before its result (a result is stored before its fd is notified: "
    "docs/async-completion.md, rule 2)";
// Task ids are unique per adapter (docs/l2-adapter.md): a store and a load never share one, so a
// query of either kind can never take the other's result. (Lookups may be numbered apart: the
// wrapper's are its inner adapter's.)
inline constexpr const char* kIdsNameOneTask =
    "(a store and a load of one adapter never share an id: docs/l2-adapter.md, task ids)";

// Records every listener call, for the per-command checks.
class RecordingListener final : public L2AdapterListener {
 public:
  enum class Kind { kStored, kAccessed, kDeleted };
  struct Event {
    Kind kind;
    std::vector<ObjectKey> keys;
    std::vector<std::uint64_t> sizes;
  };

  void on_l2_keys_stored(const std::vector<ObjectKey>& keys,
                         const std::vector<std::uint64_t>& sizes) override {
    add({Kind::kStored, keys, sizes});
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    add({Kind::kAccessed, keys, {}});
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>& sizes) override {
    add({Kind::kDeleted, keys, sizes});
  }

  std::size_t count() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  std::vector<Event> since(std::size_t from) const {
    std::lock_guard lock(mu_);
    return {events_.begin() + static_cast<std::ptrdiff_t>(std::min(from, events_.size())),
            events_.end()};
  }

 private:
  void add(Event e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

inline const char* kind_name(RecordingListener::Kind k) {
  switch (k) {
    case RecordingListener::Kind::kStored:
      return "stored";
    case RecordingListener::Kind::kAccessed:
      return "accessed";
    case RecordingListener::Kind::kDeleted:
      return "deleted";
  }
  return "?";
}

struct AdapterModel {
  std::set<int> present;
  std::map<int, int> locks;  // lock counts > 0 only
};

// A layout class: every key k with k % classes == c stores objects of this layout.
struct LayoutClass {
  MemoryLayoutDesc layout;
  std::size_t used = 0;  // size() of the stored objects (below the layout's bytes: narrowed)
  std::uint64_t stored_size = 0;
};

// One command's keys: a class and indices into the key universe (all of that class; a key may
// appear twice).
struct KeyPick {
  std::size_t cls = 0;
  std::vector<int> idx;
};

inline std::string key_list(const std::vector<int>& keys) {
  std::string s = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", k" : "k") + std::to_string(keys[i]);
  return s + "]";
}

inline std::set<int> distinct(const std::vector<int>& idx) { return {idx.begin(), idx.end()}; }

// The system under test of one stateful run, plus what the checks remember between commands.
struct AdapterSut {
  L2AdapterInterface* adapter = nullptr;
  const AdapterUnderTest* aut = nullptr;
  unsigned checks = kAllChecks;
  std::vector<LayoutClass> classes;
  std::vector<ObjectKey> keys;
  std::uint64_t seed = 0;
  std::shared_ptr<RecordingListener> listener;
  std::set<TaskId> store_ids, lookup_ids, load_ids, popped_store_ids;
  // Notifies the waits read (store, lookup, load) that check_fds() has not counted yet.
  std::uint64_t announced_[3] = {0, 0, 0};
  AdapterModel last_model;  // the model after the last command run, for the final checks

  bool on(unsigned c) const { return (checks & c) != 0; }
  const LayoutClass& class_of(int k) const {
    return classes[static_cast<std::size_t>(k) % classes.size()];
  }
  std::uint64_t stored_size(int k) const { return class_of(k).stored_size; }

  // The object stored under key k: its layout's bytes filled from the seed, narrowed to `used`.
  MemoryObjPtr content(int k) const {
    const LayoutClass& c = class_of(k);
    MemoryObjPtr obj = make_object(c.layout);
    fill_bytes(obj->physical_bytes(), seed * 31 + static_cast<std::uint64_t>(k) + 1);
    if (c.used != c.layout.total_bytes()) obj->set_used_size(c.used);
    return obj;
  }

  // What a load of key k must write (the first `used` bytes of a narrowed object).
  MemoryObjPtr expected(int k) const {
    MemoryObjPtr c = content(k);
    if (!aut->expected_load) return c;
    MemoryObjPtr out = make_object(c->layout());
    aut->expected_load(*c, *out);
    return out;
  }

  std::vector<ObjectKey> keys_of(const std::vector<int>& idx) const {
    std::vector<ObjectKey> out;
    for (int k : idx) out.push_back(keys[static_cast<std::size_t>(k)]);
    return out;
  }

  TaskId submit_store(const std::vector<int>& idx, const std::string& what) {
    std::vector<MemoryObjPtr> objs;
    for (int k : idx) objs.push_back(content(k));
    TaskId id = adapter->submit_store_task(keys_of(idx), objs);
    const bool fresh = store_ids.insert(id).second;
    if (on(kOneShot)) {
      require(fresh, what + ": submit_store_task() reused id " + std::to_string(id));
      require(!load_ids.count(id), what + ": submit_store_task() returned id " +
                                       std::to_string(id) + ", which a load of this adapter has " +
                                       kIdsNameOneTask);
    }
    return id;
  }

  // Pops until every id in `ids` has its result; every popped id must be known and new.
  std::map<TaskId, L2StoreResult> wait_stores(const std::vector<TaskId>& ids,
                                              const std::string& what) {
    std::map<TaskId, L2StoreResult> mine;
    auto deadline = wait_deadline(result_timeout());
    ResultPacer pacer(adapter->get_store_event_fd());
    for (;;) {
      // The notifies read so far announce results that must be there now (the command's
      // stores are the only ones in flight).
      if (on(kFds)) announced_[0] += consume_fd(adapter->get_store_event_fd());
      for (auto& [tid, r] : adapter->pop_completed_store_tasks()) {
        if (on(kOneShot)) {
          require(store_ids.count(tid) == 1, what + ": pop_completed_store_tasks() returned id " +
                                                 std::to_string(tid) + ", never issued by a store");
          require(popped_store_ids.insert(tid).second,
                  what + ": pop_completed_store_tasks() returned store " + std::to_string(tid) +
                      " a second time");
        }
        if (std::find(ids.begin(), ids.end(), tid) != ids.end()) mine.emplace(tid, r);
      }
      require(!on(kFds) || mine.size() >= announced_[0],
              what + ": the store fd counted " + std::to_string(announced_[0]) +
                  " notifies but pop_completed_store_tasks() had handed out " +
                  std::to_string(mine.size()) + " result(s): " + kNotifyBeforeResult);
      if (mine.size() == ids.size()) break;
      require(!deadline.expired(), what + ": " + std::to_string(ids.size() - mine.size()) +
                                       " store task(s) did not complete within " +
                                       std::to_string(result_timeout().count()) + " ms");
      pacer.wait();
    }
    if (on(kOneShot)) {
      for (auto& [tid, _] : adapter->pop_completed_store_tasks()) {
        require(std::find(ids.begin(), ids.end(), tid) == ids.end(),
                what + ": store " + std::to_string(tid) + " was popped a second time");
      }
    }
    return mine;
  }

  TaskId submit_load(const std::vector<int>& idx, std::vector<MemoryObjPtr>* dsts,
                     std::vector<std::vector<std::byte>>* before, const std::string& what) {
    for (std::size_t i = 0; i < idx.size(); ++i) {
      MemoryObjPtr d = make_object(class_of(idx[i]).layout);
      fill_bytes(d->physical_bytes(), 0xDEADull + i);  // stale bytes
      before->emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
      dsts->push_back(d);
    }
    TaskId id = adapter->submit_load_task(keys_of(idx), *dsts);
    const bool fresh = load_ids.insert(id).second;
    if (on(kOneShot)) {
      require(fresh, what + ": submit_load_task() reused id " + std::to_string(id));
      require(!store_ids.count(id), what + ": submit_load_task() returned id " +
                                        std::to_string(id) +
                                        ", which a store of this adapter has " + kIdsNameOneTask);
    }
    return id;
  }

  // wait_announced()
  //
  // Waits for the result `query` gives, reading the task's fd before each query: once a notify
  // was read the result must be there (one task of its kind in flight). With kFds only; the
  // notifies read count towards check_fds().
  template <class Query>
  auto wait_announced(int kind, int fd, Query query, const std::string& what) {
    if (!on(kFds)) return poll_until(query, result_timeout());
    auto deadline = wait_deadline(result_timeout());
    for (;;) {
      wait_readable(fd, std::chrono::milliseconds(2));
      const std::uint64_t n = consume_fd(fd);
      announced_[kind] += n;
      auto r = query();
      if (r) return r;
      require(announced_[kind] == 0,
              what + ": its fd counted " + std::to_string(announced_[kind]) +
                  " notify(s) but the result was not there: " + kNotifyBeforeResult);
      if (deadline.expired()) return r;
    }
  }

  Bitmap wait_load(TaskId id, const std::string& what) {
    auto bits = wait_announced(
        2, adapter->get_load_event_fd(), [&] { return adapter->query_load_result(id); }, what);
    require(bits.has_value(), what + " did not complete");
    if (on(kOneShot)) {
      require(!adapter->query_load_result(id),
              what + ": query_load_result(" + std::to_string(id) + ") answered twice");
      if (!lookup_ids.count(id)) {
        require(
            !adapter->query_lookup_and_lock_result(id),
            what + ": query_lookup_and_lock_result() answered for load id " + std::to_string(id));
      }
    }
    return *bits;
  }

  // Load bit i against the model: `must` says whether it must be set (nullopt: either is
  // right, a store of the key was in flight); a set bit must come with the key's bytes, a
  // clear one with the destination untouched.
  void check_load(const std::vector<int>& idx, const Bitmap& bits,
                  const std::vector<std::optional<bool>>& must,
                  const std::vector<MemoryObjPtr>& dsts,
                  const std::vector<std::vector<std::byte>>& before, const std::string& what) {
    if (!on(kLoad)) return;
    require(bits.size() == idx.size(), what + " of " + std::to_string(idx.size()) +
                                           " keys returned a bitmap of " +
                                           std::to_string(bits.size()) + " bits");
    for (std::size_t i = 0; i < idx.size(); ++i) {
      const int k = idx[i];
      if (must[i].has_value()) {
        require(bits.test(i) == *must[i],
                what + " bit " + std::to_string(i) + " (k" + std::to_string(k) + ") is " +
                    (bits.test(i) ? "set" : "clear") + " but the key is " +
                    (*must[i] ? "stored" : "absent") + " (bitmap " + bits.to_string() + ")");
      }
      if (bits.test(i)) {
        MemoryObjPtr want = expected(k);
        const std::size_t n = want->size();
        require(dsts[i]->size() == n,
                what + " set bit " + std::to_string(i) + " (k" + std::to_string(k) +
                    ") but its destination reports size() " + std::to_string(dsts[i]->size()) +
                    " where the stored object had " + std::to_string(n) +
                    " (a load leaves size() at the stored length)");
        require(same_bytes(dsts[i]->data(), want->data(), n),
                what + " set bit " + std::to_string(i) + " (k" + std::to_string(k) +
                    ") but its destination does not hold the stored object");
      } else {
        require(same_bytes(dsts[i]->physical_bytes().data(), before[i].data(), before[i].size()),
                what + " wrote the destination of k" + std::to_string(k) + " (bit " +
                    std::to_string(i) + " clear)");
      }
    }
  }

  // After tasks completed: each fd counted exactly its tasks' notifies, the others none.
  void check_fds(std::size_t stores, std::size_t lookups, std::size_t loads, const char* after) {
    if (!on(kFds)) return;
    struct {
      const char* name;
      int fd;
      std::size_t expected;
    } fds[3] = {{"store", adapter->get_store_event_fd(), stores},
                {"lookup", adapter->get_lookup_and_lock_event_fd(), lookups},
                {"load", adapter->get_load_event_fd(), loads}};
    for (std::size_t kind = 0; kind < 3; ++kind) {
      auto& f = fds[kind];
      std::uint64_t n = std::exchange(announced_[kind], 0) + consume_fd(f.fd);
      auto deadline = wait_deadline(signal_grace());
      while (n < f.expected && !deadline.expired()) {
        wait_readable(f.fd, std::chrono::milliseconds(10));
        n += consume_fd(f.fd);
      }
      require(n == f.expected, std::string("after ") + after + ", the " + f.name + " fd counted " +
                                   std::to_string(n) + " notifies (expected " +
                                   std::to_string(f.expected) + ": one per completed " + f.name +
                                   " task, none for other kinds)");
    }
  }

  void check_usage(const AdapterModel& m, const char* after) {
    if (!on(kUsage) || !aut->capabilities.reports_usage) return;
    AdapterUsage u = adapter->get_usage();
    std::uint64_t total = 0;
    std::map<std::string, std::uint64_t> by_salt;
    for (int k : m.present) {
      total += stored_size(k);
      by_salt[keys[static_cast<std::size_t>(k)].cache_salt()] += stored_size(k);
    }
    std::erase_if(by_salt, [](const auto& kv) { return kv.second == 0; });
    require(u.total_bytes_used == total,
            std::string("after ") + after + ", get_usage().total_bytes_used = " +
                std::to_string(u.total_bytes_used) + " but the " +
                std::to_string(m.present.size()) + " stored keys hold " + std::to_string(total));
    require(u.bytes_by_cache_salt == by_salt, std::string("after ") + after +
                                                  ", get_usage().bytes_by_cache_salt does not "
                                                  "match the stored keys' salts");
  }

  void check_locks(const AdapterModel& m, const char* after) {
    if (!on(kLocks) || !aut->capabilities.reports_lock_count) return;
    const std::uint64_t expected = m.locks.size();
    std::optional<std::uint64_t> got;
    auto deadline = wait_deadline(settle_timeout());
    do {
      got = locked_key_count(*adapter);
      require(got.has_value(), "report_status() has no \"locked_key_count\"");
      if (*got == expected) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } while (!deadline.expired());
    fail_case(std::string("after ") + after + ", report_status().locked_key_count = " +
              std::to_string(*got) + " but " + std::to_string(expected) +
              " keys hold lookup locks (each hit locks once, a key twice in a batch twice; each "
              "unlocked occurrence releases one)");
  }

  // Listener events since `from` must be `kind` events whose keys are `expect`: as a multiset
  // when `exact`, as a set otherwise (a key twice in one batch, two stores in flight).
  // `ignore_accessed`: accessed events may come or not (a lookup may count as an access).
  void check_listener(std::size_t from, RecordingListener::Kind kind,
                      const std::multiset<int>& expect, const std::string& what, bool exact,
                      bool ignore_accessed = false) {
    if (!on(kListeners) || !aut->capabilities.supports_listeners) return;
    std::multiset<std::string> got, want;
    for (int k : expect) want.insert(keys[static_cast<std::size_t>(k)].to_string());
    std::map<std::string, std::uint64_t> size_of;
    for (int k : expect) size_of[keys[static_cast<std::size_t>(k)].to_string()] = stored_size(k);
    for (auto& e : listener->since(from)) {
      if (ignore_accessed && e.kind == RecordingListener::Kind::kAccessed) continue;
      require(e.kind == kind, "a " + what + " made the listener see a " +
                                  std::string(kind_name(e.kind)) + " event");
      for (std::size_t i = 0; i < e.keys.size(); ++i) {
        const std::string name = e.keys[i].to_string();
        got.insert(name);
        if (kind != RecordingListener::Kind::kAccessed && size_of.count(name)) {
          require(i < e.sizes.size() && e.sizes[i] == size_of[name],
                  "a " + what + " reported a size of " +
                      (i < e.sizes.size() ? std::to_string(e.sizes[i]) : "(none)") +
                      " to the listener for an object of " + std::to_string(size_of[name]) +
                      " bytes");
        }
      }
    }
    if (!exact) {
      std::set<std::string> g(got.begin(), got.end()), w(want.begin(), want.end());
      require(g == w, "the listener saw " + std::to_string(g.size()) + " distinct " + what +
                          " key(s) but " + std::to_string(w.size()) +
                          " were expected (calls must happen before the task completes)");
      return;
    }
    require(got == want, "the listener saw " + std::to_string(got.size()) + " " + what +
                             " key(s) but " + std::to_string(want.size()) +
                             " were expected (calls must happen before the task completes)");
  }

  void after_command(const AdapterModel& next, const char* what) {
    last_model = next;
    check_usage(next, what);
    check_locks(next, what);
  }
};

}  // namespace lmcache::conformance_internal::adapter_properties
