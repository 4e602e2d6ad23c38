#include "lmcache/conformance/adapter_conformance.h"

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
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance {

namespace {

using internal::PollUntil;
using internal::ResultTimeout;
using internal::SignalGrace;

// The aspects of the contract a stateful run checks; each property enables some.
enum Check : unsigned {
  kOneShot = 1u << 0,
  kFds = 1u << 1,
  kLookup = 1u << 2,
  kLoad = 1u << 3,
  kLocks = 1u << 4,
  kUsage = 1u << 5,
  kListeners = 1u << 6,
  kStoreBytes = 1u << 7,
  kAllChecks = 0xFFu,
};

constexpr int kKeys = 6;  // the key universe of one run

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
    Add({Kind::kStored, keys, sizes});
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>& keys) override {
    Add({Kind::kAccessed, keys, {}});
  }
  void on_l2_keys_deleted(const std::vector<ObjectKey>& keys,
                          const std::vector<std::uint64_t>& sizes) override {
    Add({Kind::kDeleted, keys, sizes});
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
  void Add(Event e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  mutable std::mutex mu_;
  std::vector<Event> events_;
};

struct AdapterModel {
  std::set<int> present;
  std::map<int, int> locks;  // lock counts > 0 only
};

std::string KeyList(const std::vector<int>& keys) {
  std::string s = "[";
  for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", k" : "k") + std::to_string(keys[i]);
  return s + "]";
}

// The system under test of one stateful run, plus what the checks remember between commands.
struct AdapterSut {
  L2AdapterInterface* adapter = nullptr;
  const AdapterUnderTest* aut = nullptr;
  unsigned checks = kAllChecks;
  MemoryLayoutDesc layout;
  std::uint64_t stored_size = 0;
  std::uint64_t seed = 0;
  std::vector<ObjectKey> keys;
  std::shared_ptr<RecordingListener> listener;
  std::set<TaskId> store_ids, lookup_ids, load_ids, popped_store_ids;
  AdapterModel last_model;  // the model after the last command run, for the final checks

  bool on(unsigned c) const { return (checks & c) != 0; }

  MemoryObjPtr Content(int k) const {
    MemoryObjPtr obj = MakeObject(layout);
    FillBytes(obj->physical_bytes(), seed * 31 + static_cast<std::uint64_t>(k) + 1);
    return obj;
  }

  MemoryObjPtr Expected(int k) const {
    MemoryObjPtr content = Content(k);
    if (!aut->expected_load) return content;
    MemoryObjPtr out = MakeObject(layout);
    aut->expected_load(*content, *out);
    return out;
  }

  // Pops until the result of `id` arrives; every popped id must be known and new.
  L2StoreResult WaitStore(TaskId id) {
    std::optional<L2StoreResult> mine;
    auto deadline = std::chrono::steady_clock::now() + ResultTimeout();
    while (!mine) {
      for (auto& [tid, r] : adapter->pop_completed_store_tasks()) {
        if (on(kOneShot)) {
          Require(store_ids.count(tid) == 1, "pop_completed_store_tasks() returned id " +
                                                 std::to_string(tid) + ", never issued by a store");
          Require(popped_store_ids.insert(tid).second,
                  "pop_completed_store_tasks() returned store " + std::to_string(tid) +
                      " a second time");
        }
        if (tid == id) mine = r;
      }
      if (mine) break;
      Require(std::chrono::steady_clock::now() < deadline,
              "store task " + std::to_string(id) + " did not complete within " +
                  std::to_string(ResultTimeout().count()) + " ms");
      wait_readable(adapter->get_store_event_fd(), std::chrono::milliseconds(2));
    }
    return *mine;
  }

  // After a task of `kind` completed: its fd counted exactly one notify, the others none.
  void CheckFds(const char* kind) {
    if (!on(kFds)) return;
    struct {
      const char* name;
      int fd;
    } fds[3] = {{"store", adapter->get_store_event_fd()},
                {"lookup", adapter->get_lookup_and_lock_event_fd()},
                {"load", adapter->get_load_event_fd()}};
    for (auto& f : fds) {
      bool mine = std::strcmp(f.name, kind) == 0;
      std::uint64_t n = consume_fd(f.fd);
      if (mine && n == 0) {
        wait_readable(f.fd, SignalGrace());
        n = consume_fd(f.fd);
      }
      Require(n == (mine ? 1u : 0u),
              std::string("after one ") + kind + " task completed, the " + f.name + " fd counted " +
                  std::to_string(n) + " notifies (expected " + (mine ? "exactly 1" : "none") + ")");
    }
  }

  void CheckUsage(const AdapterModel& m, const char* after) {
    if (!on(kUsage) || !aut->capabilities.reports_usage) return;
    AdapterUsage u = adapter->get_usage();
    std::uint64_t total = 0;
    std::map<std::string, std::uint64_t> by_salt;
    for (int k : m.present) {
      total += stored_size;
      by_salt[keys[static_cast<std::size_t>(k)].cache_salt()] += stored_size;
    }
    std::erase_if(by_salt, [](const auto& kv) { return kv.second == 0; });
    Require(u.total_bytes_used == total,
            std::string("after ") + after + ", get_usage().total_bytes_used = " +
                std::to_string(u.total_bytes_used) + " but the " +
                std::to_string(m.present.size()) + " stored keys hold " + std::to_string(total));
    Require(u.bytes_by_cache_salt == by_salt,
            std::string("after ") + after + ", get_usage().bytes_by_cache_salt does not match " +
                "the stored keys' salts");
  }

  std::optional<std::uint64_t> LockedKeyCount() {
    Json status = adapter->report_status();
    if (!status.is_object() || !status.contains("locked_key_count")) return std::nullopt;
    return status["locked_key_count"].get<std::uint64_t>();
  }

  void CheckLocks(const AdapterModel& m, const char* after) {
    if (!on(kLocks) || !aut->capabilities.reports_lock_count) return;
    const std::uint64_t expected = m.locks.size();
    std::optional<std::uint64_t> got;
    auto deadline = std::chrono::steady_clock::now() + internal::SettleTimeout();
    do {
      got = LockedKeyCount();
      Require(got.has_value(), "report_status() has no \"locked_key_count\"");
      if (*got == expected) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } while (std::chrono::steady_clock::now() < deadline);
    FailCase(std::string("after ") + after + ", report_status().locked_key_count = " +
             std::to_string(*got) + " but " + std::to_string(expected) +
             " keys hold lookup locks (hits lock once each; unlock releases one)");
  }

  // Listener events since `from` must be exactly: `kind` events whose keys are `expect`.
  void CheckListener(std::size_t from, RecordingListener::Kind kind, const std::set<int>& expect,
                     const char* what, bool ignore_accessed = false) {
    if (!on(kListeners) || !aut->capabilities.supports_listeners) return;
    std::multiset<std::string> got, want;
    for (int k : expect) want.insert(keys[static_cast<std::size_t>(k)].to_string());
    for (auto& e : listener->since(from)) {
      if (ignore_accessed && e.kind == RecordingListener::Kind::kAccessed) continue;
      Require(e.kind == kind, std::string("a ") + what + " made the listener see a " +
                                  (e.kind == RecordingListener::Kind::kStored     ? "stored"
                                   : e.kind == RecordingListener::Kind::kAccessed ? "accessed"
                                                                                  : "deleted") +
                                  " event");
      for (std::size_t i = 0; i < e.keys.size(); ++i) {
        got.insert(e.keys[i].to_string());
        if (kind != RecordingListener::Kind::kAccessed) {
          Require(i < e.sizes.size() && e.sizes[i] == stored_size,
                  std::string("a ") + what + " reported a size of " +
                      (i < e.sizes.size() ? std::to_string(e.sizes[i]) : "(none)") +
                      " to the listener; each object holds " + std::to_string(stored_size));
        }
      }
    }
    Require(got == want, std::string("the listener saw ") + std::to_string(got.size()) + " " +
                             what + " key(s) but " + std::to_string(want.size()) +
                             " were expected (calls must happen before the task completes)");
  }

  std::vector<ObjectKey> KeysOf(const std::vector<int>& idx) const {
    std::vector<ObjectKey> out;
    for (int k : idx) out.push_back(keys[static_cast<std::size_t>(k)]);
    return out;
  }
};

using AdapterCommand = rc::state::Command<AdapterModel, AdapterSut>;

std::vector<int> GenKeySubset() {
  return *rc::gen::unique<std::vector<int>>(rc::gen::inRange(0, kKeys));
}

struct Store : AdapterCommand {
  std::vector<int> idx = GenKeySubset();
  void apply(AdapterModel& m) const override { m.present.insert(idx.begin(), idx.end()); }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    std::vector<MemoryObjPtr> objs;
    std::uint64_t new_bytes = 0;
    std::set<int> fresh;
    for (int k : idx) {
      objs.push_back(sut.Content(k));
      if (!m.present.count(k)) {
        new_bytes += sut.stored_size;
        fresh.insert(k);
      }
    }
    const std::uint64_t all_bytes = sut.stored_size * idx.size();
    std::size_t ev = sut.listener->count();
    TaskId id = sut.adapter->submit_store_task(sut.KeysOf(idx), objs);
    if (sut.on(kOneShot)) {
      Require(sut.store_ids.insert(id).second,
              "submit_store_task() reused id " + std::to_string(id));
    } else {
      sut.store_ids.insert(id);
    }
    L2StoreResult r = sut.WaitStore(id);
    Require(r.is_successful(), "Store" + KeyList(idx) + " failed");
    if (sut.on(kStoreBytes)) {
      Require(r.bytes_transferred() >= new_bytes && r.bytes_transferred() <= all_bytes,
              "Store" + KeyList(idx) + " reported " + std::to_string(r.bytes_transferred()) +
                  " bytes transferred; the new keys hold " + std::to_string(new_bytes) +
                  " and the whole batch " + std::to_string(all_bytes));
    }
    if (sut.on(kOneShot)) {
      for (auto& [tid, _] : sut.adapter->pop_completed_store_tasks()) {
        Require(tid != id, "store " + std::to_string(id) + " was popped a second time");
      }
    }
    sut.CheckFds("store");
    AdapterModel next = nextState(m);
    sut.last_model = next;
    sut.CheckUsage(next, "a store");
    sut.CheckListener(ev, RecordingListener::Kind::kStored, fresh, "store");
    sut.CheckLocks(next, "a store");
  }
  void show(std::ostream& os) const override { os << "Store" << KeyList(idx); }
};

