// The stateful model behind AdapterConformance's [stateful] properties (RapidCheck rc::state):
// random sequences of Store, StoreTwiceInFlight, StoreThenLoadInFlight, LookupAndLock, Unlock,
// Load and Delete run against one fresh adapter and a model of the stored keys and their lock
// counts. The key universe is a key family (keys that differ in exactly one field) split over
// two or three layout classes; every command works on one class (the batches a wrapper accepts
// are homogeneous), batches reach past 64 keys and may hold a key twice, byte objects may be
// narrowed (size() below the buffer), and two tasks on the same key may be in flight together.
// Every command waits for its own results, then checks the aspects its property enabled.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <rapidcheck/state.h>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance::internal::adapter_properties {

namespace {

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

const char* kind_name(RecordingListener::Kind k) {
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

std::string key_list(const std::vector<int>& keys) {
  std::string s = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", k" : "k") + std::to_string(keys[i]);
  return s + "]";
}

std::set<int> distinct(const std::vector<int>& idx) { return {idx.begin(), idx.end()}; }

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
  AdapterModel last_model;  // the model after the last command run, for the final checks

  bool on(unsigned c) const { return (checks & c) != 0; }
  const LayoutClass& class_of(int k) const {
    return classes[static_cast<std::size_t>(k) % classes.size()];
  }
  std::uint64_t stored_size(int k) const { return class_of(k).stored_size; }

  // The object stored under key k: its layout's bytes filled from the seed, narrowed to `used`.
  MemoryObjPtr content(int k) const {
    const LayoutClass& c = class_of(k);
    MemoryObjPtr obj = MakeObject(c.layout);
    FillBytes(obj->physical_bytes(), seed * 31 + static_cast<std::uint64_t>(k) + 1);
    if (c.used != c.layout.total_bytes()) obj->set_used_size(c.used);
    return obj;
  }

  // What a load of key k must write (the first `used` bytes of a narrowed object).
  MemoryObjPtr expected(int k) const {
    MemoryObjPtr c = content(k);
    if (!aut->expected_load) return c;
    MemoryObjPtr out = MakeObject(c->layout());
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
    if (on(kOneShot))
      Require(fresh, what + ": submit_store_task() reused id " + std::to_string(id));
    return id;
  }

  // Pops until every id in `ids` has its result; every popped id must be known and new.
  std::map<TaskId, L2StoreResult> wait_stores(const std::vector<TaskId>& ids,
                                              const std::string& what) {
    std::map<TaskId, L2StoreResult> mine;
    auto deadline = std::chrono::steady_clock::now() + ResultTimeout();
    for (;;) {
      for (auto& [tid, r] : adapter->pop_completed_store_tasks()) {
        if (on(kOneShot)) {
          Require(store_ids.count(tid) == 1, what + ": pop_completed_store_tasks() returned id " +
                                                 std::to_string(tid) + ", never issued by a store");
          Require(popped_store_ids.insert(tid).second,
                  what + ": pop_completed_store_tasks() returned store " + std::to_string(tid) +
                      " a second time");
        }
        if (std::find(ids.begin(), ids.end(), tid) != ids.end()) mine.emplace(tid, r);
      }
      if (mine.size() == ids.size()) break;
      Require(std::chrono::steady_clock::now() < deadline,
              what + ": " + std::to_string(ids.size() - mine.size()) +
                  " store task(s) did not complete within " +
                  std::to_string(ResultTimeout().count()) + " ms");
      wait_readable(adapter->get_store_event_fd(), std::chrono::milliseconds(2));
    }
    if (on(kOneShot)) {
      for (auto& [tid, _] : adapter->pop_completed_store_tasks()) {
        Require(std::find(ids.begin(), ids.end(), tid) == ids.end(),
                what + ": store " + std::to_string(tid) + " was popped a second time");
      }
    }
    return mine;
  }

