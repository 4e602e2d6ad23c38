#include "lmcache/testing/bridge_checks.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <stdexcept>
#include <thread>

#include "lmcache/core/close_quietly.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/testing/connector_faults.h"

namespace lmcache::storage_testing {

namespace {

using namespace std::chrono_literals;
using bridge::NativeConnectorAdapterOptions;
using bridge::NativeConnectorL2Adapter;

struct Problem : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw Problem(what);
}

std::chrono::milliseconds scaled(std::chrono::milliseconds base) {
  const char* s = std::getenv("LMCACHE_CONFORMANCE_TIMEOUT_SCALE");
  const double v = s != nullptr ? std::atof(s) : 1.0;
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(base.count()) * (v > 0 ? v : 1.0)));
}

// Chunk hashes unique to this check run, so that checks sharing one store never meet.
std::string nonce() {
  static std::atomic<std::uint64_t> counter{0};
  const std::uint64_t n = counter.fetch_add(1);
  const auto t =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  std::string out;
  for (std::uint64_t v : {static_cast<std::uint64_t>(::getpid()), t, n}) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  }
  return out;
}

ObjectKey make_key(const std::string& run, const std::string& tag,
                   std::string model = "bridge-check", std::int64_t rank = 0,
                   std::int64_t group = 0, std::string salt = {}) {
  return ObjectKey(run + tag, std::move(model), rank, group, std::move(salt));
}

std::uint8_t pattern(std::uint8_t seed, std::size_t i) {
  return static_cast<std::uint8_t>(seed * 131u + i * 7u + 1u);
}

MemoryObjPtr make_obj(std::size_t n, std::uint8_t seed) {
  MemoryObjPtr o =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  auto* p = reinterpret_cast<std::uint8_t*>(o->data());
  for (std::size_t i = 0; i < n; ++i) p[i] = pattern(seed, i);
  return o;
}

bool holds(const MemoryObj& o, std::size_t n, std::uint8_t seed) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(o.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(seed, i)) return false;
  }
  return true;
}

// Closes however the check ends.
struct Closer {
  L2AdapterInterface* a;
  ~Closer() {
    if (a != nullptr) close_quietly(*a);
  }
};

L2AdapterPtr build(const BridgeRig& rig, bridge::ErasedConnectorPtr c,
                   NativeConnectorAdapterOptions options) {
  if (rig.make_bridge) return rig.make_bridge(std::move(c), std::move(options));
  return std::make_unique<NativeConnectorL2Adapter>(std::move(c), std::move(options));
}

// Another client of the same store: always the real bridge.
L2AdapterPtr observer(const BridgeRig& rig) {
  return std::make_unique<NativeConnectorL2Adapter>(rig.make_connector(), rig.options);
}

std::optional<L2StoreResult> wait_store(L2AdapterInterface& a, TaskId id) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  for (;;) {
    auto done = a.pop_completed_store_tasks();
    if (auto it = done.find(id); it != done.end()) return it->second;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    wait_readable(a.get_store_event_fd(), 5ms);
  }
}

template <class Query>
std::optional<Bitmap> wait_bits(Query&& query, int fd) {
  const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
  for (;;) {
    if (auto bits = query()) return bits;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    wait_readable(fd, 5ms);
  }
}

Bitmap lookup(L2AdapterInterface& a, const std::vector<ObjectKey>& keys, const std::string& who) {
  const TaskId id = a.submit_lookup_and_lock_task(keys);
  auto bits = wait_bits([&] { return a.query_lookup_and_lock_result(id); },
                        a.get_lookup_and_lock_event_fd());
  require(bits.has_value(), who + ": a lookup did not complete");
  require(bits->size() == keys.size(), who + ": a lookup of " + std::to_string(keys.size()) +
                                           " keys returned " + std::to_string(bits->size()) +
                                           " bits");
  return *bits;
}

Bitmap load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
            const std::vector<MemoryObjPtr>& dsts, const std::string& who) {
  const TaskId id = a.submit_load_task(keys, dsts);
  auto bits = wait_bits([&] { return a.query_load_result(id); }, a.get_load_event_fd());
  require(bits.has_value(), who + ": a load did not complete");
  require(bits->size() == keys.size(), who + ": a load of " + std::to_string(keys.size()) +
                                           " keys returned " + std::to_string(bits->size()) +
                                           " bits");
  return *bits;
}

