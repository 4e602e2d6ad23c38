// The l2/ suite (see suites.h): KV chunks stored and loaded end to end through real L2 storage,
// raw and through the fp8 serde wrapper, as a deployment configures it:
//
//   impl=resp   the "resp" adapter (the native connector bridge over the Redis connector) of a
//               private redis-server this process starts once (storage_testing::RedisServer:
//               127.0.0.1, a free port, no persistence, a temporary directory), 8 workers
//   impl=<connector>  with --connector-plugin: the bridge over the plugin's connector
//               (conformance/tools/plugin_loader.h register_connector_plugin_adapter_type())
//   impl=fs     the "fs" adapter (one file per object, written and renamed) over a temporary
//               directory this process makes once, no checksum, buffered I/O
//   serde=none  the adapter alone, storing the wide bfloat16 bytes
//   serde=fp8   {"type": <adapter>, "serde": {"type": "fp8"}}: the SerdeL2AdapterWrapper with fp8
//               e4m3fn over that adapter, storing one byte per element (plus a header)
//
// Each task (one batch of 1 MiB bfloat16 chunks) is timed from submit to its result (manual
// time), one task at a time. Bytes are the wide KV bytes the caller stores or loads; the
// counter stored_ratio is the bytes the storage holds per wide byte (the store result's
// bytes / the wide bytes), from which, with the bare codec rates of the wrapper/ suite,
// reports/tools computes the break-even storage bandwidth. Stores delete their keys after each
// task (untimed), so every store writes anew; loads read what one untimed store put there.
//
//   impl=resp_read_io_depth_N, impl=fs_read_io_depth_N  loads (no serde) through the adapter with
//               LMCache's read pool: N reader threads (N = 1, 4, 16, 40; resp: a connection
//               each) and the default 1536 MiB byte budget (read_io_depth, docs:
//               storage/README.md), at the largest batch of the run; beside the impl=resp / impl=fs
//               load rows, which read on the shared workers (read_io_depth 0)
//
//   impl=redis-benchmark  the server's own ceiling: Debian's redis-benchmark against the same
//               redis-server, SET (op=store) and GET (op=load) of values of the chunk size,
//               min(batch, 8) clients (the resp adapter's 8 workers), 16 × batch requests (at
//               least 128); time = requests / the rate it reports (its own start not included)
//
// Without redis-server the resp and redis-benchmark rows are skipped with the reason
// (SkipWithError). With --connector-plugin the server is started before the plugin is loaded
// and its address exported (bench_redis_endpoint(), suites.h), so that a plugin whose factory
// reads it measures its connector on the same server.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/testing/redis_benchmark.h"
#include "lmcache/testing/redis_server.h"
#include "lmcache/testing/temp_dir.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The storage of the whole run, made when a row first needs it and kept until exit: one server
// start and one directory for every row. Destroyed at exit (after the last row), which stops the
// server and removes both temporary directories.
struct Storage {
  std::mutex mu;
  std::unique_ptr<storage_testing::RedisServer> redis;
  std::string redis_error;
  std::unique_ptr<storage_testing::TempDir> dir;
};

Storage& storage() {
  static Storage s;
  return s;
}

// The private redis-server of the run, started on first use; throws std::runtime_error with
// the reason it cannot be had (remembered: later rows skip with it at once). Caller holds s.mu.
storage_testing::RedisServer& redis_locked(Storage& s) {
  if (!s.redis && s.redis_error.empty()) {
    if (!storage_testing::RedisServer::find_executable()) {
      s.redis_error = "redis-server is not installed (scripts/install-deps.sh installs it)";
    } else {
      try {
        s.redis = std::make_unique<storage_testing::RedisServer>();
      } catch (const std::exception& e) {
        s.redis_error = std::string("redis-server did not start: ") + e.what();
      }
    }
  }
  if (!s.redis) throw std::runtime_error(s.redis_error);
  return *s.redis;
}

// The adapter config of row `adapter` ("resp", "fs", or the L2 type a connector plugin was
// registered as), with `serde` ("none" or "fp8"). Throws std::runtime_error when the storage
// cannot be made (no redis-server).
Json adapter_config(const std::string& adapter, const std::string& serde,
                    std::size_t read_io_depth) {
  Storage& s = storage();
  std::lock_guard lock(s.mu);
  Json c;
  if (adapter != "resp" && adapter != "fs") {
    c = {{"type", adapter}};  // a connector plugin: its store is its own
  } else if (adapter == "resp") {
    storage_testing::RedisServer& redis = redis_locked(s);
    c = {{"type", "resp"}, {"host", redis.host()}, {"port", redis.port()}};
  } else {
    if (!s.dir) s.dir = std::make_unique<storage_testing::TempDir>("lmcache-bench-fs-");
    c = {{"type", "fs"}, {"base_path", s.dir->path().string()}};
  }
  if (serde == "fp8") c["serde"] = {{"type", "fp8"}, {"fp8_dtype", "float8_e4m3fn"}};
  if (read_io_depth > 0) c["read_io_depth"] = read_io_depth;
  return c;
}

