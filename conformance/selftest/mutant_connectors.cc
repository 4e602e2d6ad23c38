// Native connector mutants: the reference bridge (NativeConnectorL2Adapter) over the in-memory
// connector, whose store a second, unchanged bridge shares as the reference
// (AdapterUnderTest::reference). A connector that keeps a storage format of its own reads its
// own writes and passes every single-adapter property; only the reference finds it out. A GET
// of another length than the stored value's reaches a connector only from a bridge that did not
// store the key (the bridge checks lengths it knows), so those bugs too need the reference.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/bridge/erased_connector.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/conformance/plain_objects.h"
#include "lmcache/testing/memory_connector.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using storage_testing::MemoryConnector;
using storage_testing::MemoryStore;

// A connector that stores every key under a prefix of its own ("vendor:<key>").
class PrefixingConnector final : public bridge::ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    return ForwardingConnector::submit_batch_get(prefixed(keys), bufs, lens, chunk);
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    return ForwardingConnector::submit_batch_set(prefixed(keys), bufs, lens, chunk);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override {
    return ForwardingConnector::submit_batch_exists(prefixed(keys));
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    return ForwardingConnector::submit_batch_delete(prefixed(keys));
  }

 private:
  static std::vector<std::string> prefixed(const std::vector<std::string>& keys) {
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back("vendor:" + k);
    return out;
  }
};

// A GET of another length than the stored value's, done wrong (the right answer is a miss that
// leaves the buffer and the connection as they were).
enum class LengthBug {
  kReadsPrefix,  // a value longer than asked: its first bytes are copied and reported a hit
  kDesyncs,      // the value stays "on the connection": the next GET's first key gets it
};

// Over a MemoryConnector, which runs every batch inside its submit: the bug is applied to the
// buffers after the inner GET, and the completion's flags are rewritten when drained.
class LengthBugConnector final : public bridge::ForwardingConnector {
 public:
  LengthBugConnector(bridge::ErasedConnectorPtr inner, std::shared_ptr<MemoryStore> store,
                     LengthBug bug)
      : ForwardingConnector(std::move(inner)), store_(std::move(store)), bug_(bug) {}

  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    std::lock_guard lock(mu_);
    const std::uint64_t id = ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
    std::vector<std::size_t> hits;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (bug_ == LengthBug::kDesyncs && i == 0 && leftover_) {
        std::memcpy(bufs[0], leftover_->data(), std::min(lens[0], leftover_->size()));
        hits.push_back(0);
        leftover_.reset();
        continue;
      }
      const std::optional<std::vector<std::byte>> value = store_->get(keys[i]);
      if (!value || value->size() == lens[i]) continue;
      if (bug_ == LengthBug::kDesyncs) {
        leftover_ = value;
      } else if (value->size() > lens[i]) {
        std::memcpy(bufs[i], value->data(), lens[i]);
        hits.push_back(i);
      }
    }
    if (!hits.empty()) hits_[id] = std::move(hits);
    return id;
  }

  std::vector<bridge::Completion> drain_completions() override {
    std::vector<bridge::Completion> out = ForwardingConnector::drain_completions();
    std::lock_guard lock(mu_);
    for (bridge::Completion& c : out) {
      auto it = hits_.find(c.future_id);
      if (it == hits_.end()) continue;
      for (std::size_t i : it->second) {
        if (i < c.result_bytes.size()) c.result_bytes[i] = 1;
      }
      hits_.erase(it);
    }
    return out;
  }

 private:
  std::shared_ptr<MemoryStore> store_;
  LengthBug bug_;
  std::mutex mu_;
  std::optional<std::vector<std::byte>> leftover_;
  std::map<std::uint64_t, std::vector<std::size_t>> hits_;
};

// A connector whose close() returns before its reader is done: a GET's buffers are written once
// more, a few milliseconds after close(), by a thread close() did not wait for (joined only when
// the connector is destroyed, so the buffers it writes are still the caller's).
class LateWriteConnector final : public bridge::ForwardingConnector {
 public:
  using ForwardingConnector::ForwardingConnector;
  ~LateWriteConnector() override {
    if (late_.joinable()) late_.join();
  }

  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    {
      std::lock_guard lock(mu_);
      for (std::size_t i = 0; i < bufs.size(); ++i) reads_.emplace_back(bufs[i], lens[i]);
    }
    return ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
  }

  void close() override {
    ForwardingConnector::close();
    std::lock_guard lock(mu_);
    if (late_.joinable()) return;
    late_ = std::thread([reads = reads_] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      for (const auto& [buf, len] : reads) std::memset(buf, 0xEE, len);
    });
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<void*, std::size_t>> reads_;
  std::thread late_;
};

