// The concepts accept LMCache's connector shapes (current and older) and reject incomplete ones;
// erase_connector() keeps what it detected.
#include "lmcache/bridge/native_connector.h"

#include <gtest/gtest.h>

#include <deque>
#include <list>

#include "lmcache/bridge/erased_connector.h"
#include "lmcache/testing/memory_connector.h"

// LMCache's own IStorageConnector and Completion, declared in LMCache's namespace as its headers
// declare them (virtual members): they must build beside the kit's names (lmcache::bridge).
namespace lmcache::connector {
struct Completion {
  uint64_t future_id = 0;
  bool ok = true;
  std::vector<uint8_t> result_bytes;
  std::string error;
};
class IStorageConnector {
 public:
  virtual ~IStorageConnector() = default;
  virtual int event_fd() const = 0;
  virtual uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                    const std::vector<void*>& bufs, const std::vector<size_t>& lens,
                                    size_t batch_chunk_num_bytes) = 0;
  virtual uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                    const std::vector<void*>& bufs, const std::vector<size_t>& lens,
                                    size_t batch_chunk_num_bytes) = 0;
  virtual uint64_t submit_batch_exists(const std::vector<std::string>& keys) = 0;
  virtual uint64_t submit_batch_delete(const std::vector<std::string>& keys) = 0;
  virtual std::vector<Completion> drain_completions() = 0;
  virtual void close() = 0;
};
}  // namespace lmcache::connector

namespace vendor {

// An older shape: no delete, completions in a std::list, result_bytes as a std::deque of int.
struct OldCompletion {
  std::uint64_t future_id = 0;
  bool ok = true;
  std::deque<int> result_bytes;
  std::string error;
};
struct OldConnector {
  int event_fd() const { return 3; }
  std::uint64_t submit_batch_get(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t) {
    return 1;
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t) {
    return 2;
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>&) { return 3; }
  std::list<OldCompletion> drain_completions() {
    return {OldCompletion{7, true, {1, 0, 1}, ""}, OldCompletion{8, false, {}, "boom"}};
  }
  void close() {}
};

struct NoDrain {
  int event_fd() const { return 3; }
  std::uint64_t submit_batch_get(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t);
  std::uint64_t submit_batch_set(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t);
  std::uint64_t submit_batch_exists(const std::vector<std::string>&);
  void close();
};

struct BadCompletion {
  std::uint64_t future_id = 0;
  std::string error;  // no `ok`, no result_bytes
};
struct BadCompletionConnector : OldConnector {
  std::vector<BadCompletion> drain_completions();
};

// A connector that declares per-key get results, and one whose traits a "vendor" specializes.
struct DeclaringConnector : OldConnector {
  static constexpr bool kPerKeyGetResults = true;
};
struct SpecializedConnector : OldConnector {};
// kPerKeyGetResults that is not a constant: ignored, not an error.
struct NonConstantFlag : OldConnector {
  static inline bool kPerKeyGetResults = true;
};

}  // namespace vendor

template <>
struct lmcache::bridge::ConnectorTraits<vendor::SpecializedConnector> {
  static constexpr bool kHasBatchDelete = false;
  static constexpr bool kPerKeyGetResults = true;
};

namespace lmcache::bridge {
namespace {

using storage_testing::LegacyMemoryConnector;
using storage_testing::MemoryConnector;

static_assert(NativeConnector<lmcache::connector::IStorageConnector>);
static_assert(NativeConnectorWithDelete<lmcache::connector::IStorageConnector>);
static_assert(!ConnectorTraits<lmcache::connector::IStorageConnector>::kPerKeyGetResults);
static_assert(NativeConnector<vendor::OldConnector>);
static_assert(!NativeConnectorWithDelete<vendor::OldConnector>);
static_assert(!NativeConnector<vendor::NoDrain>);
static_assert(!NativeConnector<vendor::BadCompletionConnector>);
static_assert(ConnectorTraits<vendor::DeclaringConnector>::kPerKeyGetResults);
static_assert(ConnectorTraits<vendor::SpecializedConnector>::kPerKeyGetResults);
static_assert(!ConnectorTraits<vendor::NonConstantFlag>::kPerKeyGetResults);
static_assert(NativeConnectorWithDelete<MemoryConnector>);
static_assert(ConnectorTraits<MemoryConnector>::kPerKeyGetResults);
static_assert(NativeConnector<LegacyMemoryConnector>);
static_assert(!NativeConnectorWithDelete<LegacyMemoryConnector>);
static_assert(!ConnectorTraits<LegacyMemoryConnector>::kPerKeyGetResults);
// The erased form is itself a connector (decorators compose).
static_assert(NativeConnectorWithDelete<ErasedConnector>);

TEST(ErasedConnector, ConvertsAnyCompletionShape) {
  ErasedConnectorPtr c = erase_connector(std::make_unique<vendor::OldConnector>());
  EXPECT_FALSE(c->supports_delete());
  EXPECT_FALSE(c->per_key_get_results());
  EXPECT_EQ(c->event_fd(), 3);
  std::vector<Completion> done = c->drain_completions();
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].future_id, 7u);
  EXPECT_TRUE(done[0].ok);
  EXPECT_EQ(done[0].result_bytes, (std::vector<std::uint8_t>{1, 0, 1}));
  EXPECT_FALSE(done[1].ok);
  EXPECT_EQ(done[1].error, "boom");
  EXPECT_THROW(c->submit_batch_delete({"k"}), std::logic_error);
  EXPECT_TRUE(c->status().is_null());
}

TEST(ErasedConnector, KeepsDetectedTraits) {
  EXPECT_TRUE(erase_connector(std::make_unique<MemoryConnector>())->supports_delete());
  EXPECT_TRUE(erase_connector(std::make_unique<MemoryConnector>())->per_key_get_results());
  EXPECT_TRUE(
      erase_connector(std::make_unique<vendor::SpecializedConnector>())->per_key_get_results());
  EXPECT_FALSE(
      erase_connector(std::make_unique<vendor::SpecializedConnector>())->supports_delete());
}

TEST(ErasedConnector, RejectsNull) {
  EXPECT_THROW(erase_connector(std::unique_ptr<MemoryConnector>()), std::invalid_argument);
  EXPECT_THROW(ForwardingConnector(nullptr), std::invalid_argument);
}

TEST(ErasedConnector, ErasingAnErasedConnectorKeepsIt) {
  auto inner =
      std::make_unique<ForwardingConnector>(erase_connector(std::make_unique<MemoryConnector>()));
  ForwardingConnector* raw = inner.get();
  ErasedConnectorPtr c = erase_connector(std::move(inner));
  EXPECT_EQ(c.get(), raw);
}

}  // namespace
}  // namespace lmcache::bridge