struct LookupAndLock : AdapterCommand {
  std::vector<int> idx = GenKeySubset();
  void apply(AdapterModel& m) const override {
    for (int k : idx) {
      if (m.present.count(k)) ++m.locks[k];
    }
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    std::size_t ev = sut.listener->count();
    TaskId id = sut.adapter->submit_lookup_and_lock_task(sut.KeysOf(idx));
    if (sut.on(kOneShot)) {
      Require(sut.lookup_ids.insert(id).second,
              "submit_lookup_and_lock_task() reused id " + std::to_string(id));
    } else {
      sut.lookup_ids.insert(id);
    }
    auto bits =
        PollUntil([&] { return sut.adapter->query_lookup_and_lock_result(id); }, ResultTimeout());
    Require(bits.has_value(), "LookupAndLock" + KeyList(idx) + " did not complete");
    if (sut.on(kOneShot)) {
      Require(!sut.adapter->query_lookup_and_lock_result(id),
              "query_lookup_and_lock_result(" + std::to_string(id) + ") answered twice");
      if (!sut.load_ids.count(id)) {
        Require(!sut.adapter->query_load_result(id),
                "query_load_result() answered for lookup id " + std::to_string(id));
      }
    }
    if (sut.on(kLookup)) {
      Require(bits->size() == idx.size(), "LookupAndLock of " + std::to_string(idx.size()) +
                                              " keys returned a bitmap of " +
                                              std::to_string(bits->size()) + " bits");
      for (std::size_t i = 0; i < idx.size(); ++i) {
        bool present = m.present.count(idx[i]) > 0;
        Require(bits->test(i) == present, "LookupAndLock" + KeyList(idx) + " bit " +
                                              std::to_string(i) + " (k" + std::to_string(idx[i]) +
                                              ") is " + (bits->test(i) ? "set" : "clear") +
                                              " but the key is " + (present ? "stored" : "absent") +
                                              " (bitmap " + bits->to_string() + ")");
      }
    }
    sut.CheckFds("lookup");
    AdapterModel next = nextState(m);
    sut.last_model = next;
    sut.CheckLocks(next, "a lookup-and-lock");
    sut.CheckUsage(next, "a lookup-and-lock");
    sut.CheckListener(ev, RecordingListener::Kind::kAccessed, {}, "lookup", true);
  }
  void show(std::ostream& os) const override { os << "LookupAndLock" << KeyList(idx); }
};

