// MockL2Adapter's load views (L2AdapterInterface::submit_load_view_task()): what a view holds,
// that it never changes afterwards, that each query answers its own kind of load, and that the
// option is off by default. Waits use generous timeouts; no test asserts on elapsed time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/l2/testing/adapter_waits.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kWait = 5000ms;  // generous: never a speed assertion
constexpr std::chrono::milliseconds kPoll = 50ms;

std::unique_ptr<MockL2Adapter> make_adapter(bool views = true) {
  return std::make_unique<MockL2Adapter>(MockL2AdapterOptions{.max_capacity_bytes = 1 << 20,
                                                              .bandwidth_bytes_per_sec = 1ull << 50,
                                                              .lend_load_views = views});
}

ObjectKey key(std::uint32_t i) { return ObjectKey(int_hash_to_bytes(i), "view_model", 0, 0, ""); }

MemoryObjPtr filled(std::int64_t n, std::uint8_t value) {
  MemoryObjPtr o = MemoryObj::allocate(MemoryLayoutDesc::single({n}, DType::kUInt8));
  std::memset(o->data(), value, static_cast<std::size_t>(n));
  return o;
}

void store(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
           const std::vector<MemoryObjPtr>& objects) {
  const TaskId id = a.submit_store_task(keys, objects);
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    for (auto& [done, r] : a.pop_completed_store_tasks()) {
      if (done == id) {
        ASSERT_TRUE(r.is_successful());
        return;
      }
    }
    if (wait_readable(a.get_store_event_fd(), kPoll)) consume_fd(a.get_store_event_fd());
  }
  FAIL() << "store " << id << " never completed";
}

std::optional<L2LoadViews> view_load(L2AdapterInterface& a, const std::vector<ObjectKey>& keys) {
  const TaskId id = a.submit_load_view_task(keys);
  return l2_testing::wait_for_result(a.get_load_event_fd(),
                                     [&] { return a.query_load_view_result(id); });
}

bool all_bytes(const MemoryObj& o, std::uint8_t value) {
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (o.data()[i] != std::byte{value}) return false;
  }
  return true;
}

TEST(MockViews, AViewHoldsExactlyTheStoredBytesAndHitsAloneHaveOne) {
  auto a = make_adapter();
  ASSERT_TRUE(a->supports_load_views());
  MemoryObjPtr narrowed = filled(64, 0x22);
  narrowed->set_used_size(40);  // the store keeps size() bytes
  store(*a, {key(1), key(2)}, {filled(100, 0x11), narrowed});
  std::optional<L2LoadViews> r = view_load(*a, {key(1), key(9), key(2)});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->loaded.to_string(), "101");
  ASSERT_EQ(r->views.size(), 3u);
  ASSERT_NE(r->views[0], nullptr);
  EXPECT_EQ(r->views[1], nullptr) << "a miss has no view";
  ASSERT_NE(r->views[2], nullptr);
  EXPECT_EQ(r->views[0]->size(), 100u);
  EXPECT_EQ(r->views[2]->size(), 40u);
  EXPECT_TRUE(all_bytes(*r->views[0], 0x11));
  EXPECT_TRUE(all_bytes(*r->views[2], 0x22));
  a->close();
}

TEST(MockViews, AViewNeverChangesAfterDeleteRestoreOrClose) {
  auto a = make_adapter();
  store(*a, {key(1)}, {filled(4096, 0x5A)});
  std::optional<L2LoadViews> r = view_load(*a, {key(1)});
  ASSERT_TRUE(r && r->views.at(0));
  MemoryObjPtr view = r->views[0];
  a->delete_keys({key(1)});
  store(*a, {key(1)}, {filled(4096, 0xA5)});  // the same key, other bytes
  std::optional<L2LoadViews> again = view_load(*a, {key(1)});
  ASSERT_TRUE(again && again->views.at(0));
  EXPECT_TRUE(all_bytes(*again->views[0], 0xA5));
  EXPECT_TRUE(all_bytes(*view, 0x5A)) << "the first view changed under its holder";
  a->close();
  a.reset();
  EXPECT_TRUE(all_bytes(*view, 0x5A)) << "a view outlives the adapter";
}

TEST(MockViews, EachQueryAnswersItsOwnKindOfLoadOnce) {
  auto a = make_adapter();
  store(*a, {key(1)}, {filled(16, 1)});
  const TaskId viewed = a->submit_load_view_task({key(1)});
  const TaskId copied = a->submit_load_task({key(1)}, {filled(16, 0)});
  std::optional<L2LoadViews> v = l2_testing::wait_for_result(
      a->get_load_event_fd(), [&] { return a->query_load_view_result(viewed); });
  ASSERT_TRUE(v.has_value());
  std::optional<Bitmap> c = l2_testing::wait_for_result(
      a->get_load_event_fd(), [&] { return a->query_load_result(copied); });
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->to_string(), "1");
  // Taken once; the other query never answered either id.
  EXPECT_EQ(a->query_load_view_result(viewed), std::nullopt);
  EXPECT_EQ(a->query_load_result(viewed), std::nullopt);
  EXPECT_EQ(a->query_load_view_result(copied), std::nullopt);
  EXPECT_EQ(a->query_load_result(copied), std::nullopt);
  // A view task's result waits for its own query: the plain one, asked first every time, leaves
  // it in place.
  const TaskId later = a->submit_load_view_task({key(1), key(2)});
  bool plain_answered = false;
  v = l2_testing::wait_for_result(a->get_load_event_fd(), [&] {
    if (a->query_load_result(later)) plain_answered = true;
    return a->query_load_view_result(later);
  });
  EXPECT_FALSE(plain_answered);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->loaded.to_string(), "10");
  a->close();
}

TEST(MockViews, OffByDefaultAndRefusedThen) {
  auto a = make_adapter(/*views=*/false);
  EXPECT_FALSE(a->supports_load_views());
  EXPECT_THROW(a->submit_load_view_task({key(1)}), std::logic_error);
  a->close();
  EXPECT_FALSE(
      MockL2Adapter::parse_config({{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}}).lend_load_views);
  EXPECT_TRUE(MockL2Adapter::parse_config(
                  {{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}, {"lend_load_views", true}})
                  .lend_load_views);
  try {
    MockL2Adapter::parse_config(
        {{"max_size_gb", 1}, {"mock_bandwidth_gb", 1}, {"lend_load_views", "yes"}});
    FAIL() << "a non-boolean lend_load_views was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("lend_load_views must be a boolean"), std::string::npos)
        << e.what();
  }
}

TEST(MockViews, SubmitAfterCloseThrows) {
  auto a = make_adapter();
  a->close();
  EXPECT_THROW(a->submit_load_view_task({key(1)}), std::logic_error);
}

}  // namespace
}  // namespace lmcache
