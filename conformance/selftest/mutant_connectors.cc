// Native connector mutants: the reference bridge (NativeConnectorL2Adapter) over the in-memory
// connector, whose store a second, unchanged bridge shares as the reference
// (AdapterUnderTest::reference). A connector that keeps a storage format of its own reads its
// own writes and passes every single-adapter property; only the reference finds it out.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/conformance/plain_objects.h"
#include "lmcache/connector/erased_connector.h"
#include "lmcache/connector/native_connector_adapter.h"
#include "lmcache/testing/memory_connector.h"
#include "mutants.h"
#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

namespace {

using storage_testing::MemoryConnector;
using storage_testing::MemoryStore;

// A connector that stores every key under a prefix of its own ("vendor:<key>").
class PrefixingConnector final : public connector::ForwardingConnector {
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

L2AdapterPtr bridge(std::shared_ptr<MemoryStore> store, bool prefixing) {
  connector::ErasedConnectorPtr c =
      connector::erase_connector(std::make_unique<MemoryConnector>(std::move(store)));
  if (prefixing) c = std::make_unique<PrefixingConnector>(std::move(c));
  return connector::make_native_connector_adapter(std::move(c));
}

AdapterUnderTest bridge_descriptor(bool prefixing) {
  AdapterUnderTest a;
  a.name = "bridge_over_memory";
  a.make = [prefixing] { return bridge(std::make_shared<MemoryStore>(), prefixing); };
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kUInt8, DType::kFloat32};
  a.reference.type = "bridge";
  a.reference.make_pair = [prefixing] {
    auto store = std::make_shared<MemoryStore>();
    return std::pair<L2AdapterPtr, L2AdapterPtr>{bridge(store, prefixing), bridge(store, false)};
  };
  return a;
}

Impl connector_impl(bool prefixing) {
  Impl i;
  i.adapter = bridge_descriptor(prefixing);
  return i;
}

}  // namespace

AdapterUnderTest bridge_over_memory_adapter() { return bridge_descriptor(false); }

void add_connector_mutants(std::vector<Mutant>& out) {
  out.push_back(mutant(
      "connector_prefixes_keys", ImplementationKind::kAdapter, BugClass::kData, "MatchesReference",
      "the connector stores every key under a prefix of its own: it reads its own writes, the "
      "reference bridge over the same store finds nothing",
      connector_impl(true), connector_impl(false), [](const Impl& impl) -> std::string {
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
}

}  // namespace lmcache::conformance::selftest
