// A native connector plugin whose connectors share one process-wide connection pool, set up on
// the first batch any of them runs with a hand-rolled "if not yet initialized" (no
// std::call_once, no function-local static): when several connectors run their first batch at
// once, each opens a pool, the later replaces the earlier and closes it, and the connector that
// took the earlier one fails every later batch ("connection closed"). The pool is never torn
// down, so only the first use in a process can race: the runner must find it under
// AdapterConformance.ConcurrentFirstUse, whose child process uses the connector first (its
// load-time store is skipped there, store_preflight.h).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "connector_base.h"
#include "lmcache/conformance/connector_plugin.h"
#include "map_connector.h"

namespace lmcache::connector {
namespace {

struct Pool {
  std::mutex mu;  // guards values
  MapConnector::Values values;
  std::atomic<bool> open{true};
};

// Owns every pool ever opened (the replaced ones stay allocated, as in the code this mimics,
// but are freed at exit so that leak checkers stay quiet).
struct Pools {
  std::mutex mu;
  std::vector<std::unique_ptr<Pool>> all;
  std::atomic<Pool*> current{nullptr};  // atomic for the sanitizers only: the bug is the race
  std::atomic<int> arriving{0};
  std::atomic<int> acted{0};
};

Pools& pools() {
  static Pools p;
  return p;
}

Pool* shared_pool() {
  Pools& p = pools();
  if (Pool* existing = p.current.load()) return existing;  // the check
  // "Connecting": the window between the check and the act, widened so that first uses at once
  // always overlap (a first use alone waits 1 s once; on a loaded machine the threads of one
  // case may start tens of ms apart).
  ++p.arriving;
  for (int i = 0; i < 1000 && p.arriving.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Pool* mine = nullptr;
  {
    std::lock_guard lock(p.mu);
    mine = p.all.emplace_back(std::make_unique<Pool>()).get();
  }
  if (Pool* replaced = p.current.exchange(mine)) replaced->open = false;  // the act
  // The handshake ends once every first use that arrived has acted: otherwise the loser could
  // run all its batches before the winner woke to replace its pool, and the race went unseen.
  ++p.acted;
  for (int i = 0; i < 1000 && p.acted.load() < p.arriving.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return mine;
}

class LazyPoolConnector final : public ConnectorBase {
 public:
  static constexpr bool kPerKeyGetResults = true;
  ~LazyPoolConnector() override { close(); }

 private:
  Completion run_batch(const Batch& b) override {
    if (pool_ == nullptr) pool_ = shared_pool();  // the worker thread's first batch
    if (!pool_->open) {
      Completion c;
      c.future_id = b.id;
      c.ok = false;
      c.error = "connection closed";
      return c;
    }
    std::lock_guard lock(pool_->mu);
    return MapConnector::run_on(pool_->values, b);
  }

  Pool* pool_ = nullptr;  // worker thread only
};

}  // namespace
}  // namespace lmcache::connector

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::connector::LazyPoolConnector)
