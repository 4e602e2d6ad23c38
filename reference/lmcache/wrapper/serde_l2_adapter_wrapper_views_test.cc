// The wrapper over an inner adapter that lends load views (docs/wrapper.md, load path): loads
// deserialize the inner's stored bytes in place, with no temps, and a hit whose view is missing
// fails the load. Waits use generous timeouts; no test asserts on elapsed time.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/forwarding_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"
#include "lmcache/wrapper/testing/wrapper_test_support.h"

namespace lmcache {
namespace {

using wrapper_internal::wait_load;
using wrapper_internal::wait_store;

constexpr std::int64_t kElems = 4096;

// Forwards load views, dropping the view of the first hit: a broken lender.
class DropsAView final : public ForwardingL2Adapter {
 public:
  using ForwardingL2Adapter::ForwardingL2Adapter;
  bool supports_load_views() const override { return inner().supports_load_views(); }
  TaskId submit_load_view_task(const std::vector<ObjectKey>& keys) override {
    return inner().submit_load_view_task(keys);
  }
  std::optional<L2LoadViews> query_load_view_result(TaskId id) override {
    std::optional<L2LoadViews> r = inner().query_load_view_result(id);
    if (r && !r->loaded.none()) r->views[r->loaded.set_indices().front()] = nullptr;
    return r;
  }
};

std::unique_ptr<MockL2Adapter> viewing_mock() {
  MockL2AdapterOptions options = MockL2AdapterOptions::from_gb(1.0, 100.0);
  options.lend_load_views = true;
  return std::make_unique<MockL2Adapter>(options);
}

std::unique_ptr<SerdeL2AdapterWrapper> wrap(L2AdapterPtr inner, std::shared_ptr<L1Manager> l1) {
  auto fp8 = std::make_unique<AsyncSerdeProcessor>(std::make_shared<Fp8Serializer>(),
                                                   std::make_shared<Fp8Deserializer>(), 2);
  return std::make_unique<SerdeL2AdapterWrapper>(std::move(inner), std::move(fp8), std::move(l1));
}

ObjectKey key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "views", 0, 0, ""); }

// bfloat16 values fp8 e4m3fn holds exactly, so a round trip gives them back bit for bit.
MemoryObjPtr chunk(std::uint32_t seed) {
  static const std::uint16_t kValues[] = {0x3F80, 0x3F00, 0xC000, 0x0000, 0x4100, 0xBE80};
  MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16));
  auto* p = reinterpret_cast<std::uint16_t*>(o->data());
  for (std::int64_t i = 0; i < kElems; ++i) p[i] = kValues[(i + seed) % 6];
  return o;
}

MemoryObjPtr empty_chunk() {
  MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({kElems}, DType::kBFloat16));
  std::memset(o->data(), 0x7F, o->size());
  return o;
}

TEST(WrapperViews, LoadsDeserializeTheInnersViewsWithoutTemps) {
  auto l1 = std::make_shared<L1Manager>(64u << 20);
  auto w = wrap(viewing_mock(), l1);
  const std::vector<ObjectKey> ks = {key(1), key(2), key(3)};
  const std::vector<MemoryObjPtr> src = {chunk(0), chunk(1), chunk(2)};
  auto stored = wait_store(*w, w->submit_store_task(ks, src));
  ASSERT_TRUE(stored && stored->is_successful());
  const std::vector<MemoryObjPtr> dst = {empty_chunk(), empty_chunk(), empty_chunk(),
                                         empty_chunk()};
  // Reserving a temp would show in L1; none may be reserved while the load runs.
  const std::size_t before = l1->get_memory_usage().used_bytes;
  auto loaded = wait_load(*w, w->submit_load_task({key(1), key(9), key(3), key(2)}, dst));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->to_string(), "1011");
  EXPECT_EQ(std::memcmp(dst[0]->data(), src[0]->data(), src[0]->size()), 0);
  EXPECT_EQ(std::memcmp(dst[2]->data(), src[2]->data(), src[2]->size()), 0);
  EXPECT_EQ(std::memcmp(dst[3]->data(), src[1]->data(), src[1]->size()), 0);
  EXPECT_EQ(std::memcmp(dst[1]->data(), empty_chunk()->data(), dst[1]->size()), 0)
      << "a miss leaves its destination alone";
  EXPECT_EQ(l1->get_memory_usage().used_bytes, before);
  EXPECT_EQ(w->metrics().temp_bytes(), 0u);
  w->close();
}

TEST(WrapperViews, StoreAndLoadNeedNoL1RoomWhenTheInnerLendsBothWays) {
  // The mock lends store buffers and views: neither direction reserves a temp, so an L1 with
  // no room for one still round-trips.
  auto w = wrap(viewing_mock(), std::make_shared<L1Manager>(16));
  MemoryObjPtr src = chunk(5);
  auto stored = wait_store(*w, w->submit_store_task({key(7)}, {src}));
  ASSERT_TRUE(stored && stored->is_successful());
  MemoryObjPtr dst = empty_chunk();
  auto loaded = wait_load(*w, w->submit_load_task({key(7)}, {dst}));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->to_string(), "1");
  EXPECT_EQ(std::memcmp(dst->data(), src->data(), src->size()), 0);
  w->close();
}

TEST(WrapperViews, AHitWithoutItsViewFailsTheWholeLoad) {
  auto w =
      wrap(std::make_unique<DropsAView>(viewing_mock()), std::make_shared<L1Manager>(64u << 20));
  auto stored = wait_store(*w, w->submit_store_task({key(1), key(2)}, {chunk(0), chunk(1)}));
  ASSERT_TRUE(stored && stored->is_successful());
  const std::vector<MemoryObjPtr> dst = {empty_chunk(), empty_chunk()};
  auto loaded = wait_load(*w, w->submit_load_task({key(1), key(2)}, dst));
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->to_string(), "00") << "all or nothing";
  w->close();
}

}  // namespace
}  // namespace lmcache