// One row: `adapter` is the L2 type, `impl` the row's label.
void register_case(const std::string& adapter, const std::string& impl, const std::string& serde,
                   bool store, std::uint64_t size, std::size_t batch,
                   std::size_t read_io_depth = 0) {
  BenchLabels l;
  l.suite = "l2";
  l.op = store ? "store" : "load";
  l.impl = impl;
  l.serde = serde == "fp8" ? serde : std::string(kNotApplicable);
  l.dtype = "bfloat16";
  l.format = serde == "fp8" ? "float8_e4m3fn" : std::string(kNotApplicable);
  l.size_bytes = size;
  l.batch = batch;
  register_labeled(
      l,
      [=](benchmark::State& st) {
        const double task_bytes = static_cast<double>(size) * static_cast<double>(batch);
        try {
          const Json config = adapter_config(adapter, serde, read_io_depth);
          AdapterContext ctx;
          // Room for one task's temps (1.5 bytes per element for fp8) with slack.
          ctx.l1_manager = std::make_shared<L1Manager>(static_cast<std::size_t>(task_bytes * 2) +
                                                       (std::size_t{64} << 20));
          L2AdapterPtr a = create_l2_adapter(config, ctx);
          // Keys of this row only: rows share one server and one directory.
          static std::uint64_t next_key = 1;
          const std::vector<ObjectKey> keys = make_bench_keys(next_key, batch);
          next_key += batch;
          std::vector<MemoryObjPtr> wide;
          std::vector<MemoryObjPtr> dsts;
          for (std::size_t i = 0; i < batch; ++i) {
            wide.push_back(make_kv_object(DType::kBFloat16, size, 2000 + i));
            if (!store) dsts.push_back(MemoryObj::allocate(wide.back()->layout()));
          }
          std::uint64_t stored_bytes = 0;
          if (!store) {
            const L2StoreResult r = store_round_trip(*a, keys, wide);
            if (!r.is_successful()) {
              st.SkipWithError("setup store failed");
              a->close();
              return;
            }
            stored_bytes = r.bytes_transferred();
          }
          for (auto _ : st) {
            const auto t0 = Clock::now();
            bool ok = false;
            if (store) {
              const L2StoreResult r = store_round_trip(*a, keys, wide);
              ok = r.is_successful();
              stored_bytes = r.bytes_transferred();
            } else {
              ok = load_round_trip(*a, keys, dsts).all();
            }
            st.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
            if (!ok) {
              st.SkipWithError(store ? "store task failed" : "load task missed keys");
              break;
            }
            if (store) a->delete_keys(keys);  // untimed: the next store writes anew
          }
          if (!store) a->delete_keys(keys);
          a->close();
          st.counters[kStoredRatioCounter] = static_cast<double>(stored_bytes) / task_bytes;
        } catch (const std::exception& e) {
          st.SkipWithError(e.what());
          return;
        }
        const auto iters = st.iterations();
        st.SetItemsProcessed(iters * static_cast<std::int64_t>(batch));
        st.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(iters) * task_bytes));
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime();
}

// One redis-benchmark row: SET (store) or GET (load) of `size`-byte values, the clients and
// requests of a task of `batch` chunks (see the top of the file).
void register_ceiling_case(bool store, std::uint64_t size, std::size_t batch) {
  BenchLabels l;
  l.suite = "l2";
  l.op = store ? "store" : "load";
  l.impl = "redis-benchmark";
  l.serde = std::string(kNotApplicable);
  l.dtype = "bfloat16";
  l.format = std::string(kNotApplicable);
  l.size_bytes = size;
  l.batch = batch;
  register_labeled(
      l,
      [=](benchmark::State& st) {
        storage_testing::RedisBenchmarkRun run;
        run.command = store ? "set" : "get";
        run.value_bytes = size;
        run.clients = static_cast<int>(std::min<std::size_t>(batch, 8));
        run.requests = static_cast<int>(std::max<std::size_t>(128, 16 * batch));
        try {
          {
            Storage& s = storage();
            std::lock_guard lock(s.mu);
            storage_testing::RedisServer& redis = redis_locked(s);
            run.host = redis.host();
            run.port = redis.port();
          }
          for (auto _ : st) {
            st.SetIterationTime(run.requests / storage_testing::redis_benchmark_rps(run));
          }
        } catch (const std::exception& e) {
          st.SkipWithError(e.what());
          return;
        }
        st.counters[kStoredRatioCounter] = 1.0;
        const auto requests = st.iterations() * run.requests;
        st.SetItemsProcessed(requests);
        st.SetBytesProcessed(requests * static_cast<std::int64_t>(size));
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime();
}

}  // namespace

std::pair<std::string, int> bench_redis_endpoint() {
  Storage& s = storage();
  std::lock_guard lock(s.mu);
  storage_testing::RedisServer& redis = redis_locked(s);
  return {redis.host(), redis.port()};
}

void register_l2_suite(const SuiteConfig& c) {
  resp::register_resp_adapter_type();
  fs::register_fs_adapter_type();
  const std::vector<std::size_t> batches = c.batches_or_default();
  for (std::uint64_t size : c.sizes_or({1ull << 20})) {
    if (size % 2 != 0) continue;  // bfloat16 chunks
    for (std::size_t batch : batches) {
      std::vector<std::pair<std::string, std::string>> adapters = {{"resp", "resp"}, {"fs", "fs"}};
      if (!c.l2_plugin_type.empty()) adapters.emplace_back(c.l2_plugin_type, c.l2_plugin_impl);
      for (const auto& [adapter, impl] : adapters) {
        for (bool store : {true, false}) {
          for (const char* serde : {"none", "fp8"})
            register_case(adapter, impl, serde, store, size, batch);
        }
      }
      for (bool store : {true, false}) register_ceiling_case(store, size, batch);
    }
    // The read pool at LMCache's depths, loads of the run's largest batch.
    const std::size_t batch = *std::max_element(batches.begin(), batches.end());
    for (const char* adapter : {"resp", "fs"}) {
      for (std::size_t depth : {1, 4, 16, 40}) {
        register_case(adapter, std::string(adapter) + "_read_io_depth_" + std::to_string(depth),
                      "none", /*store=*/false, size, batch, depth);
      }
    }
  }
}

}  // namespace lmcache::bench
