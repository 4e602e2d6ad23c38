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
#include <utility>
#include <vector>

#include <rapidcheck/state.h>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/core/event_notifier.h"

#include "lmcache/conformance/internal/adapter_model.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

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
    // One time in four, once each the keys of one class that hold two locks or more: a key
    // locked by two lookups and unlocked by one stays locked.
    if (*uniform_in_range(0, 4) == 0) {
      KeyPick p;
      for (auto [k, n] : m.locks) {
        if (n < 2) continue;
        if (p.idx.empty()) p.cls = static_cast<std::size_t>(k) % g_shape.classes;
        if (static_cast<std::size_t>(k) % g_shape.classes == p.cls) p.idx.push_back(k);
      }
      if (!p.idx.empty() && p.idx.size() <= g_shape.max_batch) return p;
    }
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

// A load's batch: one of gen_model_pick's, and one time in three with absent keys of the same
// class mixed into it at random positions. A partial hit is where bitmaps go wrong (every bit
// set, bits in the wrong order, the hits packed to the front), and a batch of only hits or only
// misses cannot tell those apart from a correct bitmap.
KeyPick gen_load_pick(const AdapterModel& m) {
  KeyPick p = gen_model_pick(m, false, &gen_pick);
  if (*uniform_in_range(0, 3) != 0) return p;
  std::vector<int> absent;
  for (std::size_t j = 0; j < g_shape.keys_per_class; ++j) {
    const int k = static_cast<int>(j * g_shape.classes + p.cls);
    if (!m.present.count(k)) absent.push_back(k);
  }
  if (absent.empty()) return p;
  const std::size_t n =
      *uniform_in_range<std::size_t>(1, std::min<std::size_t>(2, absent.size()) + 1);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = absent[*uniform_in_range<std::size_t>(0, absent.size())];
    const std::size_t at = *uniform_in_range<std::size_t>(0, p.idx.size() + 1);
    if (p.idx.size() < g_shape.max_batch) {
      p.idx.insert(p.idx.begin() + static_cast<std::ptrdiff_t>(at), k);
    } else {
      p.idx[std::min(at, p.idx.size() - 1)] = k;  // a full batch stays within max_batch
    }
  }
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
    require(r.is_successful(), what + " failed");
    if (sut.on(kStoreBytes)) {
      require(r.bytes_transferred() >= new_bytes && r.bytes_transferred() <= all_bytes,
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
    if (sut.on(kOneShot)) require(first != second, what + ": two stores got the same id");
    auto results = sut.wait_stores({first, second}, what);
    require(results.at(first).is_successful() && results.at(second).is_successful(),
            what + ": a store failed");
    if (sut.on(kStoreBytes)) {
      const std::uint64_t sum =
          results.at(first).bytes_transferred() + results.at(second).bytes_transferred();
      require(sum >= new_bytes, what + " reported " + std::to_string(sum) +
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
    require(sut.wait_stores({s}, what).at(s).is_successful(), what + ": the store failed");
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
      require(fresh, "submit_lookup_and_lock_task() reused id " + std::to_string(id));
    }
    auto bits = sut.wait_announced(
        1, sut.adapter->get_lookup_and_lock_event_fd(),
        [&] { return sut.adapter->query_lookup_and_lock_result(id); }, what);
    require(bits.has_value(), what + " did not complete");
    if (sut.on(kOneShot)) {
      require(!sut.adapter->query_lookup_and_lock_result(id),
              "query_lookup_and_lock_result(" + std::to_string(id) + ") answered twice");
      if (!sut.load_ids.count(id)) {
        require(!sut.adapter->query_load_result(id),
                "query_load_result() answered for lookup id " + std::to_string(id));
      }
    }
    if (sut.on(kLookup)) {
      require(bits->size() == pick.idx.size(),
              what + " returned a bitmap of " + std::to_string(bits->size()) + " bits");
      for (std::size_t i = 0; i < pick.idx.size(); ++i) {
        const int k = pick.idx[i];
        const bool present = m.present.count(k) > 0;
        require(bits->test(i) == present,
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
  explicit Load(const AdapterModel& m) : pick(gen_load_pick(m)) {}
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

// The largest object of an adapter class: KV-chunk-sized, up to 2 MiB (a batch of 80 such
// objects stays within the memory an adapter under test is given).
std::size_t max_object_bytes() {
  return std::min<std::size_t>(current_profile().max_chunk_bytes, std::size_t{2} << 20);
}

// The byte size of a large object: just around 64 KiB (where a fixed-size slot or a 16-bit
// length ends), 128 KiB, or anywhere up to max_object_bytes().
rc::Gen<std::size_t> gen_large_object_bytes() {
  const std::size_t top = std::max<std::size_t>(max_object_bytes(), 65537);
  return rc::gen::weightedOneOf<std::size_t>(
      {{2, rc::gen::element<std::size_t>(65535, 65536, 65537, 131072)},
       {3, uniform_in_range<std::size_t>(65536, top + 1)}});
}

// Two or three layout classes over the whole object size domain: mostly small layouts, about
// one class in eight KV-chunk-sized (64 KiB to max_object_bytes()), one in eleven a 0-byte
// object;
// byte classes may be narrowed (to 0 bytes now and then) when the adapter stores bytes as they
// are (no stored_bytes / expected_load transform). When it does, one class of every run is
// narrowed: a load into a buffer longer than the stored value is a whole dimension of the
// contract (a connector that mishandles it went unseen in about one quick run in ten when
// narrowing was left to chance).
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
  const bool can_narrow = raw && bytes_ok;
  const std::size_t always_narrowed = can_narrow ? *uniform_in_range<std::size_t>(0, n) : n;
  std::vector<LayoutClass> classes;
  for (std::size_t c = 0; c < n; ++c) {
    LayoutClass lc;
    const bool forced = c == always_narrowed;
    const int size_kind = forced ? *rc::gen::weightedElement<int>({{34, 0}, {6, 1}})
                                 : *rc::gen::weightedElement<int>({{34, 0}, {6, 1}, {4, 2}});
    const bool narrowed = can_narrow && (forced || *uniform_in_range(0, 3) == 0);
    if (size_kind == 2) {  // a 0-byte object
      lc.layout = MemoryLayoutDesc::single({0}, *rc::gen::elementOf(aut.object_dtypes));
      lc.used = 0;
    } else if (narrowed) {
      // A serialized temp: an estimate-sized byte buffer holding fewer bytes (none, now and
      // then).
      const std::size_t physical = size_kind == 1
                                       ? *gen_large_object_bytes()
                                       : std::max<std::size_t>(2, *gen_element_count(1u << 15));
      lc.layout = byte_layout(physical);
      lc.used = *uniform_in_range(0, 10) == 0 ? 0 : *uniform_in_range<std::size_t>(1, physical);
    } else if (size_kind == 1) {
      const DType dtype = *rc::gen::elementOf(aut.object_dtypes);
      const std::size_t elements =
          std::max<std::size_t>(1, *gen_large_object_bytes() / element_size(dtype));
      lc.layout = MemoryLayoutDesc::single({static_cast<std::int64_t>(elements)}, dtype);
      lc.used = lc.layout.total_bytes();
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

// Generates one command sequence and runs it: rc::state::check with a floor on the size.
// RapidCheck spreads case sizes evenly from 0, and a sequence is 1..size+1 commands long, so at
// quick depth (14 cases) a run was mostly sequences of a handful of commands: a bug that shows
// only in one command in one state (a load of a key never stored, for an adapter whose bitmaps
// say every key loaded) escaped about one run in 30. With every size at `min_commands` or more,
// sequences are still of every length from one command up, but the long ones are as likely in
// the first case as in the last.
template <typename GenFunc>
void run_sequence(const AdapterModel& initial, AdapterSut& sut, int min_commands,
                  GenFunc&& gen_command) {
  const auto sequences = rc::state::gen::commands(initial, std::forward<GenFunc>(gen_command));
  const auto commands = *rc::gen::withSize(
      [&](int size) { return rc::gen::resize(std::max(size, min_commands), sequences); });
  rc::state::runAll(commands, initial, sut);
}

}  // namespace

Verdict run_stateful(std::string_view property, const AdapterUnderTest& aut, unsigned checks) {
  const AdapterCapabilities& caps = aut.capabilities;
  if (checks == kLocks && !caps.reports_lock_count) {
    return Verdict::not_supported("needs the reports_lock_count capability");
  }
  if (checks == kUsage && !caps.reports_usage) {
    return Verdict::not_supported("needs the reports_usage capability");
  }
  if (checks == kListeners && !caps.supports_listeners) {
    return Verdict::not_supported("needs the supports_listeners capability");
  }
  const DepthProfile& profile = current_profile();
  RcOptions options{.max_success = 40, .max_size = profile.max_commands, .shrink = false};
  return run_rc_property(rc_id(property, aut), options, [&] {
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
    require(adapter != nullptr, "the adapter factory returned null");
    Closer closer{adapter.get()};
    sut.adapter = adapter.get();
    if (caps.supports_listeners) adapter->register_listener(sut.listener);
    const AdapterModel initial;
    const int min_commands = profile.max_commands;
    if (caps.supports_delete) {
      run_sequence(
          initial, sut, min_commands,
          rc::state::gen::execOneOfWithArgs<Store, StoreTwiceInFlight, StoreThenLoadInFlight,
                                            LookupAndLock, Unlock, Load, Delete>());
    } else {
      run_sequence(
          initial, sut, min_commands,
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
        require(n == 0, "an fd counted " + std::to_string(n) +
                            " notifies after every task had completed and been counted");
      }
    }
  });
}

}  // namespace lmcache::conformance_internal::adapter_properties