struct Unlock : AdapterCommand {
  std::vector<int> idx = GenKeySubset();
  void apply(AdapterModel& m) const override {
    for (int k : idx) {
      auto it = m.locks.find(k);
      if (it != m.locks.end() && --it->second == 0) m.locks.erase(it);
    }
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    sut.adapter->submit_unlock(sut.KeysOf(idx));
    sut.last_model = nextState(m);
    sut.CheckLocks(sut.last_model, "an unlock");
  }
  void show(std::ostream& os) const override { os << "Unlock" << KeyList(idx); }
};

struct Load : AdapterCommand {
  std::vector<int> idx = GenKeySubset();
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    std::vector<MemoryObjPtr> dsts;
    std::vector<std::vector<std::byte>> before;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      MemoryObjPtr d = MakeObject(sut.layout);
      FillBytes(d->physical_bytes(), 0xDEADull + i);  // stale bytes
      before.emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
      dsts.push_back(d);
    }
    std::size_t ev = sut.listener->count();
    TaskId id = sut.adapter->submit_load_task(sut.KeysOf(idx), dsts);
    if (sut.on(kOneShot)) {
      Require(sut.load_ids.insert(id).second, "submit_load_task() reused id " + std::to_string(id));
    } else {
      sut.load_ids.insert(id);
    }
    auto bits = PollUntil([&] { return sut.adapter->query_load_result(id); }, ResultTimeout());
    Require(bits.has_value(), "Load" + KeyList(idx) + " did not complete");
    if (sut.on(kOneShot)) {
      Require(!sut.adapter->query_load_result(id),
              "query_load_result(" + std::to_string(id) + ") answered twice");
      if (!sut.lookup_ids.count(id)) {
        Require(!sut.adapter->query_lookup_and_lock_result(id),
                "query_lookup_and_lock_result() answered for load id " + std::to_string(id));
      }
    }
    std::set<int> hits;
    for (int k : idx) {
      if (m.present.count(k)) hits.insert(k);
    }
    if (sut.on(kLoad)) {
      Require(bits->size() == idx.size(), "Load of " + std::to_string(idx.size()) +
                                              " keys returned a bitmap of " +
                                              std::to_string(bits->size()) + " bits");
      const std::size_t n = sut.layout.total_bytes();
      for (std::size_t i = 0; i < idx.size(); ++i) {
        bool present = m.present.count(idx[i]) > 0;
        Require(bits->test(i) == present, "Load" + KeyList(idx) + " bit " + std::to_string(i) +
                                              " (k" + std::to_string(idx[i]) + ") is " +
                                              (bits->test(i) ? "set" : "clear") +
                                              " but the key is " + (present ? "stored" : "absent") +
                                              " (bitmap " + bits->to_string() + ")");
        if (present) {
          MemoryObjPtr want = sut.Expected(idx[i]);
          Require(std::memcmp(dsts[i]->data(), want->data(), n) == 0,
                  "Load" + KeyList(idx) + " set bit " + std::to_string(i) + " (k" +
                      std::to_string(idx[i]) +
                      ") but its destination does not hold the stored "
                      "object");
        } else {
          Require(std::memcmp(dsts[i]->data(), before[i].data(), before[i].size()) == 0,
                  "Load" + KeyList(idx) + " wrote the destination of absent key k" +
                      std::to_string(idx[i]) + " (bit " + std::to_string(i) + " clear)");
        }
      }
    }
    sut.CheckFds("load");
    sut.last_model = m;
    sut.CheckUsage(m, "a load");
    sut.CheckListener(ev, RecordingListener::Kind::kAccessed, hits, "load");
    sut.CheckLocks(m, "a load");
  }
  void show(std::ostream& os) const override { os << "Load" << KeyList(idx); }
};

