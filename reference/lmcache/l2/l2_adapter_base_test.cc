// What L2AdapterBase promises every adapter built on it: validation before the implementation
// runs, one id counter, three distinct fds signalled once per completed task, complete()'s own
// checks (twice, unknown, wrong kind, wrong length), a throwing do_*() leaving nothing pending,
// and close()'s order (refuse, do_close once, drop what is pending, close the fds). The adapter
// here is a hand-driven one: each do_*() records its call, and the test completes the tasks.
#include "lmcache/l2/l2_adapter_base.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/core/event_notifier.h"
#include "lmcache/core/testing/expect_invalid.h"
#include "lmcache/core/testing/test_keys.h"
#include "lmcache/core/testing/test_objects.h"

namespace lmcache {
namespace {

using core_internal::bytes_of;
using core_internal::expect_invalid;
using ::testing::HasSubstr;

// Records every call; completes nothing unless told to (complete_inline) or asked by the test.
class HandDriven final : public L2AdapterBase {
 public:
  explicit HandDriven(bool views = false) : L2AdapterBase("HandDriven"), views_(views) {}
  ~HandDriven() override { close(); }

  bool complete_inline = false;  // do_*() completes its own task before returning
  bool throw_in_do = false;      // do_*() throws std::runtime_error
  bool throw_in_close = false;   // do_close() throws once
  std::atomic<int> do_calls{0};
  std::atomic<int> close_calls{0};

  using L2AdapterBase::closing;
  using L2AdapterBase::complete;  // the tests play the implementation

  bool supports_load_views() const override { return views_; }
  AdapterUsage get_usage() const override { return {}; }
  bool supports_global_eviction() const override { return false; }
  void register_listener(std::shared_ptr<L2AdapterListener>) override {}
  Json report_status() const override { return Json{{"is_healthy", !closing()}}; }

 protected:
  void do_store(TaskId id, const std::vector<ObjectKey>&,
                const std::vector<MemoryObjPtr>&) override {
    step();
    if (complete_inline) complete(id, L2StoreResult::success(0));
  }
  void do_lookup_and_lock(TaskId id, const std::vector<ObjectKey>& keys) override {
    step();
    if (complete_inline) complete(id, Bitmap(keys.size()));
  }
  void do_unlock(const std::vector<ObjectKey>&) override { step(); }
  void do_load(TaskId id, const std::vector<ObjectKey>& keys,
               const std::vector<MemoryObjPtr>&) override {
    step();
    if (complete_inline) complete(id, Bitmap(keys.size()));
  }
  void do_load_view(TaskId id, const std::vector<ObjectKey>& keys) override {
    step();
    if (complete_inline) {
      complete(id, L2LoadViews{Bitmap(keys.size()), std::vector<MemoryObjPtr>(keys.size())});
    }
  }
  void do_delete(const std::vector<ObjectKey>&) override { step(); }
  void do_close() override {
    ++close_calls;
    if (std::exchange(throw_in_close, false)) throw std::logic_error("not from here");
  }

 private:
  void step() {
    ++do_calls;
    if (throw_in_do) throw std::runtime_error("storage said no");
  }
  const bool views_;
};

std::vector<MemoryObjPtr> objects(std::size_t n) {
  std::vector<MemoryObjPtr> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(bytes_of(8, static_cast<std::uint8_t>(i)));
  return out;
}

// What `fn` throws as std::logic_error ("" and a test failure when it throws none).
template <class Fn>
std::string logic_message(Fn&& fn) {
  return core_internal::thrown_message<std::logic_error>(std::forward<Fn>(fn));
}

TEST(L2AdapterBase, RefusesMismatchedAndNullBatchesBeforeTheImplementation) {
  HandDriven a;
  expect_invalid([&] { a.submit_store_task(test_keys(2), objects(1)); },
                 {"HandDriven::submit_store_task", "2 keys but 1 objects"});
  expect_invalid([&] { a.submit_load_task(test_keys(1), objects(3)); },
                 {"HandDriven::submit_load_task", "1 keys but 3 objects"});
  std::vector<MemoryObjPtr> with_null = objects(3);
  with_null[1] = nullptr;
  expect_invalid([&] { a.submit_store_task(test_keys(3), with_null); }, {"objects[1] is null"});
  expect_invalid([&] { a.submit_load_task(test_keys(3), with_null); }, {"objects[1] is null"});
  EXPECT_EQ(a.do_calls.load(), 0);
  EXPECT_EQ(a.pending_task_count(), 0u);
}

TEST(L2AdapterBase, OneIdCounterAndThreeDistinctFds) {
  HandDriven a(/*views=*/true);
  std::set<int> fds{a.get_store_event_fd(), a.get_lookup_and_lock_event_fd(),
                    a.get_load_event_fd()};
  EXPECT_EQ(fds.size(), 3u);
  EXPECT_EQ(fds.count(-1), 0u);
  EXPECT_EQ(a.submit_store_task(test_keys(1), objects(1)), 0u);
  EXPECT_EQ(a.submit_lookup_and_lock_task(test_keys(2)), 1u);
  EXPECT_EQ(a.submit_load_task(test_keys(1), objects(1)), 2u);
  EXPECT_EQ(a.submit_load_view_task(test_keys(1)), 3u);
  EXPECT_EQ(a.pending_task_count(), 4u);
}

TEST(L2AdapterBase, EachCompletionSignalsItsOwnFdOnceAndIsTakenOnce) {
  HandDriven a(/*views=*/true);
  const TaskId store = a.submit_store_task(test_keys(2), objects(2));
  const TaskId lookup = a.submit_lookup_and_lock_task(test_keys(3));
  const TaskId load = a.submit_load_task(test_keys(1), objects(1));
  const TaskId view = a.submit_load_view_task(test_keys(2));

  a.complete(store, L2StoreResult::success(16));
  EXPECT_EQ(consume_fd(a.get_store_event_fd()), 1u);
  EXPECT_EQ(consume_fd(a.get_lookup_and_lock_event_fd()), 0u);
  auto stores = a.pop_completed_store_tasks();
  ASSERT_EQ(stores.size(), 1u);
  EXPECT_EQ(stores.at(store).bytes_transferred(), 16u);
  EXPECT_TRUE(a.pop_completed_store_tasks().empty());

  Bitmap hits(3);
  hits.set(1);
  a.complete(lookup, hits);
  EXPECT_EQ(consume_fd(a.get_lookup_and_lock_event_fd()), 1u);
  EXPECT_EQ(consume_fd(a.get_load_event_fd()), 0u);
  EXPECT_EQ(a.query_load_result(lookup), std::nullopt);  // another kind's query
  std::optional<Bitmap> got = a.query_lookup_and_lock_result(lookup);
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->test(1));
  EXPECT_EQ(a.query_lookup_and_lock_result(lookup), std::nullopt);

