// AsyncSerdeProcessor's inline runs (SerdeProcessor::serialize_inline / deserialize_inline):
// the caller's thread runs the task, with the result, narrowing and failure accounting of a
// submitted task, and no id or fd signal.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/forwarding_serde_processor.h"

namespace lmcache {
namespace {

using namespace std::chrono_literals;

MemoryObjPtr bytes_obj(std::size_t n, std::uint8_t fill = 0) {
  auto obj =
      MemoryObj::allocate(MemoryLayoutDesc::single({static_cast<std::int64_t>(n)}, DType::kUInt8));
  std::memset(obj->data(), fill, n);
  return obj;
}

// Copies the first half of src into dst (so the output is narrower than dst) and records the
// thread that ran it; throws when the first source byte is 0xFF.
class HalvingSerializer : public Serializer {
 public:
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    last_thread = std::this_thread::get_id();
    if (static_cast<std::uint8_t>(src.data()[0]) == 0xFF) {
      throw std::invalid_argument("poisoned source");
    }
    const std::size_t n = src.size() / 2;
    std::memcpy(dst.data(), src.data(), n);
    return n;
  }
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override {
    return layout.total_bytes();
  }
  std::atomic<std::thread::id> last_thread{};
};

// Fills dst with the first byte of src.
class FillDeserializer : public Deserializer {
 public:
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override {
    last_thread = std::this_thread::get_id();
    std::memset(dst.data(), static_cast<int>(src.data()[0]), dst.size());
  }
  std::atomic<std::thread::id> last_thread{};
};

// Tests hold a Rig on the heap: std::mutex has a trivial destructor, so TSan keeps a stack
// mutex's identity after its processor is gone, and a processor at another stack offset in a
// later test reads to it as a lock-order inversion between unrelated objects.
struct Rig {
  std::shared_ptr<HalvingSerializer> ser = std::make_shared<HalvingSerializer>();
  std::shared_ptr<FillDeserializer> deser = std::make_shared<FillDeserializer>();
  AsyncSerdeProcessor processor{ser, deser, 2};
};

TEST(AsyncSerdeProcessorInline, SerializeRunsOnTheCallerNarrowsAndSignalsNothing) {
  auto rig_owner = std::make_unique<Rig>();
  Rig& rig = *rig_owner;
  auto src = bytes_obj(64, 7);
  auto dst = bytes_obj(64, 0);
  EXPECT_EQ(rig.processor.serialize_inline({src}, {dst}, test_keys(1)), std::optional<bool>(true));
  EXPECT_EQ(rig.ser->last_thread.load(), std::this_thread::get_id());
  EXPECT_EQ(dst->size(), 32u) << "narrowed to the bytes written, as a submitted task";
  EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[31]), 7);
  EXPECT_FALSE(wait_readable(rig.processor.get_serialize_event_fd(), 20ms));
  EXPECT_FALSE(wait_readable(rig.processor.get_deserialize_event_fd(), 0ms));
  EXPECT_EQ(rig.processor.failed_task_count(), 0u);
}

TEST(AsyncSerdeProcessorInline, DeserializeRunsOnTheCaller) {
  auto rig_owner = std::make_unique<Rig>();
  Rig& rig = *rig_owner;
  auto src = bytes_obj(8, 0x5A);
  auto dst = bytes_obj(16, 0);
  EXPECT_EQ(rig.processor.deserialize_inline({src}, {dst}, test_keys(1)),
            std::optional<bool>(true));
  EXPECT_EQ(rig.deser->last_thread.load(), std::this_thread::get_id());
  EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[15]), 0x5A);
  EXPECT_FALSE(wait_readable(rig.processor.get_deserialize_event_fd(), 20ms));
}