// A "connection" shared by every connector of a process, set up on a connector's first submit
// with a hand-rolled check-then-act and torn down when the last connector closes. Two first
// submits at once each open one; the later replaces the earlier and closes it, under the
// connector that already took it, whose every later submit then fails. The window between the
// check and the act is widened so that first uses at once always overlap: a first use waits up
// to 1 s for another to arrive, and (like a handshake that takes a while) returns only once
// every first use that arrived has acted, so the replaced connection is closed before its
// connector submits through it.
class LazySharedConnection {
 public:
  struct Connection {
    std::atomic<bool> open{true};
  };

  static LazySharedConnection& process() {
    static LazySharedConnection c;
    return c;
  }

  std::shared_ptr<Connection> first_use() {
    {
      std::lock_guard lock(mu_);
      if (slot_) return slot_;  // the check
    }
    ++arriving_;
    // Waits up to 1 s for a second first use: on a loaded machine the threads of one case may
    // start tens of ms apart, and a shorter window let the race pass unseen (one seed in a
    // loaded selftest run).
    for (int i = 0; i < 1000 && arriving_.load() < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    auto mine = std::make_shared<Connection>();
    std::shared_ptr<Connection> replaced;
    {
      std::lock_guard lock(mu_);
      replaced = std::exchange(slot_, mine);  // the act, without checking again
    }
    if (replaced) replaced->open = false;
    ++acted_;
    // Without this wait the loser of the race could finish all its submits on a fast in-memory
    // store before the winner woke to replace its connection, and the race passed unseen (the
    // selftest missed it under a CPU hog, 1 run in 4).
    for (int i = 0; i < 1000 && acted_.load() < arriving_.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return mine;
  }
  void attach() { ++live_; }
  void detach() {
    if (--live_ == 0) {
      std::lock_guard lock(mu_);
      slot_.reset();
      arriving_ = 0;
      acted_ = 0;
    }
  }

 private:
  std::mutex mu_;  // guards slot_ (memory safety only: the check and the act are apart)
  std::shared_ptr<Connection> slot_;
  std::atomic<int> live_{0};
  std::atomic<int> arriving_{0};
  std::atomic<int> acted_{0};
};

class RacyFirstUseConnector final : public bridge::ForwardingConnector {
 public:
  explicit RacyFirstUseConnector(bridge::ErasedConnectorPtr inner)
      : ForwardingConnector(std::move(inner)) {
    LazySharedConnection::process().attach();
  }
  ~RacyFirstUseConnector() override { detach_once(); }

  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    connected();
    return ForwardingConnector::submit_batch_get(keys, bufs, lens, chunk);
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) override {
    connected();
    return ForwardingConnector::submit_batch_set(keys, bufs, lens, chunk);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override {
    connected();
    return ForwardingConnector::submit_batch_exists(keys);
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override {
    connected();
    return ForwardingConnector::submit_batch_delete(keys);
  }
  void close() override {
    ForwardingConnector::close();
    detach_once();
  }

 private:
  void connected() {
    std::lock_guard lock(mu_);
    if (!connection_) connection_ = LazySharedConnection::process().first_use();
    if (!connection_->open) throw std::runtime_error("write on a closed connection");
  }
  void detach_once() {
    if (!detached_.exchange(true)) LazySharedConnection::process().detach();
  }

  std::mutex mu_;  // guards connection_ (the bridge may submit from several threads)
  std::shared_ptr<LazySharedConnection::Connection> connection_;
  std::atomic<bool> detached_{false};
};

enum class ConnectorBug {
  kNone,
  kPrefixesKeys,
  kReadsPrefix,
  kDesyncs,
  kWritesAfterClose,
  kRacesFirstUse
};

L2AdapterPtr bridge(std::shared_ptr<MemoryStore> store, ConnectorBug bug) {
  bridge::ErasedConnectorPtr c = bridge::erase_connector(std::make_unique<MemoryConnector>(store));
  switch (bug) {
    case ConnectorBug::kNone:
      break;
    case ConnectorBug::kPrefixesKeys:
      c = std::make_unique<PrefixingConnector>(std::move(c));
      break;
    case ConnectorBug::kReadsPrefix:
      c = std::make_unique<LengthBugConnector>(std::move(c), store, LengthBug::kReadsPrefix);
      break;
    case ConnectorBug::kDesyncs:
      c = std::make_unique<LengthBugConnector>(std::move(c), store, LengthBug::kDesyncs);
      break;
    case ConnectorBug::kWritesAfterClose:
      c = std::make_unique<LateWriteConnector>(std::move(c));
      break;
    case ConnectorBug::kRacesFirstUse:
      c = std::make_unique<RacyFirstUseConnector>(std::move(c));
      break;
  }
  return bridge::make_native_connector_adapter(std::move(c));
}

AdapterUnderTest bridge_descriptor(ConnectorBug bug) {
  AdapterUnderTest a;
  a.name = "bridge_over_memory";
  a.make = [bug] { return bridge(std::make_shared<MemoryStore>(), bug); };
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kUInt8, DType::kFloat32};
  a.reference.type = "bridge";
  a.reference.make_pair = [bug] {
    auto store = std::make_shared<MemoryStore>();
    return std::pair<L2AdapterPtr, L2AdapterPtr>{bridge(store, bug),
                                                 bridge(store, ConnectorBug::kNone)};
  };
  return a;
}

Impl connector_impl(ConnectorBug bug) {
  Impl i;
  i.adapter = bridge_descriptor(bug);
  return i;
}

template <class Query>
auto wait_for(Query query) -> decltype(query()) {
  decltype(query()) r;
  for (int i = 0; i < 5000 && !(r = query()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return r;
}

MemoryObjPtr pattern(std::size_t n, unsigned char tag) {
  MemoryObjPtr o = make_object(byte_layout(n));
  std::memset(o->data(), tag, n);
  return o;
}

// The reference stores two 8-byte values; the adapter loads the first into `first_length`
// bytes, then the second at its length. "" when the first misses and the second loads its own
// bytes.
std::string other_length_witness(const Impl& impl, std::size_t first_length) {
  auto [mine, theirs] = impl.adapter.reference.make_pair();
  const ObjectKey k1("witness-1", "m", 0), k2("witness-2", "m", 0);
  const TaskId id = theirs->submit_store_task({k1, k2}, {pattern(8, 0x11), pattern(8, 0x22)});
  wait_for([&]() -> bool { return theirs->pop_completed_store_tasks().count(id) > 0; });
  MemoryObjPtr first = pattern(first_length, 0);
  const TaskId l1 = mine->submit_load_task({k1}, {first});
  const std::optional<Bitmap> b1 = wait_for([&] { return mine->query_load_result(l1); });
  MemoryObjPtr second = pattern(8, 0);
  const TaskId l2 = mine->submit_load_task({k2}, {second});
  const std::optional<Bitmap> b2 = wait_for([&] { return mine->query_load_result(l2); });
  mine->close();
  theirs->close();
  if (b1 && b1->test(0)) return "a value of 8 bytes loaded into " + std::to_string(first_length);
  if (!b2 || !b2->test(0) || std::memcmp(second->data(), pattern(8, 0x22)->data(), 8) != 0) {
    return "the next key did not load its own bytes";
  }
  return "";
}

}  // namespace

AdapterUnderTest bridge_over_memory_adapter() { return bridge_descriptor(ConnectorBug::kNone); }

void add_connector_mutants(std::vector<Mutant>& out) {
  out.push_back(mutant(
      "connector_prefixes_keys", ImplementationKind::kAdapter, BugClass::kData, "MatchesReference",
      "the connector stores every key under a prefix of its own: it reads its own writes, the "
      "reference bridge over the same store finds nothing",
      connector_impl(ConnectorBug::kPrefixesKeys), connector_impl(ConnectorBug::kNone),
      [](const Impl& impl) -> std::string {
        auto [mine, theirs] = impl.adapter.reference.make_pair();
        const ObjectKey key("witness", "m", 0);
        MemoryObjPtr obj = make_object(byte_layout(8));
        const TaskId id = mine->submit_store_task({key}, {obj});
        for (int i = 0; i < 5000 && !mine->pop_completed_store_tasks().count(id); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const TaskId look = theirs->submit_lookup_and_lock_task({key});
        std::optional<Bitmap> bits;
        for (int i = 0; i < 5000 && !(bits = theirs->query_lookup_and_lock_result(look)); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        mine->close();
        theirs->close();
        return bits && bits->test(0) ? "" : "the reference did not find what the adapter stored";
      }));
  out.push_back(mutant(
      "connector_reads_prefix", ImplementationKind::kAdapter, BugClass::kSizes,
      "OtherLengthLoadsContained",
      "a GET shorter than the stored value copies the value's first bytes and reports a hit: a "
      "cut-off object loads as whole",
      connector_impl(ConnectorBug::kReadsPrefix), connector_impl(ConnectorBug::kNone),
      [](const Impl& impl) { return other_length_witness(impl, 4); }));
  out.push_back(mutant(
      "connector_desyncs_on_other_length", ImplementationKind::kAdapter, BugClass::kState,
      "OtherLengthLoadsContained",
      "a GET of another length than the stored value's misses but leaves the value unread on the "
      "connection, so the next GET answers its first key with it (LMCache's RedisConnector, "
      "issue 27)",
      connector_impl(ConnectorBug::kDesyncs), connector_impl(ConnectorBug::kNone),
      [](const Impl& impl) { return other_length_witness(impl, 12); }));
  out.push_back(mutant(
      "connector_writes_after_close", ImplementationKind::kAdapter, BugClass::kFailureOrder,
      "CloseWithTasksInFlight",
      "close() returns before the connector's reader is done: a GET's buffers are written again "
      "after close() returned, into memory the caller may have freed",
      connector_impl(ConnectorBug::kWritesAfterClose), connector_impl(ConnectorBug::kNone),
      [](const Impl& impl) -> std::string {
        const ObjectKey key("witness", "m", 0);
        MemoryObjPtr dst = pattern(8, 0);  // outlives the adapter
        L2AdapterPtr a = impl.adapter.make();
        const TaskId id = a->submit_store_task({key}, {pattern(8, 0x11)});
        wait_for([&]() -> bool { return a->pop_completed_store_tasks().count(id) > 0; });
        const TaskId l = a->submit_load_task({key}, {dst});
        wait_for([&] { return a->query_load_result(l); });
        a->close();
        const auto* bytes = reinterpret_cast<const unsigned char*>(dst->data());
        const std::vector<unsigned char> at_close(bytes, bytes + 8);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const bool changed = std::memcmp(at_close.data(), dst->data(), 8) != 0;
        a.reset();
        return changed ? "the load's destination was written after close() returned" : "";
      }));
  out.push_back(mutant(
      "connector_races_first_use", ImplementationKind::kAdapter, BugClass::kConcurrency,
      "ConcurrentFirstUse",
      "connectors set up one process-wide connection lazily on their first submit, with a "
      "check-then-act: two first uses at once each open one, and the later closes the earlier "
      "under the connector that took it (every later submit of that connector fails)",
      connector_impl(ConnectorBug::kRacesFirstUse), connector_impl(ConnectorBug::kNone),
      [](const Impl& impl) -> std::string {
        // Two fresh adapters stored through at once; then each stores again alone.
        L2AdapterPtr a = impl.adapter.make(), b = impl.adapter.make();
        auto store = [](L2AdapterInterface& x, const char* key) {
          const TaskId id = x.submit_store_task({ObjectKey(key, "m", 0)}, {pattern(8, 0x11)});
          const std::optional<L2StoreResult> r = wait_for([&]() -> std::optional<L2StoreResult> {
            auto got = x.pop_completed_store_tasks();
            auto it = got.find(id);
            if (it == got.end()) return std::nullopt;
            return it->second;
          });
          return r && r->is_successful();
        };
        std::thread other([&] { store(*b, "witness-b1"); });
        store(*a, "witness-a1");
        other.join();
        const bool both = store(*a, "witness-a2") && store(*b, "witness-b2");
        a->close();
        b->close();
        return both ? "" : "a later store failed after two first uses at once";
      }));
}

}  // namespace lmcache::conformance::selftest