L2StoreResult store(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                    const std::vector<MemoryObjPtr>& objs, const std::string& what) {
  const TaskId id = a.submit_store_task(keys, objs);
  std::optional<L2StoreResult> r = wait_store(a, id);
  require(r.has_value(), what + " did not complete");
  return *r;
}

std::optional<std::uint64_t> locked_keys(L2AdapterInterface& a) {
  Json s = a.report_status();
  if (!s.is_object() || !s.contains("locked_key_count")) return std::nullopt;
  return s["locked_key_count"].get<std::uint64_t>();
}

template <class Fn>
std::string run_check(Fn&& fn) {
  try {
    fn();
  } catch (const Problem& p) {
    return p.what();
  } catch (const std::exception& e) {
    return std::string("the check aborted with an exception: ") + e.what();
  }
  return {};
}

}  // namespace

std::string check_failed_set_leaves_nothing_visible(const BridgeRig& rig) {
  return run_check([&] {
    auto faults = std::make_shared<ConnectorFaults>();
    auto faulty = std::make_unique<FaultyConnector>(rig.make_connector(), faults);
    // Without submit_batch_delete (older connectors) the bridge can only hide the keys from its
    // own callers; other clients are then out of its reach.
    const bool can_delete = faulty->supports_delete();
    L2AdapterPtr bridge = build(rig, std::move(faulty), rig.options);
    Closer close_bridge{bridge.get()};
    L2AdapterPtr other = observer(rig);
    Closer close_other{other.get()};
    const std::string run = nonce();
    // Two sizes: two connector batches.
    const std::vector<ObjectKey> keys = {make_key(run, "a"), make_key(run, "b")};
    const std::vector<MemoryObjPtr> objs = {make_obj(64, 1), make_obj(128, 2)};
    const std::uint64_t usage_before = bridge->get_usage().total_bytes_used;

    faults->fail_sets_after_write = true;
    const L2StoreResult failed = store(*bridge, keys, objs, "a store whose connector batch fails");
    faults->fail_sets_after_write = false;
    require(!failed.is_successful(),
            "a store whose connector batch failed (after writing) reported " + failed.to_string());

    require(lookup(*bridge, keys, "same client").none(),
            "after a failed store, a lookup through the same bridge finds its keys");
    std::vector<MemoryObjPtr> dsts = {make_obj(64, 9), make_obj(128, 9)};
    require(load(*bridge, keys, dsts, "same client").none(),
            "after a failed store, a load through the same bridge loads its keys");
    require(holds(*dsts[0], 64, 9) && holds(*dsts[1], 128, 9),
            "after a failed store, a load wrote the destinations of its (absent) keys");
    if (can_delete) {
      require(lookup(*other, keys, "another client").none(),
              "after a failed store, another client of the store still finds its keys (the "
              "bridge did not delete what the failed batch wrote)");
    }
    require(bridge->get_usage().total_bytes_used == usage_before,
            "a failed store changed the usage from " + std::to_string(usage_before) + " to " +
                std::to_string(bridge->get_usage().total_bytes_used));

    const L2StoreResult ok = store(*bridge, keys, objs, "a store after a failed one");
    require(ok.is_successful(),
            "a store of the keys of a failed store then failed: " + ok.to_string());
    require(lookup(*bridge, keys, "same client").all(),
            "keys stored again after a failed store are not found by the same bridge");
    require(lookup(*other, keys, "another client").all(),
            "keys stored again after a failed store are not found by another client");
    bridge->submit_unlock(keys);
    other->submit_unlock(keys);
  });
}

std::string check_per_key_misses(const BridgeRig& rig) {
  return run_check([&] {
    L2AdapterPtr bridge = build(rig, rig.make_connector(), rig.options);
    Closer close_bridge{bridge.get()};
    const std::string run = nonce();
    const ObjectKey k1 = make_key(run, "1"), k2 = make_key(run, "2"), k3 = make_key(run, "3"),
                    k4 = make_key(run, "4");
    require(store(*bridge, {k1, k3}, {make_obj(64, 1), make_obj(64, 3)}, "a store").is_successful(),
            "a plain store failed");
    std::vector<MemoryObjPtr> dsts = {make_obj(64, 7), make_obj(64, 7), make_obj(64, 7),
                                      make_obj(32, 7)};
    const Bitmap bits = load(*bridge, {k1, k2, k3, k4}, dsts, "load");
    require(bits.to_string() == "1010", "a load of [stored, absent, stored, absent] returned " +
                                            bits.to_string() + ", expected 1010 (per-key misses)");
    require(holds(*dsts[0], 64, 1) && holds(*dsts[2], 64, 3),
            "a load set the bits of stored keys but their bytes are wrong");
    require(holds(*dsts[1], 64, 7) && holds(*dsts[3], 32, 7),
            "a load wrote the destination of an absent key");
    const Bitmap found = lookup(*bridge, {k2, k1, k4, k3}, "lookup");
    require(found.to_string() == "0101", "a lookup of [absent, stored, absent, stored] returned " +
                                             found.to_string() + ", expected 0101");
    bridge->submit_unlock({k1, k3});
  });
}

