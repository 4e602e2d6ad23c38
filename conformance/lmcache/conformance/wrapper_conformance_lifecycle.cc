// WrapperConformance properties about a wrapper's life: close() (what it fails, what stays
// retrievable, what it closes and releases) and the resources a wrapper holds over hundreds of
// tasks.
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/waits.h"
#include "lmcache/conformance/internal/wrapper_properties.h"
#include "lmcache/conformance/process_stats.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::conformance_internal::wrapper_properties {
using namespace ::lmcache::conformance;  // the kit's public types

Verdict CloseFailsInFlightTasks(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  return run_rc_property(
      rc_id("CloseFailsInFlightTasks", wut, rig_options), {.max_success = 3, .shrink = false}, [&] {
        MemoryLayoutDesc layout = gen_kv_layout(1u << 14);
        const std::size_t n = gen_kv_batch(layout);
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        const std::size_t baseline = rig->l1_used();
        const auto [keys, objs] = store_fresh_batch(w, layout, n, 61);

        // A store and a load that complete before close() and are left untaken.
        auto early = make_keys(n, 63);
        TaskId done_store = w.submit_store_task(early, objs);
        require(collect_notifies(w.get_store_event_fd(), 1) == 1,
                "a store did not signal its completion once");
        std::vector<MemoryObjPtr> early_dsts = zeroed_objects(layout, n);
        TaskId done_load = w.submit_load_task(keys, early_dsts);
        require(collect_notifies(w.get_load_event_fd(), 1) == 1,
                "a load did not signal its completion once");

        // A lookup that completes before close() and is left unqueried: its result and its
        // locks belong to the inner adapter, which close() closes (docs/wrapper.md).
        // At least one notify: the lookup fd is the inner adapter's, passed through, and an
        // inner may wake it spuriously (docs/async-completion.md).
        TaskId done_lookup = w.submit_lookup_and_lock_task(keys);
        require(collect_notifies(w.get_lookup_and_lock_event_fd(), 1) >= 1,
                "a lookup did not signal its completion");

        // Hold the inner adapter's results: the next store and load stay in flight.
        rig->inner->hold_results = true;
        auto more = make_keys(n, 62);
        TaskId held_store = w.submit_store_task(more, objs);
        std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
        TaskId held_load = w.submit_load_task(keys, dsts);
        auto reached = poll_until(
            [&]() -> std::optional<bool> {
              return rig->mock->has_key(more.back()) ? std::optional<bool>(true) : std::nullopt;
            },
            result_timeout());
        require(reached.has_value(), "the held store never reached the inner adapter");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the load reach it too

        try {
          w.close();
          w.close();
        } catch (const std::exception& e) {
          fail_case(std::string("close() threw: ") + e.what());
        }
        std::map<TaskId, L2StoreResult> popped = w.pop_completed_store_tasks();
        require(popped.count(done_store) == 1,
                "a store that completed before close() and was not popped is gone after it "
                "(what completed stays retrievable)");
        require(popped.at(done_store).is_successful(),
                "a store that completed successfully before close() reads " +
                    popped.at(done_store).to_string() + " after it");
        require(popped.count(held_store) == 1,
                "the store in flight at close() never completed (it must complete as failed)");
        require(!popped.at(held_store).is_successful(),
                "the store in flight at close() completed as " + popped.at(held_store).to_string());
        require(w.pop_completed_store_tasks().empty(), "a store completed twice after close()");
        std::optional<Bitmap> early_bits = w.query_load_result(done_load);
        require(early_bits.has_value() && early_bits->size() == n,
                "a load that completed before close() and was not queried is " +
                    (early_bits ? "now a bitmap of " + std::to_string(early_bits->size()) + " bits"
                                : std::string("gone")) +
                    " after it (what completed stays retrievable)");
        std::optional<Bitmap> bits = w.query_load_result(held_load);
        require(bits.has_value(),
                "the load in flight at close() never completed (it must complete as failed)");
        require(*bits == Bitmap(n),
                "the load in flight at close() completed as " + bits->to_string());
        require(!w.query_load_result(held_load) && !w.query_load_result(done_load),
                "a load answered twice after close()");
        require(rig->l1_used() == baseline,
                "after close() L1 holds " + std::to_string(rig->l1_used()) +
                    " bytes of temps (expected " + std::to_string(baseline) + ")");
        try {
          w.submit_store_task(keys, objs);
          fail_case("submit_store_task() after close() did not throw");
        } catch (const std::logic_error&) {
        }
        try {
          (void)w.query_lookup_and_lock_result(done_lookup);
          fail_case(
              "query_lookup_and_lock_result() after close() did not throw std::logic_error (the "
              "inner adapter that held the result and its locks is closed)");
        } catch (const std::logic_error&) {
        }
      });
}

