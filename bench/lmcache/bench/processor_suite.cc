// The processor/ suite (see suites.h): AsyncSerdeProcessor's per-task cost and throughput.
//
//   processor/latency/async/noop/...          one task in flight: submit -> eventfd -> query,
//                                             p50_s / p99_s per task (the <= 20 us goal)
//   processor/throughput/async/noop/...       `batch` tasks in flight, then drained
//   processor/throughput/direct/noop/...      the same number of direct serialize() calls
//   processor/{latency,throughput}/async/fp8  the same with the fp8 serde on KV chunks, with
//                                             codec_ratio against direct calls timed between
//                                             the tasks (paused timing)
//   processor/throughput/direct/fp8           direct calls alone
//   processor/latency/handoff/...             no processor: two threads ping-pong over a pair of
//                                             eventfds (notify -> wake -> notify -> wake), the
//                                             machine's floor for any task handed to a worker
//                                             thread and signalled back; the no-op latency rows
//                                             are this plus the processor's own cost
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/core/handoff_probe.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kInFlight = 64;    // tasks in flight for the no-op throughput rows
constexpr std::size_t kFp8InFlight = 8;  // and for the fp8 rows
constexpr std::uint64_t kNoopObjectBytes = 4096;

double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

struct Serde {
  std::string name;  // "noop" or "fp8"
  SerializerPtr ser;
  DeserializerPtr deser;
};

Serde make_serde(bool fp8) {
  if (fp8) {
    return {"fp8", std::make_shared<Fp8Serializer>(), std::make_shared<Fp8Deserializer>()};
  }
  return {"noop", std::make_shared<NoopSerializer>(), std::make_shared<NoopDeserializer>()};
}

// `n` source objects of `size` bytes of bfloat16 and their serialized-size destinations.
void make_pairs(const Serializer& ser, std::uint64_t size, std::size_t n,
                std::vector<MemoryObjPtr>& srcs, std::vector<MemoryObjPtr>& dsts) {
  for (std::size_t i = 0; i < n; ++i) {
    srcs.push_back(make_kv_object(DType::kBFloat16, size, 100 + i));
    const std::size_t est =
        std::max<std::size_t>(1, ser.estimate_serialized_size(srcs.back()->layout()));
    dsts.push_back(MemoryObj::allocate(
        MemoryLayoutDesc::single({static_cast<std::int64_t>(est)}, DType::kUInt8)));
  }
}

BenchLabels labels(const char* op, const char* impl, bool fp8, std::uint64_t size,
                   std::size_t workers, std::size_t batch) {
  BenchLabels l;
  l.suite = "processor";
  l.op = op;
  l.impl = impl;
  l.serde = fp8 ? "fp8" : "noop";
  l.dtype = "bfloat16";
  l.format = fp8 ? "float8_e4m3fn" : std::string(kNotApplicable);
  l.size_bytes = size;
  l.threads = workers;
  l.batch = batch;
  return l;
}