std::string check_duplicate_keys_balance_locks(const BridgeRig& rig) {
  return run_check([&] {
    L2AdapterPtr bridge = build(rig, rig.make_connector(), rig.options);
    Closer close_bridge{bridge.get()};
    const std::string run = nonce();
    const ObjectKey k = make_key(run, "k"), absent = make_key(run, "absent");
    require(store(*bridge, {k}, {make_obj(64, 1)}, "a store").is_successful(),
            "a plain store failed");
    require(locked_keys(*bridge).has_value(), "report_status() has no \"locked_key_count\"");
    auto expect_locked = [&](std::uint64_t n, const std::string& after) {
      const std::uint64_t got = *locked_keys(*bridge);
      require(got == n, "after " + after + ", locked_key_count is " + std::to_string(got) +
                            ", expected " + std::to_string(n));
    };
    const Bitmap bits = lookup(*bridge, {k, k, absent}, "lookup");
    require(bits.to_string() == "110",
            "a lookup of [k, k, absent] returned " + bits.to_string() + ", expected 110");
    expect_locked(1, "a lookup of [k, k, absent]");
    bridge->submit_unlock({k});
    expect_locked(1, "one unlock of a key locked twice");
    bridge->submit_unlock({k});
    expect_locked(0, "two unlocks of a key locked twice");
    lookup(*bridge, {k, k}, "lookup");
    bridge->submit_unlock({k, k});
    expect_locked(0,
                  "a lookup of [k, k] then an unlock of [k, k] (a lock leaked on a key "
                  "repeated in one batch)");
    lookup(*bridge, {k}, "lookup");
    bridge->submit_unlock({k, k});
    expect_locked(0, "one lock then an unlock of [k, k]");
    lookup(*bridge, {k}, "lookup");
    expect_locked(1, "an extra unlock, then a new lookup of k");
    bridge->submit_unlock({k});
    expect_locked(0, "the last unlock");

    const ObjectKey d = make_key(run, "d");
    require(store(*bridge, {d, d}, {make_obj(64, 5), make_obj(64, 6)}, "a store of [d, d]")
                .is_successful(),
            "a store repeating a key failed");
    std::vector<MemoryObjPtr> dst = {make_obj(64, 9)};
    require(load(*bridge, {d}, dst, "load").all(), "a key stored twice in one batch is missing");
    require(holds(*dst[0], 64, 5), "a key repeated in one store does not hold its first copy");
  });
}

std::string check_distinct_keys_stay_distinct(const BridgeRig& rig) {
  return run_check([&] {
    L2AdapterPtr bridge = build(rig, rig.make_connector(), rig.options);
    Closer close_bridge{bridge.get()};
    const std::string run = nonce();
    // Keys that differ in one field each; naive encodings map some of them to one string.
    const std::vector<ObjectKey> keys = {
        make_key(run, "h", "org/model"),
        make_key(run, "h", "org-SEP-model"),
        make_key(run, "h", "org%2Fmodel"),
        make_key(run, "h", "org.model"),
        make_key(run, "h", "org model"),
        make_key(run, "h", "org\xc3\xa9model"),
        make_key(run, "h", "org/model", 0, 0, "s"),
        make_key(run, "h", "org/model", 0, 0, "s%41"),
        make_key(run, "h", "org/model", 0, 1),
        make_key(run, "h", "org/model", 1),
        make_key(run, "h", "org/model", -1),
        make_key(run, "h", "org/model", std::int64_t{1} << 32),
        make_key(run, std::string("h\0", 2), "org/model"),
        make_key(run, "H", "org/model"),
    };
    std::vector<MemoryObjPtr> objs;
    for (std::size_t i = 0; i < keys.size(); ++i)
      objs.push_back(make_obj(48, static_cast<std::uint8_t>(i + 1)));
    require(store(*bridge, keys, objs, "a store of near-identical keys").is_successful(),
            "a store of near-identical keys failed");
    auto check_all = [&](std::size_t skip, const std::string& when) {
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (i == skip) continue;
        std::vector<MemoryObjPtr> dst = {make_obj(48, 0)};
        require(load(*bridge, {keys[i]}, dst, "load").all(),
                when + ", key " + keys[i].to_string() + " is missing");
        require(holds(*dst[0], 48, static_cast<std::uint8_t>(i + 1)),
                when + ", key " + keys[i].to_string() +
                    " holds another key's bytes: two keys were encoded to one object");
      }
    };
    check_all(keys.size(), "after storing them all");
    bridge->delete_keys({keys[0]});
    require(lookup(*bridge, {keys[0]}, "lookup").none(), "a deleted key is still found");
    check_all(0, "after deleting " + keys[0].to_string());
  });
}

