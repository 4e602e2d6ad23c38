// The l1/ suite (see suites.h): L1Manager write cycles over a batch of keys.
//
//   l1/reserve_finish/cycle  reserve_write(new) -> finish_write -> delete_keys: an object's
//                            allocation, zero fill, bookkeeping and release
//   l1/temp_cycle/cycle      reserve_write(temporary) -> finish_write_and_reserve_read ->
//                            finish_read (which frees it): the wrapper's store-path temp
#include <string>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/l1/l1_manager.h"

namespace lmcache::bench {
namespace {

void register_case(bool temporary, std::uint64_t size, std::size_t batch) {
  BenchLabels l;
  l.suite = "l1";
  l.op = temporary ? "temp_cycle" : "reserve_finish";
  l.impl = "cycle";
  l.dtype = "uint8";
  l.size_bytes = size;
  l.threads = 1;
  l.batch = batch;
  register_labeled(l,
                   [=](benchmark::State& st) {
                     L1Manager l1(size * batch * 2 + (1ull << 20));
                     const std::vector<ObjectKey> keys = make_bench_keys(1, batch);
                     const std::vector<bool> flags(batch, temporary);
                     const auto layout =
                         MemoryLayoutDesc::single({static_cast<std::int64_t>(size)}, DType::kUInt8);
                     for (auto _ : st) {
                       const auto reserved =
                           l1.reserve_write(keys, flags, layout, ReserveMode::kNew);
                       if (reserved.front().error != L1Error::kSuccess) {
                         st.SkipWithError("reserve_write failed");
                         break;
                       }
                       if (temporary) {
                         l1.finish_write_and_reserve_read(keys);
                         l1.finish_read(keys);  // the last reader of a temporary frees it
                       } else {
                         l1.finish_write(keys);
                         l1.delete_keys(keys);
                       }
                     }
                     const auto n = st.iterations() * static_cast<std::int64_t>(batch);
                     st.SetItemsProcessed(n);
                     st.SetBytesProcessed(n * static_cast<std::int64_t>(size));
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace

void register_l1_suite(const SuiteConfig& c) {
  for (std::uint64_t size : c.sizes_or({4ull << 10, 1ull << 20})) {
    for (std::size_t batch : c.batches_or_default()) {
      register_case(false, size, batch);
      register_case(true, size, batch);
    }
  }
}

}  // namespace lmcache::bench