// Seconds one direct pass of the serde over `tasks` pairs takes (an untimed pass interleaved
// with the timed tasks, for codec_ratio).
double direct_pass_seconds(const Serde& s, const std::vector<MemoryObjPtr>& srcs,
                           const std::vector<MemoryObjPtr>& dsts, std::size_t tasks) {
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < tasks; ++i) {
    dsts[i % dsts.size()]->set_used_size(
        s.ser->serialize(*srcs[i % srcs.size()], *dsts[i % dsts.size()], bench_key()));
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void register_latency(bool fp8, std::uint64_t size, std::size_t workers) {
  register_labeled(
      labels("latency", "async", fp8, size, workers, 1),
      [=](benchmark::State& st) {
        const Serde s = make_serde(fp8);
        std::vector<MemoryObjPtr> srcs, dsts;
        make_pairs(*s.ser, size, 1, srcs, dsts);
        AsyncSerdeProcessor p(s.ser, s.deser, workers);
        std::vector<double> latencies;
        latencies.reserve(1 << 16);
        double direct_s = 0;
        for (auto _ : st) {
          const auto t0 = Clock::now();
          if (!serialize_round_trip(p, srcs, dsts)) {
            st.SkipWithError("serialize task failed");
            break;
          }
          latencies.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
          if (fp8) {
            st.PauseTiming();
            direct_s += direct_pass_seconds(s, srcs, dsts, 1);
            st.ResumeTiming();
          }
        }
        p.close();
        st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations() * size));
        st.counters[kLatencyP50Counter] = percentile(latencies, 0.5);
        st.counters[kLatencyP99Counter] = percentile(latencies, 0.99);
        if (fp8 && !latencies.empty()) {
          double sum = 0;
          for (double x : latencies) sum += x;
          st.counters[kCodecRatioCounter] = direct_s / sum;
        }
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void register_handoff() {
  BenchLabels l = labels("latency", "handoff", false, 0, 1, 1);
  l.serde = kNotApplicable;
  l.dtype = kNotApplicable;
  register_labeled(l,
                   [](benchmark::State& st) {
                     // The round trip the wrapper's adaptive options weigh
                     // (lmcache/core/handoff_probe.h).
                     HandoffPinger pinger;
                     std::vector<double> latencies;
                     latencies.reserve(1 << 16);
                     for (auto _ : st) {
                       const std::optional<std::chrono::nanoseconds> took =
                           pinger.round_trip(std::chrono::seconds(10));
                       if (!took) {
                         st.SkipWithError("the partner thread did not answer within 10 s");
                         break;
                       }
                       latencies.push_back(std::chrono::duration<double>(*took).count());
                     }
                     st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
                     st.counters[kLatencyP50Counter] = percentile(latencies, 0.5);
                     st.counters[kLatencyP99Counter] = percentile(latencies, 0.99);
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void register_throughput(bool fp8, std::uint64_t size, std::size_t workers, std::size_t batch) {
  register_labeled(labels("throughput", "async", fp8, size, workers, batch),
                   [=](benchmark::State& st) {
                     const Serde s = make_serde(fp8);
                     std::vector<MemoryObjPtr> srcs, dsts;
                     make_pairs(*s.ser, size, batch, srcs, dsts);
                     AsyncSerdeProcessor p(s.ser, s.deser, workers);
                     double timed_s = 0;
                     double direct_s = 0;
                     for (auto _ : st) {
                       const auto t0 = Clock::now();
                       if (serialize_pipelined(p, srcs, dsts, batch) != batch) {
                         st.SkipWithError("a serialize task failed");
                         break;
                       }
                       timed_s += std::chrono::duration<double>(Clock::now() - t0).count();
                       if (fp8) {
                         st.PauseTiming();
                         direct_s += direct_pass_seconds(s, srcs, dsts, batch);
                         st.ResumeTiming();
                       }
                     }
                     p.close();
                     const auto tasks = st.iterations() * static_cast<std::int64_t>(batch);
                     st.SetItemsProcessed(tasks);
                     st.SetBytesProcessed(tasks * static_cast<std::int64_t>(size));
                     // With workers > 1 this exceeds 1: the pool runs tasks in parallel.
                     if (fp8 && timed_s > 0) st.counters[kCodecRatioCounter] = direct_s / timed_s;
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void register_direct(bool fp8, std::uint64_t size, std::size_t batch) {
  register_labeled(labels("throughput", "direct", fp8, size, 1, batch),
                   [=](benchmark::State& st) {
                     const Serde s = make_serde(fp8);
                     std::vector<MemoryObjPtr> srcs, dsts;
                     make_pairs(*s.ser, size, batch, srcs, dsts);
                     for (auto _ : st) {
                       for (std::size_t i = 0; i < batch; ++i) {
                         // What the processor's job does per pair: serialize, then narrow the
                         // destination.
                         dsts[i]->set_used_size(s.ser->serialize(*srcs[i], *dsts[i], bench_key()));
                       }
                       benchmark::ClobberMemory();
                     }
                     const auto tasks = st.iterations() * static_cast<std::int64_t>(batch);
                     st.SetItemsProcessed(tasks);
                     st.SetBytesProcessed(tasks * static_cast<std::int64_t>(size));
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

}  // namespace

void register_processor_suite(const SuiteConfig& c) {
  const std::vector<std::size_t> workers = c.threads.empty() ? default_threads(c.quick) : c.threads;
  // No-op serde: the processor's own cost per task, above the machine's handoff floor.
  register_handoff();
  for (std::size_t w : workers) {
    register_latency(false, kNoopObjectBytes, w);
    register_throughput(false, kNoopObjectBytes, w, kInFlight);
  }
  register_direct(false, kNoopObjectBytes, kInFlight);
  // fp8 on KV chunks (1 MiB bfloat16 unless --sizes says otherwise).
  for (std::uint64_t size : c.sizes_or({1ull << 20})) {
    if (size % 2 != 0) continue;  // bfloat16 objects
    for (std::size_t w : workers) {
      register_latency(true, size, w);
      register_throughput(true, size, w, kFp8InFlight);
    }
    register_direct(true, size, kFp8InFlight);
  }
}

}  // namespace lmcache::bench
