#include "mutant_wrapper_support.h"

#include <cstring>
#include <thread>

#include <map>

#include "lmcache/core/close_quietly.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::conformance::selftest {

namespace {

using namespace std::chrono_literals;

// Forwards to a shared mock (the witness keeps inspecting it); optionally answers loads with
// one bit too many; when lending, passes on the mock's lent store buffers and load views.
class SharedInner final : public L2AdapterInterface {
 public:
  SharedInner(std::shared_ptr<MockL2Adapter> mock, bool long_bitmaps, bool lends)
      : mock_(std::move(mock)), long_bitmaps_(long_bitmaps), lends_(lends) {}
  std::vector<MemoryObjPtr> lend_store_buffers(const std::vector<ObjectKey>& keys,
                                               const MemoryLayoutDesc& layout) override {
    return lends_ ? mock_->lend_store_buffers(keys, layout) : std::vector<MemoryObjPtr>{};
  }
  std::uint64_t lent_bytes_outstanding() const override { return mock_->lent_bytes_outstanding(); }
  int get_store_event_fd() const override { return mock_->get_store_event_fd(); }
  int get_lookup_and_lock_event_fd() const override {
    return mock_->get_lookup_and_lock_event_fd();
  }
  int get_load_event_fd() const override { return mock_->get_load_event_fd(); }
  TaskId submit_store_task(const std::vector<ObjectKey>& keys,
                           const std::vector<MemoryObjPtr>& objects) override {
    return mock_->submit_store_task(keys, objects);
  }
  std::map<TaskId, L2StoreResult> pop_completed_store_tasks() override {
    return mock_->pop_completed_store_tasks();
  }
  TaskId submit_lookup_and_lock_task(const std::vector<ObjectKey>& keys) override {
    return mock_->submit_lookup_and_lock_task(keys);
  }
  std::optional<Bitmap> query_lookup_and_lock_result(TaskId id) override {
    return mock_->query_lookup_and_lock_result(id);
  }
  void submit_unlock(const std::vector<ObjectKey>& keys) override { mock_->submit_unlock(keys); }
  TaskId submit_load_task(const std::vector<ObjectKey>& keys,
                          const std::vector<MemoryObjPtr>& objects) override {
    return mock_->submit_load_task(keys, objects);
  }
  bool supports_load_views() const override { return lends_ && mock_->supports_load_views(); }
  TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) override {
    if (!lends_) return L2AdapterInterface::submit_load_view_task(keys);  // throws
    return mock_->submit_load_view_task(keys);
  }
  std::optional<L2LoadViews> query_load_view_result(TaskId id) override {
    return mock_->query_load_view_result(id);
  }
  std::optional<Bitmap> query_load_result(TaskId id) override {
    std::optional<Bitmap> bits = mock_->query_load_result(id);
    if (!bits || !long_bitmaps_) return bits;
    Bitmap longer(bits->size() + 1);
    for (std::size_t i = 0; i < bits->size(); ++i) {
      if (bits->test(i)) longer.set(i);
    }
    longer.set(bits->size());
    return longer;
  }
  void delete_keys(const std::vector<ObjectKey>& keys) override { mock_->delete_keys(keys); }
  AdapterUsage get_usage() const override { return mock_->get_usage(); }
  bool supports_global_eviction() const override { return mock_->supports_global_eviction(); }
  void register_listener(std::shared_ptr<L2AdapterListener> l) override {
    mock_->register_listener(std::move(l));
  }
  Json report_status() const override { return mock_->report_status(); }
  void close() override { mock_->close(); }

 private:
  std::shared_ptr<MockL2Adapter> mock_;
  bool long_bitmaps_;
  bool lends_;
};

template <class Done>
auto poll(Done done) -> decltype(done()) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto r = done()) return r;
    std::this_thread::sleep_for(200us);
  }
  return done();
}

}  // namespace

WitnessStack::WitnessStack(const WrapperUnderTest& wrapper, bool long_bitmaps, bool lends) {
  mock = std::make_shared<MockL2Adapter>(MockL2AdapterOptions{.max_capacity_bytes = 1ull << 30,
                                                              .bandwidth_bytes_per_sec = 1ull << 40,
                                                              .lend_load_views = lends});
  l1 = std::make_shared<L1Manager>(std::size_t{16} << 20);
  w = wrapper.make(std::make_unique<SharedInner>(mock, long_bitmaps, lends),
                   std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                         std::make_shared<Fp8Deserializer>()),
                   l1);
}

WitnessStack::~WitnessStack() {
  if (w) close_quietly(*w);
}

void WitnessStack::fill_l1() {
  L1Usage u = l1->get_memory_usage();
  ObjectKey key("witness-ballast", "witness", 0);
  l1->reserve_write(
      {key}, {false},
      MemoryLayoutDesc::single({static_cast<std::int64_t>(u.capacity_bytes - u.used_bytes)},
                               DType::kUInt8));
}

std::function<std::string(const Impl&)> with_wrapper(std::function<std::string(WitnessStack&)> fn,
                                                     bool lends) {
  return [fn, lends](const Impl& i) {
    WitnessStack s(i.wrapper, /*long_bitmaps=*/false, lends);
    return fn(s);
  };
}

std::vector<ObjectKey> witness_keys(std::size_t n, std::uint32_t seed) {
  std::vector<ObjectKey> keys;
  for (std::size_t i = 0; i < n; ++i) {
    keys.emplace_back(int_hash_to_bytes(seed) + int_hash_to_bytes(static_cast<std::uint32_t>(i)),
                      "witness-model", 0);
  }
  return keys;
}

std::vector<MemoryObjPtr> witness_objects(std::size_t n, int fill) {
  std::vector<MemoryObjPtr> objs;
  for (std::size_t i = 0; i < n; ++i) {
    MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({4, 64}, DType::kFloat32));
    for (std::int64_t e = 0; e < kWitnessElements; ++e) {
      const float v = 0.25f * static_cast<float>((fill + e + static_cast<std::int64_t>(i)) % 9);
      std::memcpy(o->data() + 4 * e, &v, 4);
    }
    objs.push_back(o);
  }
  return objs;
}

std::optional<L2StoreResult> wait_store(L2AdapterInterface& a, TaskId id) {
  std::map<TaskId, L2StoreResult> seen;
  return poll([&]() -> std::optional<L2StoreResult> {
    for (auto& kv : a.pop_completed_store_tasks()) seen.insert(kv);
    if (seen.count(id)) return seen.at(id);
    return std::nullopt;
  });
}

std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id) {
  return poll([&] { return a.query_load_result(id); });
}

std::optional<Bitmap> wait_lookup(L2AdapterInterface& a, TaskId id) {
  return poll([&] { return a.query_lookup_and_lock_result(id); });
}

}  // namespace lmcache::conformance::selftest