std::string check_deadline_fails_hung_tasks(const BridgeRig& rig) {
  return run_check([&] {
    auto faults = std::make_shared<ConnectorFaults>();
    faults->hold_completions = true;
    NativeConnectorAdapterOptions options = rig.options;
    options.task_deadline = 200ms;
    std::shared_ptr<L2AdapterInterface> bridge =
        build(rig, std::make_unique<FaultyConnector>(rig.make_connector(), faults), options);
    const std::string run = nonce();
    const ObjectKey a = make_key(run, "a");
    const L2StoreResult r =
        store(*bridge, {a}, {make_obj(64, 1)}, "a store on a connector that never completes");
    require(!r.is_successful(),
            "a store on a connector that never completes reported " + r.to_string());
    require(lookup(*bridge, {a}, "hung connector").none(),
            "a lookup on a connector that never completes found a key");
    std::vector<MemoryObjPtr> dst = {make_obj(64, 9)};
    require(load(*bridge, {a}, dst, "hung connector").none(),
            "a load on a connector that never completes loaded a key");
    // close() must return although batches are still out; a hang is reported, not waited out.
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> closed = done->get_future();
    std::thread([bridge, done] {
      close_quietly(*bridge);
      done->set_value();
    }).detach();
    require(closed.wait_for(scaled(10s)) == std::future_status::ready,
            "close() did not return within 10 s with batches still out");
  });
}

namespace {

// The breaker's fields in report_status(), LMCache's names; a missing one is a Problem.
struct BreakerStatus {
  bool disabled = false;
  std::uint64_t failures = 0;
  double retry_in = 0;
  std::uint64_t trips = 0;
};

BreakerStatus breaker_status(L2AdapterInterface& a) {
  const Json s = a.report_status();
  for (const char* field : {"connection_disabled", "connection_failures",
                            "breaker_retry_in_seconds", "breaker_trips"}) {
    require(s.is_object() && s.contains(field),
            std::string("report_status() of a bridge with a circuit breaker has no \"") + field +
                "\": " + s.dump().substr(0, 300));
  }
  return {s["connection_disabled"].get<bool>(), s["connection_failures"].get<std::uint64_t>(),
          s["breaker_retry_in_seconds"].get<double>(), s["breaker_trips"].get<std::uint64_t>()};
}

}  // namespace