  TaskId submit_load(const std::vector<int>& idx, std::vector<MemoryObjPtr>* dsts,
                     std::vector<std::vector<std::byte>>* before, const std::string& what) {
    for (std::size_t i = 0; i < idx.size(); ++i) {
      MemoryObjPtr d = MakeObject(class_of(idx[i]).layout);
      FillBytes(d->physical_bytes(), 0xDEADull + i);  // stale bytes
      before->emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
      dsts->push_back(d);
    }
    TaskId id = adapter->submit_load_task(keys_of(idx), *dsts);
    const bool fresh = load_ids.insert(id).second;
    if (on(kOneShot)) Require(fresh, what + ": submit_load_task() reused id " + std::to_string(id));
    return id;
  }

  Bitmap wait_load(TaskId id, const std::string& what) {
    auto bits = PollUntil([&] { return adapter->query_load_result(id); }, ResultTimeout());
    Require(bits.has_value(), what + " did not complete");
    if (on(kOneShot)) {
      Require(!adapter->query_load_result(id),
              what + ": query_load_result(" + std::to_string(id) + ") answered twice");
      if (!lookup_ids.count(id)) {
        Require(
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
    Require(bits.size() == idx.size(), what + " of " + std::to_string(idx.size()) +
                                           " keys returned a bitmap of " +
                                           std::to_string(bits.size()) + " bits");
    for (std::size_t i = 0; i < idx.size(); ++i) {
      const int k = idx[i];
      if (must[i].has_value()) {
        Require(bits.test(i) == *must[i],
                what + " bit " + std::to_string(i) + " (k" + std::to_string(k) + ") is " +
                    (bits.test(i) ? "set" : "clear") + " but the key is " +
                    (*must[i] ? "stored" : "absent") + " (bitmap " + bits.to_string() + ")");
      }
      if (bits.test(i)) {
        MemoryObjPtr want = expected(k);
        const std::size_t n = want->size();
        Require(dsts[i]->size() == n,
                what + " set bit " + std::to_string(i) + " (k" + std::to_string(k) +
                    ") but its destination reports size() " + std::to_string(dsts[i]->size()) +
                    " where the stored object had " + std::to_string(n) +
                    " (a load leaves size() at the stored length)");
        Require(n == 0 || std::memcmp(dsts[i]->data(), want->data(), n) == 0,
                what + " set bit " + std::to_string(i) + " (k" + std::to_string(k) +
                    ") but its destination does not hold the stored object");
      } else {
        Require(
            std::memcmp(dsts[i]->physical_bytes().data(), before[i].data(), before[i].size()) == 0,
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
    for (auto& f : fds) {
      std::uint64_t n = consume_fd(f.fd);
      auto deadline = std::chrono::steady_clock::now() + SignalGrace();
      while (n < f.expected && std::chrono::steady_clock::now() < deadline) {
        wait_readable(f.fd, std::chrono::milliseconds(10));
        n += consume_fd(f.fd);
      }
      Require(n == f.expected, std::string("after ") + after + ", the " + f.name + " fd counted " +
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
    Require(u.total_bytes_used == total,
            std::string("after ") + after + ", get_usage().total_bytes_used = " +
                std::to_string(u.total_bytes_used) + " but the " +
                std::to_string(m.present.size()) + " stored keys hold " + std::to_string(total));
    Require(u.bytes_by_cache_salt == by_salt, std::string("after ") + after +
                                                  ", get_usage().bytes_by_cache_salt does not "
                                                  "match the stored keys' salts");
  }

  void check_locks(const AdapterModel& m, const char* after) {
    if (!on(kLocks) || !aut->capabilities.reports_lock_count) return;
    const std::uint64_t expected = m.locks.size();
    std::optional<std::uint64_t> got;
    auto deadline = std::chrono::steady_clock::now() + SettleTimeout();
    do {
      got = locked_key_count(*adapter);
      Require(got.has_value(), "report_status() has no \"locked_key_count\"");
      if (*got == expected) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } while (std::chrono::steady_clock::now() < deadline);
    FailCase(std::string("after ") + after + ", report_status().locked_key_count = " +
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
      Require(e.kind == kind, "a " + what + " made the listener see a " +
                                  std::string(kind_name(e.kind)) + " event");
      for (std::size_t i = 0; i < e.keys.size(); ++i) {
        const std::string name = e.keys[i].to_string();
        got.insert(name);
        if (kind != RecordingListener::Kind::kAccessed && size_of.count(name)) {
          Require(i < e.sizes.size() && e.sizes[i] == size_of[name],
                  "a " + what + " reported a size of " +
                      (i < e.sizes.size() ? std::to_string(e.sizes[i]) : "(none)") +
                      " to the listener for an object of " + std::to_string(size_of[name]) +
                      " bytes");
        }
      }
    }
    if (!exact) {
      std::set<std::string> g(got.begin(), got.end()), w(want.begin(), want.end());
      Require(g == w, "the listener saw " + std::to_string(g.size()) + " distinct " + what +
                          " key(s) but " + std::to_string(w.size()) +
                          " were expected (calls must happen before the task completes)");
      return;
    }
    Require(got == want, "the listener saw " + std::to_string(got.size()) + " " + what +
                             " key(s) but " + std::to_string(want.size()) +
                             " were expected (calls must happen before the task completes)");
  }

  void after_command(const AdapterModel& next, const char* what) {
    last_model = next;
    check_usage(next, what);
    check_locks(next, what);
  }
};

using AdapterCommand = rc::state::Command<AdapterModel, AdapterSut>;

// The sizes of a run, chosen before the commands are generated (the commands' generators read
// them; one run is generated and executed at a time).
struct RunShape {
  std::size_t classes = 2;
  std::size_t keys_per_class = 8;
  std::size_t max_batch = 8;
};
thread_local RunShape g_shape;

// A batch of one class: 1..max_batch keys, sometimes with a key twice.
KeyPick gen_pick() {
  KeyPick p;
  p.cls = *uniform_in_range<std::size_t>(0, g_shape.classes);
  const std::size_t n = *gen_batch_size(std::min(g_shape.max_batch, g_shape.keys_per_class));
  std::vector<int> pool;
  for (std::size_t j = 0; j < g_shape.keys_per_class; ++j) {
    pool.push_back(static_cast<int>(j * g_shape.classes + p.cls));
  }
  // A random subset of n keys: shuffle by generated swaps, keep the first n.
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t j = *uniform_in_range<std::size_t>(i, pool.size());
    std::swap(pool[i], pool[j]);
  }
  p.idx.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(n));
  if (*uniform_in_range(0, 5) == 0) {
    p.idx.push_back(p.idx[*uniform_in_range<std::size_t>(0, p.idx.size())]);  // a duplicate
  }
  return p;
}

// A lookup or an unlock often names each key twice: a caller that looks a batch up twice
// unlocks it twice.
KeyPick gen_doubled_pick() {
  KeyPick p = gen_pick();
  if (*uniform_in_range(0, 3) == 0) {
    const std::vector<int> once = p.idx;
    p.idx.insert(p.idx.end(), once.begin(), once.end());
  }
  return p;
}

// Three times in four, a batch of keys the model holds (present, or locked with their lock
// counts): loads and lookups that hit, unlocks of what was locked. Otherwise `fallback`.
KeyPick gen_model_pick(const AdapterModel& m, bool locked, KeyPick (*fallback)()) {
  std::vector<int> held;
  if (locked) {
    for (auto [k, n] : m.locks) held.insert(held.end(), static_cast<std::size_t>(n), k);
  } else {
    held.assign(m.present.begin(), m.present.end());
  }
  if (held.empty() || *uniform_in_range(0, 4) == 0) return fallback();
  // The keys of one class (the class of a held key drawn at random).
  const std::size_t cls =
      static_cast<std::size_t>(held[*uniform_in_range<std::size_t>(0, held.size())]) %
      g_shape.classes;
  KeyPick p;
  p.cls = cls;
  for (int k : held) {
    if (static_cast<std::size_t>(k) % g_shape.classes == cls) p.idx.push_back(k);
  }
  // Mostly all of them: a caller unlocks everything it locked, a key as often as it locked it.
  const std::size_t n = *uniform_in_range(0, 4) != 0
                            ? std::min(g_shape.max_batch, p.idx.size())
                            : *gen_batch_size(std::min(g_shape.max_batch, p.idx.size()));
  for (std::size_t i = 0; i < n; ++i) {
    std::swap(p.idx[i], p.idx[*uniform_in_range<std::size_t>(i, p.idx.size())]);
  }
  p.idx.resize(n);
  return p;
}

struct Store : AdapterCommand {
  KeyPick pick;
  explicit Store(const AdapterModel& m) : pick(gen_pick()) { (void)m; }
  void apply(AdapterModel& m) const override { m.present.insert(pick.idx.begin(), pick.idx.end()); }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    const std::string what = "Store" + key_list(pick.idx);
    std::uint64_t new_bytes = 0, all_bytes = 0;
    std::multiset<int> fresh;
    for (int k : distinct(pick.idx)) {
      all_bytes += sut.stored_size(k);
      if (!m.present.count(k)) {
        new_bytes += sut.stored_size(k);
        fresh.insert(k);
      }
    }
    std::size_t ev = sut.listener->count();
    TaskId id = sut.submit_store(pick.idx, what);
    L2StoreResult r = sut.wait_stores({id}, what).at(id);
    Require(r.is_successful(), what + " failed");
    if (sut.on(kStoreBytes)) {
      Require(r.bytes_transferred() >= new_bytes && r.bytes_transferred() <= all_bytes,
              what + " reported " + std::to_string(r.bytes_transferred()) +
                  " bytes transferred; the new keys hold " + std::to_string(new_bytes) +
                  " and the batch's distinct keys " + std::to_string(all_bytes));
    }
    sut.check_fds(1, 0, 0, "a store");
    sut.check_listener(ev, RecordingListener::Kind::kStored, fresh, what,
                       distinct(pick.idx).size() == pick.idx.size());
    sut.after_command(nextState(m), "a store");
  }
  void show(std::ostream& os) const override { os << "Store" << key_list(pick.idx); }
};

// Two stores of overlapping batches of one class submitted back to back, then both awaited.
struct StoreTwiceInFlight : AdapterCommand {
  explicit StoreTwiceInFlight(const AdapterModel&) {}
  KeyPick a = gen_pick();
  std::vector<int> b = [this] {
    std::vector<int> keys = a.idx;
    std::reverse(keys.begin(), keys.end());
    keys.resize(std::max<std::size_t>(1, keys.size() / 2 + 1));
    return keys;
  }();
  void apply(AdapterModel& m) const override {
    m.present.insert(a.idx.begin(), a.idx.end());
    m.present.insert(b.begin(), b.end());
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    const std::string what = "StoreTwiceInFlight" + key_list(a.idx) + key_list(b);
    std::multiset<int> fresh;
    std::uint64_t new_bytes = 0;
    for (int k : distinct(a.idx)) {
      if (!m.present.count(k)) {
        fresh.insert(k);
        new_bytes += sut.stored_size(k);
      }
    }
    std::size_t ev = sut.listener->count();
    TaskId first = sut.submit_store(a.idx, what);
    TaskId second = sut.submit_store(b, what);
    if (sut.on(kOneShot)) Require(first != second, what + ": two stores got the same id");
    auto results = sut.wait_stores({first, second}, what);
    Require(results.at(first).is_successful() && results.at(second).is_successful(),
            what + ": a store failed");
    if (sut.on(kStoreBytes)) {
      const std::uint64_t sum =
          results.at(first).bytes_transferred() + results.at(second).bytes_transferred();
      Require(sum >= new_bytes, what + " reported " + std::to_string(sum) +
                                    " bytes in all, less than the " + std::to_string(new_bytes) +
                                    " bytes of the keys that were new");
    }
    sut.check_fds(2, 0, 0, "two stores in flight together");
    sut.check_listener(ev, RecordingListener::Kind::kStored, fresh, what, false);
    sut.after_command(nextState(m), "two stores of the same keys in flight together");
  }
  void show(std::ostream& os) const override {
    os << "StoreTwiceInFlight" << key_list(a.idx) << key_list(b);
  }
};

// A store and a load of the same batch submitted back to back: the load may or may not see
// the keys the store adds, but what it reports loaded must be whole.
struct StoreThenLoadInFlight : AdapterCommand {
  KeyPick pick;
  explicit StoreThenLoadInFlight(const AdapterModel& m) : pick(gen_pick()) { (void)m; }
  void apply(AdapterModel& m) const override { m.present.insert(pick.idx.begin(), pick.idx.end()); }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    const std::string what = "StoreThenLoadInFlight" + key_list(pick.idx);
    std::vector<MemoryObjPtr> dsts;
    std::vector<std::vector<std::byte>> before;
    std::size_t ev = sut.listener->count();
    TaskId s = sut.submit_store(pick.idx, what);
    TaskId l = sut.submit_load(pick.idx, &dsts, &before, what);
    Bitmap bits = sut.wait_load(l, what + " (its load)");
    Require(sut.wait_stores({s}, what).at(s).is_successful(), what + ": the store failed");
    std::vector<std::optional<bool>> must;
    for (int k : pick.idx) {
      must.push_back(m.present.count(k) ? std::optional<bool>(true) : std::nullopt);
    }
    sut.check_load(pick.idx, bits, must, dsts, before, what);
    sut.check_fds(1, 0, 1, "a store and a load in flight together");
    (void)ev;  // stored and accessed events interleave here; ListenersCalled checks them alone
    sut.after_command(nextState(m), "a store and a load of the same keys in flight together");
  }
  void show(std::ostream& os) const override {
    os << "StoreThenLoadInFlight" << key_list(pick.idx);
  }
};

struct LookupAndLock : AdapterCommand {
  KeyPick pick;
  explicit LookupAndLock(const AdapterModel& m)
      : pick(gen_model_pick(m, false, &gen_doubled_pick)) {
    (void)m;
  }
  void apply(AdapterModel& m) const override {
    for (int k : pick.idx) {
      if (m.present.count(k)) ++m.locks[k];
    }
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    const std::string what = "LookupAndLock" + key_list(pick.idx);
    std::size_t ev = sut.listener->count();
    TaskId id = sut.adapter->submit_lookup_and_lock_task(sut.keys_of(pick.idx));
    const bool fresh = sut.lookup_ids.insert(id).second;
    if (sut.on(kOneShot)) {
      Require(fresh, "submit_lookup_and_lock_task() reused id " + std::to_string(id));
    }
    auto bits =
        PollUntil([&] { return sut.adapter->query_lookup_and_lock_result(id); }, ResultTimeout());
    Require(bits.has_value(), what + " did not complete");
    if (sut.on(kOneShot)) {
      Require(!sut.adapter->query_lookup_and_lock_result(id),
              "query_lookup_and_lock_result(" + std::to_string(id) + ") answered twice");
      if (!sut.load_ids.count(id)) {
        Require(!sut.adapter->query_load_result(id),
                "query_load_result() answered for lookup id " + std::to_string(id));
      }
    }
    if (sut.on(kLookup)) {
      Require(bits->size() == pick.idx.size(),
              what + " returned a bitmap of " + std::to_string(bits->size()) + " bits");
      for (std::size_t i = 0; i < pick.idx.size(); ++i) {
        const int k = pick.idx[i];
        const bool present = m.present.count(k) > 0;
        Require(bits->test(i) == present,
                what + " bit " + std::to_string(i) + " (k" + std::to_string(k) + ") is " +
                    (bits->test(i) ? "set" : "clear") + " but the key is " +
                    (present ? "stored" : "absent") + " (bitmap " + bits->to_string() +
                    "; keys that differ in one field are different keys)");
      }
    }
    sut.check_fds(0, 1, 0, "a lookup");
    sut.check_listener(ev, RecordingListener::Kind::kAccessed, {}, what, true, true);
    sut.after_command(nextState(m), "a lookup");
  }
  void show(std::ostream& os) const override { os << "LookupAndLock" << key_list(pick.idx); }
};

struct Unlock : AdapterCommand {
  KeyPick pick;
  explicit Unlock(const AdapterModel& m) : pick(gen_model_pick(m, true, &gen_doubled_pick)) {
    (void)m;
  }
  void apply(AdapterModel& m) const override {
    for (int k : pick.idx) {
      auto it = m.locks.find(k);
      if (it != m.locks.end() && --it->second == 0) m.locks.erase(it);
    }
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    sut.adapter->submit_unlock(sut.keys_of(pick.idx));
    sut.after_command(nextState(m), "an unlock");
  }
  void show(std::ostream& os) const override { os << "Unlock" << key_list(pick.idx); }
};

struct Load : AdapterCommand {
  KeyPick pick;
  explicit Load(const AdapterModel& m) : pick(gen_model_pick(m, false, &gen_pick)) { (void)m; }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    const std::string what = "Load" + key_list(pick.idx);
    std::vector<MemoryObjPtr> dsts;
    std::vector<std::vector<std::byte>> before;
    std::size_t ev = sut.listener->count();
    TaskId id = sut.submit_load(pick.idx, &dsts, &before, what);
    Bitmap bits = sut.wait_load(id, what);
    std::vector<std::optional<bool>> must;
    std::set<int> hits;
    for (int k : pick.idx) {
      must.push_back(m.present.count(k) > 0);
      if (m.present.count(k)) hits.insert(k);
    }
    sut.check_load(pick.idx, bits, must, dsts, before, what);
    sut.check_fds(0, 0, 1, "a load");
    sut.check_listener(ev, RecordingListener::Kind::kAccessed,
                       std::multiset<int>(hits.begin(), hits.end()), what, false);
    sut.after_command(m, "a load");
  }
  void show(std::ostream& os) const override { os << "Load" << key_list(pick.idx); }
};

struct Delete : AdapterCommand {
  KeyPick pick;
  explicit Delete(const AdapterModel& m) : pick(gen_model_pick(m, false, &gen_pick)) { (void)m; }
  void apply(AdapterModel& m) const override {
    for (int k : pick.idx) m.present.erase(k);
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    std::multiset<int> removed;
    for (int k : distinct(pick.idx)) {
      if (m.present.count(k)) removed.insert(k);
    }
    std::size_t ev = sut.listener->count();
    sut.adapter->delete_keys(sut.keys_of(pick.idx));
    sut.check_listener(ev, RecordingListener::Kind::kDeleted, removed,
                       "Delete" + key_list(pick.idx), distinct(pick.idx).size() == pick.idx.size());
    sut.after_command(nextState(m), "a delete");
  }
  void show(std::ostream& os) const override { os << "Delete" << key_list(pick.idx); }
};

// Two or three layout classes; byte classes may be narrowed when the adapter stores bytes as
// they are (no stored_bytes / expected_load transform).
std::vector<LayoutClass> gen_classes(const AdapterUnderTest& aut) {
  SizeLimits limits = size_limits();
  limits.max_groups = 2;
  limits.max_group_elements = std::min<std::size_t>(limits.max_group_elements, 1u << 14);
  limits.max_total_elements = limits.max_group_elements;
  limits.allow_empty_groups = true;
  const bool raw = !aut.stored_bytes && !aut.expected_load;
  const bool bytes_ok = std::find(aut.object_dtypes.begin(), aut.object_dtypes.end(),
                                  DType::kUInt8) != aut.object_dtypes.end();
  const auto n = *uniform_in_range<std::size_t>(2, 4);
  std::vector<LayoutClass> classes;
  for (std::size_t c = 0; c < n; ++c) {
    LayoutClass lc;
    const bool narrowed = raw && bytes_ok && *uniform_in_range(0, 3) == 0;
    if (narrowed) {
      // A serialized temp: an estimate-sized byte buffer holding fewer bytes.
      const std::size_t physical = std::max<std::size_t>(2, *gen_element_count(1u << 15));
      lc.layout = ByteLayout(physical);
      lc.used = *uniform_in_range<std::size_t>(1, physical);
    } else {
      lc.layout = *gen_layout(aut.object_dtypes, limits);
      if (lc.layout.total_bytes() == 0)
        lc.layout = MemoryLayoutDesc::single({5}, lc.layout.dtypes()[0]);
      lc.used = lc.layout.total_bytes();
    }
    lc.stored_size = stored_size_of(aut, lc.layout, lc.used);
    classes.push_back(lc);
  }
  return classes;
}

}  // namespace

Verdict run_stateful(std::string_view property, const AdapterUnderTest& aut, unsigned checks) {
  const AdapterCapabilities& caps = aut.capabilities;
  if (checks == kLocks && !caps.reports_lock_count) {
    return Verdict::NotSupported("needs the reports_lock_count capability");
  }
  if (checks == kUsage && !caps.reports_usage) {
    return Verdict::NotSupported("needs the reports_usage capability");
  }
  if (checks == kListeners && !caps.supports_listeners) {
    return Verdict::NotSupported("needs the supports_listeners capability");
  }
  const DepthProfile& profile = current_profile();
  RcOptions options{.max_success = 40, .max_size = profile.max_commands, .shrink = false};
  return RunRcProperty(rc_id(property, aut), options, [&] {
    AdapterSut sut;
    sut.aut = &aut;
    sut.checks = checks;
    sut.classes = gen_classes(aut);
    sut.seed = *gen_seed();
    g_shape.classes = sut.classes.size();
    g_shape.max_batch = profile.max_batch;
    // Usually a small key universe, so that commands meet the same keys again (state matters
    // only then); sometimes one large enough for the largest batch. Objects stay within
    // 64 MiB in all.
    std::size_t biggest = 1;
    for (const auto& c : sut.classes) biggest = std::max(biggest, c.layout.total_bytes());
    const std::size_t universe =
        *rc::gen::weightedElement<std::size_t>({{3, 6}, {2, 12}, {2, profile.max_batch + 4}});
    g_shape.keys_per_class =
        std::clamp<std::size_t>((64u << 20) / (biggest * 4), 6, std::max<std::size_t>(6, universe));
    sut.keys = key_family(sut.seed, g_shape.classes * g_shape.keys_per_class);
    for (std::size_t c = 0; c < sut.classes.size(); ++c) {
      RC_LOG() << "class " << c << ": " << sut.classes[c].layout.to_string() << ", size() "
               << sut.classes[c].used << ", stored " << sut.classes[c].stored_size << "\n";
    }
    sut.listener = std::make_shared<RecordingListener>();
    L2AdapterPtr adapter = aut.make();
    Require(adapter != nullptr, "the adapter factory returned null");
    Closer closer{adapter.get()};
    sut.adapter = adapter.get();
    if (caps.supports_listeners) adapter->register_listener(sut.listener);
    AdapterModel initial;
    if (caps.supports_delete) {
      rc::state::check(
          initial, sut,
          rc::state::gen::execOneOfWithArgs<Store, StoreTwiceInFlight, StoreThenLoadInFlight,
                                            LookupAndLock, Unlock, Load, Delete>());
    } else {
      rc::state::check(
          initial, sut,
          rc::state::gen::execOneOfWithArgs<Store, StoreTwiceInFlight, StoreThenLoadInFlight,
                                            LookupAndLock, Unlock, Load>());
    }
    // Unlocks are fire and forget: they must have happened by now. A late extra notify shows
    // up here too.
    sut.check_locks(sut.last_model, "the whole sequence");
    if (sut.on(kFds)) {
      std::this_thread::sleep_for(kSettle);
      for (int fd : {adapter->get_store_event_fd(), adapter->get_lookup_and_lock_event_fd(),
                     adapter->get_load_event_fd()}) {
        std::uint64_t n = consume_fd(fd);
        Require(n == 0, "an fd counted " + std::to_string(n) +
                            " notifies after every task had completed and been counted");
      }
    }
  });
}

}  // namespace lmcache::conformance::internal::adapter_properties
