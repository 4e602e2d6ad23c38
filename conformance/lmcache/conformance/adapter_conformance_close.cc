// AdapterConformance.CloseWithTasksInFlight: close() while stores and loads of objects up to
// KV-chunk size are still in flight. A host closes its adapter at shutdown or on reconfiguration
// with work outstanding; what it needs then is that close() returns, that the process survives
// (a send into a socket that close() shut down must not raise SIGPIPE: the kit's child runs with
// the signal's default action, as a C++ host does), that each result is handed out at most once
// and that no call throws where docs/l2-adapter.md says it does not (a lookup's result may throw
// std::logic_error: the locks it reports went with close()), and that once close() has
// returned nothing writes into the caller's load destinations any more (a worker left running
// writes into memory the caller has freed).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// How long the property watches the load destinations after close() returned. A late write
// that comes later is missed (never a false Fail); the mutation suite's late writer fits well
// inside it.
constexpr std::chrono::milliseconds kWatchAfterClose{100};

}  // namespace

Verdict CloseWithTasksInFlight(const AdapterUnderTest& aut) {
  return run_rc_property(
      rc_id("CloseWithTasksInFlight", aut), {.max_success = 6, .shrink = false}, [&] {
        const std::size_t n = *uniform_in_range<std::size_t>(1, 5);
        const std::size_t chunk =
            std::min<std::size_t>(current_profile().max_chunk_bytes, std::size_t{4} << 20);
        const std::vector<ObjectKey> keys = key_family(*gen_seed(), 2 * n);
        const std::vector<ObjectKey> first(keys.begin(), keys.begin() + static_cast<long>(n));
        const std::vector<ObjectKey> second(keys.begin() + static_cast<long>(n), keys.end());
        // One layout for every object: an adapter may require one per submit (a serde wrapper).
        const MemoryLayoutDesc layout = *gen_layout_of_any_size(aut.object_dtypes, chunk);
        std::vector<MemoryObjPtr> objs, dsts;
        for (std::size_t i = 0; i < 2 * n; ++i) {
          objs.push_back(make_object(layout));
          fill_bytes(objs.back()->physical_bytes(), *gen_seed());
        }
        const std::vector<MemoryObjPtr> first_objs(objs.begin(),
                                                   objs.begin() + static_cast<long>(n));
        const std::vector<MemoryObjPtr> second_objs(objs.begin() + static_cast<long>(n),
                                                    objs.end());
        for (std::size_t i = 0; i < n; ++i) {
          dsts.push_back(make_object(first_objs[i]->layout()));
          fill_bytes(dsts.back()->physical_bytes(), 0xC105E);
        }
        // The destinations and sources outlive the adapter (declared first): a late write lands
        // in memory the property still owns and can see.
        L2AdapterPtr a = aut.make();
        require(a != nullptr, "make() returned null");
        store_all(*a, first, first_objs, "a store before close()");

        // In flight at close(): a load of the stored keys, a store of other keys and a lookup,
        // in one of three orders (a load queued behind a store may be dropped before it starts;
        // one submitted alone is running), close() called at once or after a moment.
        const int order = *uniform_in_range(0, 3);
        const int pause_ms = *rc::gen::element(0, 1, 5);
        std::optional<TaskId> store_id, lookup_id;
        if (order == 0) store_id = a->submit_store_task(second, second_objs);
        const TaskId load_id = a->submit_load_task(first, dsts);
        if (order != 1) lookup_id = a->submit_lookup_and_lock_task(first);
        if (order == 2) store_id = a->submit_store_task(second, second_objs);
        const std::string shape =
            std::to_string(n) + " object(s) of up to " + std::to_string(chunk) +
            " bytes in flight" +
            (order == 1   ? ", a load alone"
             : order == 2 ? ", the load first"
                          : "") +
            (pause_ms > 0 ? ", close() " + std::to_string(pause_ms) + " ms later" : "");
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        try {
          a->close();
        } catch (const std::exception& e) {
          require(false, "close() with " + shape + " threw: " + e.what());
        }
        // What the destinations hold when close() has returned: nothing may change it later.
        std::vector<std::vector<std::byte>> at_close;
        for (const MemoryObjPtr& d : dsts) {
          at_close.emplace_back(d->physical_bytes().begin(), d->physical_bytes().end());
        }

        // Every result at most once; none of these calls throws after close().
        std::map<TaskId, L2StoreResult> stores, stores_again;
        std::optional<Bitmap> load, load_again, lookup, lookup_again;
        std::string threw, lookup_threw;
        try {
          stores = a->pop_completed_store_tasks();
          stores_again = a->pop_completed_store_tasks();
          load = a->query_load_result(load_id);
          load_again = a->query_load_result(load_id);
        } catch (const std::exception& e) {
          threw = e.what();
        }
        require(threw.empty(), "after close() with " + shape +
                                   ", a store or load result query threw (docs/l2-adapter.md: "
                                   "they never throw): " +
                                   threw);
        // A lookup's result reports locks, which close() may have dropped: it may answer, or
        // throw std::logic_error (docs/l2-adapter.md), and nothing else.
        try {
          if (lookup_id) {
            lookup = a->query_lookup_and_lock_result(*lookup_id);
            lookup_again = a->query_lookup_and_lock_result(*lookup_id);
          }
        } catch (const std::logic_error&) {
        } catch (const std::exception& e) {
          lookup_threw = e.what();
        }
        require(lookup_threw.empty(),
                "after close(), query_lookup_and_lock_result threw something other than "
                "std::logic_error: " +
                    lookup_threw);
        require(!store_id || !(stores.count(*store_id) && stores_again.count(*store_id)),
                "after close(): store task " + std::to_string(store_id.value_or(0)) +
                    " was handed out twice");
        require(!(load && load_again),
                "after close(): load task " + std::to_string(load_id) + " was answered twice");
        require(!(lookup && lookup_again), "after close(): lookup task " +
                                               std::to_string(lookup_id.value_or(0)) +
                                               " was answered twice");
        require(!load || load->size() == n, "after close(): the load's bitmap has " +
                                                std::to_string(load ? load->size() : 0) +
                                                " bits for " + std::to_string(n) + " keys");

        // Once close() has returned, nothing writes into the load's destinations.
        std::this_thread::sleep_for(kWatchAfterClose);
        for (std::size_t i = 0; i < n; ++i) {
          const auto now = dsts[i]->physical_bytes();
          require(std::equal(now.begin(), now.end(), at_close[i].begin(), at_close[i].end()),
                  "the destination of key " + first[i].to_string() + " (" +
                      std::to_string(dsts[i]->physical_size()) +
                      " bytes) changed after close() returned: a worker still writes into the "
                      "caller's memory (" +
                      shape + ")");
        }
        a.reset();
      });
}

}  // namespace lmcache::conformance_internal::adapter_properties