std::string check_breaker_opens_probes_and_recovers(const BridgeRig& rig) {
  return run_check([&] {
    auto faults = std::make_shared<ConnectorFaults>();
    NativeConnectorAdapterOptions options = rig.options;
    options.breaker.threshold = 3;
    // Long enough that the four requests below fit in it on any machine; whether they did is
    // read back (breaker_retry_in_seconds) before anything is concluded from them.
    options.breaker.cooldown = scaled(500ms);
    options.breaker.max_cooldown = 2 * options.breaker.cooldown;
    L2AdapterPtr bridge =
        build(rig, std::make_unique<FaultyConnector>(rig.make_connector(), faults), options);
    Closer close_bridge{bridge.get()};
    const std::string run = nonce();
    auto key = [&](int i) { return make_key(run, "k" + std::to_string(i)); };

    // Connection refused on every submit: three failed tasks open the breaker (a failed store
    // also reports its cleanup delete's failure, so it may open sooner).
    faults->refuse_connections = true;
    for (int i = 0; i < 3; ++i) {
      const L2StoreResult r = store(*bridge, {key(i)}, {make_obj(64, 1)}, "a refused store");
      require(!r.is_successful(), "a store whose connection was refused reported " + r.to_string());
    }
    // Open: nothing reaches the connector, and every task still completes.
    const std::uint64_t submits = faults->submits.load();
    const L2StoreResult refused =
        store(*bridge, {key(10)}, {make_obj(64, 2)}, "a store while open");
    require(!refused.is_successful(),
            "a store while the breaker is open reported " + refused.to_string());
    require(lookup(*bridge, {key(10)}, "breaker open").none(),
            "a lookup while the breaker is open found a key");
    std::vector<MemoryObjPtr> dst = {make_obj(64, 9)};
    require(load(*bridge, {key(10)}, dst, "breaker open").none() && holds(*dst[0], 64, 9),
            "a load while the breaker is open loaded a key or wrote its destination");
    bridge->delete_keys({key(11)});
    const std::uint64_t sent = faults->submits.load() - submits;
    const BreakerStatus open = breaker_status(*bridge);
    require(open.disabled,
            "three connection failures in a row did not open the breaker "
            "(connection_disabled is false, connection_failures " +
                std::to_string(open.failures) + ")");
    // Still inside the cooldown: none of the four may have been the probe.
    require(sent == 0 || open.retry_in == 0,
            std::to_string(sent) +
                " connector submits while the breaker was open (a store, a lookup, a load and a "
                "delete_keys() must all be kept from a store that refuses connections)");
    require(open.trips == 1, "the breaker tripped " + std::to_string(open.trips) +
                                 " times after its first three failures");

    // A probe once the cooldown is over. Waiting for the retry time is bounded, not asserted on.
    auto wait_for_probe_time = [&](const std::string& when) {
      const auto deadline = std::chrono::steady_clock::now() + scaled(10s);
      while (breaker_status(*bridge).retry_in > 0) {
        require(std::chrono::steady_clock::now() < deadline,
                "the breaker still refuses " + std::to_string(scaled(10s).count()) + " ms after " +
                    when + " with a " + std::to_string(options.breaker.cooldown.count()) +
                    " ms cooldown (breaker_retry_in_seconds never reached 0)");
        std::this_thread::sleep_for(10ms);
      }
    };
    wait_for_probe_time("opening");
    const L2StoreResult failed_probe =
        store(*bridge, {key(20)}, {make_obj(64, 3)}, "a probe to a store still down");
    require(!failed_probe.is_successful(),
            "a probe whose connection was refused reported " + failed_probe.to_string());
    require(faults->submits.load() > submits,
            "the first store after the cooldown was not sent "
            "to the connector (no probe)");
    const BreakerStatus reopened = breaker_status(*bridge);
    require(reopened.disabled && reopened.trips == 2,
            "a failed probe did not open the breaker again (connection_disabled " +
                std::string(reopened.disabled ? "true" : "false") + ", trips " +
                std::to_string(reopened.trips) + ")");

    faults->refuse_connections = false;
    wait_for_probe_time("a failed probe");
    const ObjectKey p = key(30);
    const L2StoreResult probe = store(*bridge, {p}, {make_obj(96, 4)}, "a probe to a healed store");
    require(probe.is_successful(),
            "the probe to a store that answers again failed: " + probe.to_string());
    const BreakerStatus closed = breaker_status(*bridge);
    require(!closed.disabled && closed.failures == 0,
            "a successful probe did not close the breaker (connection_disabled " +
                std::string(closed.disabled ? "true" : "false") + ", connection_failures " +
                std::to_string(closed.failures) + ")");
    require(lookup(*bridge, {p}, "recovered").all(), "the probe's key is not found after it");
    std::vector<MemoryObjPtr> back = {make_obj(96, 9)};
    require(load(*bridge, {p}, back, "recovered").all() && holds(*back[0], 96, 4),
            "the probe's key does not load its bytes after recovery");
  });
}

const std::vector<BridgeCheck>& all_bridge_checks() {
  static const std::vector<BridgeCheck> checks = {
      {"FailedSetLeavesNothingVisible", &check_failed_set_leaves_nothing_visible},
      {"PerKeyMisses", &check_per_key_misses},
      {"DuplicateKeysBalanceLocks", &check_duplicate_keys_balance_locks},
      {"DistinctKeysStayDistinct", &check_distinct_keys_stay_distinct},
      {"DeadlineFailsHungTasks", &check_deadline_fails_hung_tasks},
      {"BreakerOpensProbesAndRecovers", &check_breaker_opens_probes_and_recovers},
  };
  return checks;
}

}  // namespace lmcache::storage_testing