  a.complete(load, Bitmap(1));
  a.complete(view, L2LoadViews{Bitmap(2), std::vector<MemoryObjPtr>(2)});
  EXPECT_EQ(consume_fd(a.get_load_event_fd()), 2u);         // views share the load fd
  EXPECT_EQ(a.query_load_view_result(load), std::nullopt);  // each query its own kind
  EXPECT_EQ(a.query_load_result(view), std::nullopt);
  EXPECT_TRUE(a.query_load_result(load));
  std::optional<L2LoadViews> views = a.query_load_view_result(view);
  ASSERT_TRUE(views);
  EXPECT_EQ(views->views.size(), 2u);
  EXPECT_EQ(a.query_load_result(load), std::nullopt);
  EXPECT_EQ(a.pending_task_count(), 0u);
}

TEST(L2AdapterBase, CompleteRefusesWhatNoPendingTaskExplains) {
  HandDriven a;
  const TaskId store = a.submit_store_task(test_keys(1), objects(1));
  const TaskId lookup = a.submit_lookup_and_lock_task(test_keys(2));
  const TaskId load = a.submit_load_task(test_keys(2), objects(2));
  EXPECT_THAT(logic_message([&] { a.complete(99, L2StoreResult::failure()); }),
              HasSubstr("task 99"));
  EXPECT_THAT(logic_message([&] { a.complete(store, Bitmap(1)); }), HasSubstr("no such task"));
  EXPECT_THAT(logic_message([&] { a.complete(lookup, L2StoreResult::failure()); }),
              HasSubstr("no such task"));
  EXPECT_THAT(logic_message([&] { a.complete(lookup, Bitmap(3)); }),
              HasSubstr("has 2 keys but completed with 3 bits"));
  EXPECT_THAT(logic_message([&] {
                a.complete(load, L2LoadViews{Bitmap(2), std::vector<MemoryObjPtr>(1)});
              }),
              HasSubstr("2 bits but 1 views"));
  // None of the refused completions reached a queue; the tasks are still pending.
  EXPECT_EQ(consume_fd(a.get_store_event_fd()) + consume_fd(a.get_lookup_and_lock_event_fd()) +
                consume_fd(a.get_load_event_fd()),
            0u);
  EXPECT_EQ(a.pending_task_count(), 3u);
  a.complete(store, L2StoreResult::success(0));
  EXPECT_THAT(logic_message([&] { a.complete(store, L2StoreResult::success(0)); }),
              HasSubstr("completed twice"));
  EXPECT_EQ(a.pop_completed_store_tasks().size(), 1u);
}

TEST(L2AdapterBase, ATaskMayCompleteInsideItsOwnSubmit) {
  HandDriven a(/*views=*/true);
  a.complete_inline = true;
  const TaskId store = a.submit_store_task(test_keys(1), objects(1));
  const TaskId lookup = a.submit_lookup_and_lock_task(test_keys(1));
  const TaskId load = a.submit_load_task(test_keys(1), objects(1));
  const TaskId view = a.submit_load_view_task(test_keys(1));
  EXPECT_EQ(a.pop_completed_store_tasks().count(store), 1u);
  EXPECT_TRUE(a.query_lookup_and_lock_result(lookup));
  EXPECT_TRUE(a.query_load_result(load));
  EXPECT_TRUE(a.query_load_view_result(view));
  EXPECT_EQ(a.pending_task_count(), 0u);
}

TEST(L2AdapterBase, AThrowingStepLeavesNoTaskBehind) {
  HandDriven a(/*views=*/true);
  a.throw_in_do = true;
  EXPECT_THROW(a.submit_store_task(test_keys(1), objects(1)), std::runtime_error);
  EXPECT_THROW(a.submit_lookup_and_lock_task(test_keys(1)), std::runtime_error);
  EXPECT_THROW(a.submit_load_task(test_keys(1), objects(1)), std::runtime_error);
  EXPECT_THROW(a.submit_load_view_task(test_keys(1)), std::runtime_error);
  EXPECT_THROW(a.submit_unlock(test_keys(1)), std::runtime_error);
  EXPECT_THROW(a.delete_keys(test_keys(1)), std::runtime_error);
  EXPECT_EQ(a.pending_task_count(), 0u);
  // The ids the refused tasks drew are not completable.
  EXPECT_THROW(a.complete(0, L2StoreResult::failure()), std::logic_error);
}

TEST(L2AdapterBase, ViewLoadsNeedTheCapability) {
  HandDriven a(/*views=*/false);
  EXPECT_THROW(a.submit_load_view_task(test_keys(1)), std::logic_error);
  EXPECT_EQ(a.do_calls.load(), 0);
  EXPECT_EQ(a.pending_task_count(), 0u);
}

TEST(L2AdapterBase, CloseRefusesDropsPendingKeepsResultsAndIsIdempotent) {
  HandDriven a;
  const TaskId done = a.submit_store_task(test_keys(1), objects(1));
  const TaskId pending = a.submit_load_task(test_keys(1), objects(1));
  const TaskId lookup = a.submit_lookup_and_lock_task(test_keys(1));
  a.complete(done, L2StoreResult::success(8));
  a.complete(lookup, Bitmap(1));
  a.close();
  a.close();
  EXPECT_EQ(a.close_calls.load(), 1);
  EXPECT_EQ(a.get_store_event_fd(), -1);
  EXPECT_EQ(a.get_lookup_and_lock_event_fd(), -1);
  EXPECT_EQ(a.get_load_event_fd(), -1);
  EXPECT_EQ(a.pending_task_count(), 0u);
  // A late completion of a dropped task is dropped too, without an error.
  EXPECT_NO_THROW(a.complete(pending, Bitmap(1)));
  EXPECT_EQ(a.query_load_result(pending), std::nullopt);
  // What completed before close() stays takeable, once.
  EXPECT_EQ(a.pop_completed_store_tasks().count(done), 1u);
  EXPECT_TRUE(a.query_lookup_and_lock_result(lookup));

  const int calls = a.do_calls.load();
  EXPECT_EQ(logic_message([&] { a.submit_store_task(test_keys(1), objects(1)); }),
            "HandDriven::submit_store_task after close()");
  EXPECT_EQ(logic_message([&] { a.submit_lookup_and_lock_task(test_keys(1)); }),
            "HandDriven::submit_lookup_and_lock_task after close()");
  EXPECT_EQ(logic_message([&] { a.submit_load_task(test_keys(1), objects(1)); }),
            "HandDriven::submit_load_task after close()");
  EXPECT_EQ(logic_message([&] { a.submit_unlock(test_keys(1)); }),
            "HandDriven::submit_unlock after close()");
  EXPECT_EQ(logic_message([&] { a.delete_keys(test_keys(1)); }),
            "HandDriven::delete_keys after close()");
  EXPECT_EQ(a.do_calls.load(), calls);
  // Validation still comes first: a bad batch is a bad batch, open or closed.
  EXPECT_THROW(a.submit_store_task(test_keys(2), objects(1)), std::invalid_argument);
}

TEST(L2AdapterBase, ACloseThatThrowsLeavesTheAdapterOpen) {
  HandDriven a;
  a.throw_in_close = true;
  EXPECT_THROW(a.close(), std::logic_error);
  EXPECT_FALSE(a.closing());
  EXPECT_NE(a.get_store_event_fd(), -1);
  const TaskId id = a.submit_store_task(test_keys(1), objects(1));
  a.complete(id, L2StoreResult::success(0));
  a.close();
  EXPECT_EQ(a.close_calls.load(), 2);
  EXPECT_EQ(a.pop_completed_store_tasks().count(id), 1u);
}

// Submitters and completers on several threads: every id is distinct, every task completes once
// and is taken once (run under TSan with the concurrency label).
TEST(L2AdapterBaseConcurrency, IdsStayDistinctAndEachTaskCompletesOnce) {
  HandDriven a;
  a.complete_inline = true;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::vector<std::vector<TaskId>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        ids[t].push_back(i % 2 ? a.submit_store_task(test_keys(1), objects(1))
                               : a.submit_lookup_and_lock_task(test_keys(2)));
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<TaskId> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
  std::size_t taken = a.pop_completed_store_tasks().size();
  for (TaskId id : all) taken += a.query_lookup_and_lock_result(id).has_value() ? 1 : 0;
  EXPECT_EQ(taken, all.size());
  EXPECT_EQ(a.pending_task_count(), 0u);
}

}  // namespace
}  // namespace lmcache
