// File: conformance/selftest/mutant_wrapper_support.h
//
// What the wrapper mutants' witness scenarios share: a wrapper built around an in-memory mock,
// an fp8 AsyncSerdeProcessor and an L1Manager, small batches, and waits on its results.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "mutants.h"

namespace lmcache::conformance::selftest {

// Elements of one witness object (float32, [4, 64]).
inline constexpr std::int64_t kWitnessElements = 256;

struct WitnessStack {
  // `long_bitmaps`: the inner adapter answers every load with a bitmap one bit too long.
  // `lends`: the inner passes the mock's lent store buffers and load views on (otherwise it
  // lends nothing, and stores and loads go through L1 temps).
  explicit WitnessStack(const WrapperUnderTest& wrapper, bool long_bitmaps = false,
                        bool lends = false);
  ~WitnessStack();
  WitnessStack(const WitnessStack&) = delete;
  WitnessStack& operator=(const WitnessStack&) = delete;

  // Takes every free byte of L1.
  void fill_l1();

  std::shared_ptr<MockL2Adapter> mock;
  std::shared_ptr<L1Manager> l1;
  L2AdapterPtr w;
};

// A witness run on a fresh stack of the implementation's wrapper (over a lending inner when
// `lends`).
std::function<std::string(const Impl&)> with_wrapper(std::function<std::string(WitnessStack&)> fn,
                                                     bool lends = false);

// `n` keys from `seed`; `n` objects of the witness layout filled with small values from `fill`.
std::vector<ObjectKey> witness_keys(std::size_t n, std::uint32_t seed = 0);
std::vector<MemoryObjPtr> witness_objects(std::size_t n, int fill);

// The result of a task, waited for up to 5 s (nullopt: it never came).
std::optional<L2StoreResult> wait_store(L2AdapterInterface& a, TaskId id);
std::optional<Bitmap> wait_load(L2AdapterInterface& a, TaskId id);
std::optional<Bitmap> wait_lookup(L2AdapterInterface& a, TaskId id);

// Remembers the size of the last stored key it was told about.
class SizeListener final : public L2AdapterListener {
 public:
  void on_l2_keys_stored(const std::vector<ObjectKey>&,
                         const std::vector<std::uint64_t>& sizes) override {
    if (!sizes.empty()) last_size = sizes.back();
  }
  void on_l2_keys_accessed(const std::vector<ObjectKey>&) override {}
  void on_l2_keys_deleted(const std::vector<ObjectKey>&,
                          const std::vector<std::uint64_t>&) override {}
  std::atomic<std::uint64_t> last_size{0};
};

}  // namespace lmcache::conformance::selftest