TEST(AsyncSerdeProcessorInline, FailingPairEndsTheTaskFalseAndIsCounted) {
  auto rig_owner = std::make_unique<Rig>();
  Rig& rig = *rig_owner;
  auto good = bytes_obj(8, 1);
  auto bad = bytes_obj(8, 0xFF);
  auto after = bytes_obj(8, 2);
  auto d0 = bytes_obj(8), d1 = bytes_obj(8), d2 = bytes_obj(8, 0xEE);
  EXPECT_EQ(rig.processor.serialize_inline({good, bad, after}, {d0, d1, d2}, test_keys(3)),
            std::optional<bool>(false));
  EXPECT_EQ(d0->size(), 4u) << "pairs before the failure stay done and narrowed";
  EXPECT_EQ(static_cast<std::uint8_t>(d2->data()[0]), 0xEE) << "pairs after it never ran";
  EXPECT_EQ(rig.processor.failed_task_count(), 1u);
  EXPECT_EQ(rig.processor.serialize_inline({bytes_obj(4)}, {nullptr}, test_keys(1)),
            std::optional<bool>(false));
  EXPECT_EQ(rig.processor.failed_task_count(), 2u);
}

TEST(AsyncSerdeProcessorInline, MismatchedListsAndUseAfterCloseThrow) {
  auto rig_owner = std::make_unique<Rig>();
  Rig& rig = *rig_owner;
  EXPECT_THROW(rig.processor.serialize_inline({bytes_obj(4)}, {}, test_keys(1)),
               std::invalid_argument);
  EXPECT_THROW(rig.processor.deserialize_inline({}, {bytes_obj(4)}, test_keys(0)),
               std::invalid_argument);
  rig.processor.close();
  EXPECT_THROW(rig.processor.serialize_inline({bytes_obj(4)}, {bytes_obj(4)}, test_keys(1)),
               std::logic_error);
  EXPECT_THROW(rig.processor.deserialize_inline({bytes_obj(4)}, {bytes_obj(4)}, test_keys(1)),
               std::logic_error);
}

// Inline runs do not disturb submitted tasks: ids, results and notifications stay one each.
TEST(AsyncSerdeProcessorInlineConcurrency, InlineBesideSubmittedTasks) {
  auto rig_owner = std::make_unique<Rig>();
  Rig& rig = *rig_owner;
  std::atomic<int> inline_ok{0};
  std::thread inliner([&] {
    for (int i = 0; i < 200; ++i) {
      auto dst = bytes_obj(32);
      if (rig.processor.serialize_inline({bytes_obj(32, 3)}, {dst}, test_keys(1)) ==
          std::optional<bool>(true)) {
        inline_ok.fetch_add(1);
      }
    }
  });
  std::vector<TaskId> ids;
  for (int i = 0; i < 50; ++i)
    ids.push_back(
        rig.processor.submit_serialize({bytes_obj(32, 4)}, {bytes_obj(32)}, test_keys(1)));
  std::size_t done = 0;
  std::uint64_t notified = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (done < ids.size() && std::chrono::steady_clock::now() < deadline) {
    if (wait_readable(rig.processor.get_serialize_event_fd(), 50ms)) {
      notified += consume_fd(rig.processor.get_serialize_event_fd());
    }
    for (TaskId& id : ids) {
      if (id != TaskId(-1) &&
          rig.processor.query_serialize_result(id) == std::optional<bool>(true)) {
        id = TaskId(-1);
        ++done;
      }
    }
  }
  inliner.join();
  EXPECT_EQ(done, ids.size());
  EXPECT_EQ(inline_ok.load(), 200);
  if (wait_readable(rig.processor.get_serialize_event_fd(), 0ms)) {
    notified += consume_fd(rig.processor.get_serialize_event_fd());
  }
  EXPECT_EQ(notified, ids.size()) << "inline runs signal nothing";
}

// A decorator that does not override the inline runs does not run tasks inline, so it cannot
// be bypassed.
TEST(AsyncSerdeProcessorInline, ForwardingDecoratorDoesNotRunInline) {
  auto ser = std::make_shared<HalvingSerializer>();
  ForwardingSerdeProcessor forwarding(
      std::make_unique<AsyncSerdeProcessor>(ser, std::make_shared<FillDeserializer>(), 1));
  auto dst = bytes_obj(8, 0x11);
  EXPECT_EQ(forwarding.serialize_inline({bytes_obj(8, 9)}, {dst}, test_keys(1)), std::nullopt);
  EXPECT_EQ(forwarding.deserialize_inline({bytes_obj(8, 9)}, {dst}, test_keys(1)), std::nullopt);
  EXPECT_EQ(static_cast<std::uint8_t>(dst->data()[0]), 0x11) << "nothing ran";
  forwarding.close();
}

}  // namespace
}  // namespace lmcache