Verdict CloseReleasesResources(const WrapperUnderTest& wut, const WrapperRigOptions& rig_options) {
  const ProcessResources baseline = ProcessResources::take();
  return run_rc_property(
      rc_id("CloseReleasesResources", wut, rig_options),
      {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
        MemoryLayoutDesc layout = MemoryLayoutDesc::single({16, 33}, DType::kBFloat16);
        const std::size_t n = 9;
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        const auto [keys, objs] = store_fresh_batch(w, layout, n, 91);
        std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, n);
        TaskId l = w.submit_load_task(keys, dsts);
        require(wait_load_once(w, l, "load") == Bitmap(n, n), "load failed");
        w.close();
        require(rig->inner->records().closed,
                "close() did not close the inner adapter (the wrapper owns it)");
        require(rig->serde->closed.load(),
                "close() did not close the serde processor (the wrapper owns it)");
        std::string leak = resources_left_over(baseline, settle_timeout());
        require(leak.empty(), "after close() the process holds " + leak +
                                  " (before: the wrapper, its inner adapter and its serde "
                                  "processor were made); close() must release them all");
      });
}

Verdict ResourcesBoundedOverManyTasks(const WrapperUnderTest& wut,
                                      const WrapperRigOptions& rig_options) {
  return run_rc_property(
      rc_id("ResourcesBoundedOverManyTasks", wut, rig_options),
      {.max_success = 1, .shrink = false, .scale_with_depth = false}, [&] {
        // Rounds of a store and a load of 4 keys, every fourth store failing at one pair. The
        // counts are taken after the first rounds, halfway and at the end (and, where they grew,
        // after as many rounds again: a pool that grew late holds still, a leak grows again).
        const std::size_t rounds = std::max<std::size_t>(8, current_profile().resource_tasks / 2);
        constexpr std::size_t kKeys = 4;
        const MemoryLayoutDesc layout = MemoryLayoutDesc::single({8, 17}, DType::kFloat16);
        auto rig = make_rig(wut, rig_options);
        L2AdapterInterface& w = *rig->wrapper;
        const std::size_t baseline = rig->l1_used();
        std::vector<std::weak_ptr<MemoryObj>> handed;
        std::size_t tasks = 0;
        auto run_round = [&](std::size_t r) {
          const std::string at = "round " + std::to_string(r + 1) +
                                 (r < rounds ? " of " + std::to_string(rounds)
                                             : std::string(" (run to confirm a growth)")) +
                                 " (" + std::to_string(tasks) + " tasks done)";
          auto keys = make_keys(kKeys, 1000 + r);
          auto objs = make_objects(layout, kKeys, r);
          const bool fails = r % 4 == 3;
          if (fails) rig->serde->fail_serialize_call_from_now(static_cast<long>(r % kKeys));
          TaskId s = w.submit_store_task(keys, objs);
          L2StoreResult sr = wait_store_quietly(w, s, at);
          require(sr.is_successful() != fails,
                  at + ": a store " + (fails ? "with a failing pair" : "of valid objects") +
                      " completed as " + sr.to_string());
          std::vector<MemoryObjPtr> dsts = zeroed_objects(layout, kKeys);
          TaskId l = w.submit_load_task(keys, dsts);
          Bitmap bits = wait_load_quietly(w, l, at);
          require(bits == (fails ? Bitmap(kKeys) : Bitmap(kKeys, kKeys)),
                  at + ": a load returned " + bits.to_string());
          for (auto& o : objs) handed.push_back(o);
          for (auto& d : dsts) handed.push_back(d);
          tasks += 2;
          require_l1_back(*rig, baseline, at);
        };
        ProcessResources halfway;
        for (std::size_t r = 0; r < rounds; ++r) {
          run_round(r);
          if (r == rounds / 2) halfway = ProcessResources::take();
        }
        // Grown since halfway: as many rounds again tell a pool that grew late from a leak.
        // The rounds fail through require(), so round_error stays empty.
        const std::string grew = growth_past_halfway(
                                     halfway, rounds,
                                     [&](std::size_t r) {
                                       run_round(r);
                                       return std::string();
                                     },
                                     settle_timeout())
                                     .grew;
        require(grew.empty(), "the wrapper keeps growing: after " + std::to_string(tasks) +
                                  " tasks the process holds " + grew +
                                  " (before: halfway through the first " + std::to_string(rounds) +
                                  " rounds; it grew again over as many rounds more): a leak per "
                                  "task or every few tasks, in the wrapper, its inner adapter or "
                                  "its serde");
        require(objects_still_held(handed, 2 * kKeys) <= 2 * kKeys,
                "after " + std::to_string(tasks) +
                    " completed tasks the wrapper (or what it owns) still references caller "
                    "objects it was given (they belong to the caller once a task completed)");
      });
}

}  // namespace lmcache::conformance_internal::wrapper_properties