struct Delete : AdapterCommand {
  std::vector<int> idx = GenKeySubset();
  void apply(AdapterModel& m) const override {
    for (int k : idx) m.present.erase(k);
  }
  void run(const AdapterModel& m, AdapterSut& sut) const override {
    std::set<int> removed;
    for (int k : idx) {
      if (m.present.count(k)) removed.insert(k);
    }
    std::size_t ev = sut.listener->count();
    sut.adapter->delete_keys(sut.KeysOf(idx));
    AdapterModel next = nextState(m);
    sut.last_model = next;
    sut.CheckUsage(next, "a delete");
    sut.CheckListener(ev, RecordingListener::Kind::kDeleted, removed, "delete");
    sut.CheckLocks(next, "a delete");
  }
  void show(std::ostream& os) const override { os << "Delete" << KeyList(idx); }
};

std::vector<ObjectKey> KeyUniverse(std::uint64_t seed) {
  std::vector<ObjectKey> keys;
  const char* salts[3] = {"", "salt_a", "salt_b"};
  for (int i = 0; i < kKeys; ++i) {
    std::string hash = int_hash_to_bytes(static_cast<std::uint32_t>(seed)) +
                       int_hash_to_bytes(static_cast<std::uint32_t>(seed >> 32)) +
                       int_hash_to_bytes(static_cast<std::uint32_t>(i));
    keys.emplace_back(hash, i % 2 ? "conformance-model-b" : "conformance-model", i % 3,
                      i == 4 ? 1 : 0, salts[i % 3]);
  }
  return keys;
}

MemoryLayoutDesc GenObjectLayout(const AdapterUnderTest& aut) {
  MemoryLayoutDesc layout = *GenLayout(aut.object_dtypes, {1, 2, 64});
  if (layout.total_bytes() == 0) layout = MemoryLayoutDesc::single({5}, layout.dtypes()[0]);
  return layout;
}

// Closes the adapter however the property ends.
struct Closer {
  L2AdapterInterface* a;
  ~Closer() {
    try {
      if (a) a->close();
    } catch (...) {
    }
  }
};

std::string Id(std::string_view property, const AdapterUnderTest& aut) {
  return "AdapterConformance." + std::string(property) + "/" + aut.name;
}

Verdict Stateful(std::string_view property, const AdapterUnderTest& aut, unsigned checks) {
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
  RcOptions options{.max_success = 15, .max_size = 40, .shrink = false};
  return RunRcProperty(Id(property, aut), options, [&] {
    AdapterSut sut;
    sut.aut = &aut;
    sut.checks = checks;
    sut.layout = GenObjectLayout(aut);
    sut.seed = *rc::gen::arbitrary<std::uint64_t>();
    sut.stored_size = aut.stored_bytes ? aut.stored_bytes(sut.layout) : sut.layout.total_bytes();
    sut.keys = KeyUniverse(sut.seed);
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
          rc::state::gen::execOneOfWithArgs<Store, LookupAndLock, Unlock, Load, Delete>());
    } else {
      rc::state::check(initial, sut,
                       rc::state::gen::execOneOfWithArgs<Store, LookupAndLock, Unlock, Load>());
    }
    // Unlocks are fire and forget: they must have happened by now. A late extra notify shows
    // up here too.
    sut.CheckLocks(sut.last_model, "the whole sequence");
    if (sut.on(kFds)) {
      std::this_thread::sleep_for(internal::kSettle);
      for (int fd : {adapter->get_store_event_fd(), adapter->get_lookup_and_lock_event_fd(),
                     adapter->get_load_event_fd()}) {
        std::uint64_t n = consume_fd(fd);
        Require(n == 0, "an fd counted " + std::to_string(n) +
                            " notifies after every task had completed and been counted");
      }
    }
  });
}

Verdict DistinctEventFds(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  Closer ca{a.get()};
  L2AdapterPtr b = aut.make();
  Closer cb{b.get()};
  int fds[6] = {a->get_store_event_fd(), a->get_lookup_and_lock_event_fd(), a->get_load_event_fd(),
                b->get_store_event_fd(), b->get_lookup_and_lock_event_fd(), b->get_load_event_fd()};
  const char* names[6] = {"store fd",
                          "lookup fd",
                          "load fd",
                          "second instance's store fd",
                          "second instance's lookup fd",
                          "second instance's load fd"};
  if (std::string problem = DistinctOpenFdsProblem(fds, names); !problem.empty()) {
    return Verdict::Fail(problem);
  }
  return Verdict::Pass();
}

Verdict UnknownIdsGiveNone(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  Closer closer{a.get()};
  auto probe = [&](TaskId id) -> std::string {
    try {
      if (a->query_lookup_and_lock_result(id)) {
        return "query_lookup_and_lock_result(" + std::to_string(id) +
               ") answered for an id never issued";
      }
      if (a->query_load_result(id)) {
        return "query_load_result(" + std::to_string(id) + ") answered for an id never issued";
      }
    } catch (const std::exception& e) {
      return "a query of id " + std::to_string(id) + " (never issued) threw: " + e.what();
    }
    return {};
  };
  for (TaskId id : {TaskId{0}, TaskId{1}, TaskId{2}, TaskId{1000}, TaskId{1} << 40, ~TaskId{0}}) {
    if (std::string e = probe(id); !e.empty()) return Verdict::Fail(e);
  }
  if (!a->pop_completed_store_tasks().empty()) {
    return Verdict::Fail("a fresh adapter's pop_completed_store_tasks() returned results");
  }
  ObjectKey key(int_hash_to_bytes(77), "conformance-model", 0);
  MemoryObjPtr obj = MakeObject(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  std::map<TaskId, L2StoreResult> got;
  PollUntil(
      [&]() -> std::optional<bool> {
        for (auto& kv : a->pop_completed_store_tasks()) got.insert(kv);
        return got.count(s) ? std::optional<bool>(true) : std::nullopt;
      },
      ResultTimeout());
  if (!got.count(s)) return Verdict::Fail("store task " + std::to_string(s) + " did not complete");
  TaskId l = a->submit_load_task({key}, {MakeObject(obj->layout())});
  if (!PollUntil([&] { return a->query_load_result(l); }, ResultTimeout())) {
    return Verdict::Fail("load task " + std::to_string(l) + " did not complete");
  }
  for (TaskId id : {std::max(s, l) + 1000, std::max(s, l) + 99999}) {
    if (std::string e = probe(id); !e.empty()) return Verdict::Fail(e);
  }
  return Verdict::Pass();
}

Verdict CloseIsIdempotent(const AdapterUnderTest& aut) {
  L2AdapterPtr a = aut.make();
  ObjectKey key(int_hash_to_bytes(78), "conformance-model", 0);
  MemoryObjPtr obj = MakeObject(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  bool done = PollUntil(
                  [&]() -> std::optional<bool> {
                    return a->pop_completed_store_tasks().count(s) ? std::optional<bool>(true)
                                                                   : std::nullopt;
                  },
                  ResultTimeout())
                  .has_value();
  if (!done) {
    a->close();
    return Verdict::Fail("store task " + std::to_string(s) + " did not complete");
  }
  try {
    a->close();
    a->close();
  } catch (const std::exception& e) {
    return Verdict::Fail(std::string("close() twice threw: ") + e.what());
  }
  auto expect_logic_error = [&](const char* what, auto&& fn) -> std::string {
    try {
      fn();
    } catch (const std::logic_error&) {
      return {};
    } catch (const std::exception& e) {
      return std::string(what) +
             " after close() threw something other than std::logic_error: " + e.what();
    }
    return std::string(what) + " after close() did not throw std::logic_error";
  };
  for (auto msg :
       {expect_logic_error("submit_store_task()", [&] { a->submit_store_task({key}, {obj}); }),
        expect_logic_error("submit_lookup_and_lock_task()",
                           [&] { a->submit_lookup_and_lock_task({key}); }),
        expect_logic_error("submit_load_task()", [&] { a->submit_load_task({key}, {obj}); })}) {
    if (!msg.empty()) return Verdict::Fail(msg);
  }
  // SPEC §7: what completed stays retrievable; other calls may throw std::logic_error.
  try {
    (void)a->pop_completed_store_tasks();
    (void)a->query_load_result(s);
  } catch (const std::exception& e) {
    return Verdict::Fail(std::string("pop / query after close() threw: ") + e.what());
  }
  return Verdict::Pass();
}

Verdict CloseReleasesResources(const AdapterUnderTest& aut) {
  ResourceSnapshot baseline = ResourceSnapshot::Take();
  L2AdapterPtr a = aut.make();
  ObjectKey key(int_hash_to_bytes(79), "conformance-model", 0);
  MemoryObjPtr obj = MakeObject(MemoryLayoutDesc::single({8}, aut.object_dtypes.front()));
  TaskId s = a->submit_store_task({key}, {obj});
  PollUntil(
      [&]() -> std::optional<bool> {
        return a->pop_completed_store_tasks().count(s) ? std::optional<bool>(true) : std::nullopt;
      },
      ResultTimeout());
  TaskId l = a->submit_load_task({key}, {MakeObject(obj->layout())});
  PollUntil([&] { return a->query_load_result(l); }, ResultTimeout());
  a->close();
  if (std::string leak = WaitForResources(baseline, internal::SettleTimeout()); !leak.empty()) {
    return Verdict::Fail("after close() the process holds " + leak +
                         " of the adapter: close() must release its fds and threads");
  }
  return Verdict::Pass();
}

}  // namespace

Verdict RunAdapterProperty(std::string_view property, const AdapterUnderTest& adapter) {
  using Fn = Verdict (*)(const AdapterUnderTest&);
  static const std::pair<std::string_view, unsigned> kStateful[] = {
      {"OneShotResults", kOneShot},        {"EachKindSignalsItsFd", kFds},
      {"StoreReportsBytes", kStoreBytes},  {"LookupReportsPresence", kLookup},
      {"PartialLoadBitmap", kLoad},        {"LookupLocks", kLocks},
      {"UsageMatchesStoredBytes", kUsage}, {"ListenersCalled", kListeners},
      {"StatefulModel", kAllChecks},
  };
  static const std::pair<std::string_view, Fn> kScenario[] = {
      {"DistinctEventFds", &DistinctEventFds},
      {"UnknownIdsGiveNone", &UnknownIdsGiveNone},
      {"CloseIsIdempotent", &CloseIsIdempotent},
      {"CloseReleasesResources", &CloseReleasesResources},
  };
  try {
    for (const auto& [name, checks] : kStateful) {
      if (name == property) return Stateful(property, adapter, checks);
    }
    for (const auto& [name, fn] : kScenario) {
      if (name == property) return fn(adapter);
    }
  } catch (const std::exception& e) {
    return Verdict::Fail("property aborted by an exception: " + std::string(e.what()));
  }
  return Verdict::Fail("unknown adapter property '" + std::string(property) + "'");
}

namespace internal {
int AdapterConformanceLinkAnchor() { return 0; }
}  // namespace internal

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AdapterConformance);

LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, DistinctEventFds, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, UnknownIdsGiveNone, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, OneShotResults, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, EachKindSignalsItsFd, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, StoreReportsBytes, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, LookupReportsPresence, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, PartialLoadBitmap, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, LookupLocks, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, UsageMatchesStoredBytes, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, ListenersCalled, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, StatefulModel, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, CloseIsIdempotent, RunAdapterProperty)
LMCACHE_CONFORMANCE_PROPERTY(AdapterConformance, CloseReleasesResources, RunAdapterProperty)

}  // namespace lmcache::conformance
