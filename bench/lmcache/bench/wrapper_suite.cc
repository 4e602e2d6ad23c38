// The wrapper/ suite (see suites.h): a batch of bfloat16 KV chunks stored and loaded end to
// end, through four implementations of the same operation:
//
// Every serde row exists for serde=fp8 (the fp8 serde as configured by default) and
// serde=fp8_simd (the same serde with its kernel pinned to SIMD; fp8_row_options()).
//
//   impl=wrapper       SerdeL2AdapterWrapper(fast mock, fp8 processor, L1) with its default
//                      options, as a user gets it: temps from L1, serialize, inner store /
//                      inner load, deserialize, release temps, each serde step inline or
//                      handed to a worker as the adaptive thresholds choose (InlinePolicy:
//                      the machine's hand-off cost against the serde's measured rate), and
//                      finish_on_submit; one task at a time, so every step of a task waits for
//                      the one before
//   impl=wrapper_submitted  the same wrapper with every serde step handed to a worker and
//                      every drain left to its loop (inline thresholds 0, finish_on_submit off):
//                      what the defaults were before they adapted (serde=fp8 only)
//   impl=wrapper_pipelined  the default wrapper with kPipelineDepth tasks (distinct keys) in
//                      flight, as a controller drives it: one task's inner store overlaps the
//                      next one's serialize
//   impl=wrapper_inline  the same wrapper with every shortcut forced
//                      (SerdeWrapperOptions::inline_serialize_max_bytes /
//                      inline_deserialize_max_bytes = the task's wide bytes, finish_on_submit):
//                      serialize on the submitting thread, and the fast mock's result (it runs
//                      idle tasks on the submitter) taken and deserialized there too, so a task
//                      completes inside its submit; one task at a time, like impl=wrapper
//   impl=inner         the fast mock alone, storing the wide bytes (no serde)
//   impl=processor     AsyncSerdeProcessor(fp8) alone: one serialize / deserialize task of the
//                      batch into preallocated temps
//   impl=serde_direct  the bare serde: Fp8Serializer / Fp8Deserializer called in a loop (the
//                      "bare codec" of the >= 70% goal)
//
// Each task is timed from submit to its result (manual time); setup and clean-up (deleting
// the stored keys so the next store really copies) are not. Wrapper and processor rows carry
// codec_ratio = their throughput / the bare serde's on the same batch, timed interleaved (one
// untimed direct pass after every task). Wrapper rows also show submit_s (the submit call:
// validation and the batched L1 temp reservation) and the wrapper's own per-step means
// (serialize_s, inner_store_s / inner_load_s, deserialize_s) in the console and JSON.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/metrics_export.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kMaxDefaultTaskBytes = 128ull << 20;

// Tasks in flight in the wrapper_pipelined rows, and the most wide bytes they may hold in the
// default grid.
constexpr std::size_t kPipelineDepth = 4;
constexpr std::uint64_t kMaxDefaultPipelinedBytes = 64ull << 20;

enum class Impl {
  kWrapper,
  kWrapperSubmitted,
  kWrapperInline,
  kWrapperPipelined,
  kInner,
  kProcessor,
  kSerdeDirect
};

const char* impl_name(Impl i) {
  switch (i) {
    case Impl::kWrapper:
      return "wrapper";
    case Impl::kWrapperSubmitted:
      return "wrapper_submitted";
    case Impl::kWrapperInline:
      return "wrapper_inline";
    case Impl::kWrapperPipelined:
      return "wrapper_pipelined";
    case Impl::kInner:
      return "inner";
    case Impl::kProcessor:
      return "processor";
    case Impl::kSerdeDirect:
      return "serde_direct";
  }
  return "invalid";
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The objects of one benchmark instance: the batch of wide chunks, their serialized temps
// (processor / serde_direct), and load destinations.
struct Batch {
  std::vector<ObjectKey> keys;
  std::vector<MemoryObjPtr> wide;
  std::vector<MemoryObjPtr> temps;
  std::vector<MemoryObjPtr> dsts;
  std::size_t elements = 0;
};

Batch make_batch(std::uint64_t size, std::size_t n, bool temps, bool dsts) {
  Batch b;
  b.elements = size / 2;
  b.keys = make_bench_keys(1, n);
  const auto wide_layout =
      MemoryLayoutDesc::single({static_cast<std::int64_t>(b.elements)}, DType::kBFloat16);
  const auto temp_layout = MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(Fp8Serializer().estimate_serialized_size(wide_layout))},
      DType::kUInt8);
  for (std::size_t i = 0; i < n; ++i) {
    b.wide.push_back(make_kv_object(DType::kBFloat16, size, 1000 + i));
    if (temps) b.temps.push_back(MemoryObj::allocate(temp_layout));
    if (dsts) b.dsts.push_back(MemoryObj::allocate(wide_layout));
  }
  return b;
}

// The serializer / deserializer pair of the rows' serde `serde`: "fp8" (the fp8 serde as
// configured by default) or "fp8_simd" (the same serde pinned to the SIMD kernels).
SerializerPtr make_ser(const std::string& serde) {
  return std::make_shared<Fp8Serializer>(fp8_row_options(serde));
}
DeserializerPtr make_deser(const std::string& serde) {
  return std::make_shared<Fp8Deserializer>(fp8_row_options(serde));
}

// One pass of the bare serde over the batch (store: serialize; load: deserialize).
void direct_pass(Serializer& ser, Deserializer& deser, Batch& b, bool store) {
  for (std::size_t i = 0; i < b.wide.size(); ++i) {
    if (store) {
      b.temps[i]->set_used_size(ser.serialize(*b.wide[i], *b.temps[i], bench_key()));
    } else {
      deser.deserialize(*b.temps[i], *b.dsts[i], bench_key());
    }
  }
}

void register_case(const std::string& serde, bool store, Impl impl, std::uint64_t size,
                   std::size_t batch) {
  BenchLabels l;
  l.suite = "wrapper";
  l.op = store ? "store" : "load";
  l.impl = impl_name(impl);
  l.serde = impl == Impl::kInner ? std::string(kNotApplicable) : serde;
  l.dtype = "bfloat16";
  l.format = impl == Impl::kInner ? std::string(kNotApplicable) : "float8_e4m3fn";
  l.size_bytes = size;
  l.threads = impl == Impl::kInner ? 0 : 1;  // fp8 max_workers
  l.batch = batch;
  register_labeled(
      l,
      [=](benchmark::State& st) {
        const bool pipelined = impl == Impl::kWrapperPipelined;
        const std::size_t depth = pipelined ? kPipelineDepth : 1;  // tasks per iteration
        const double batch_bytes =
            static_cast<double>(size) * static_cast<double>(batch) * static_cast<double>(depth);
        const bool wrapped = impl == Impl::kWrapper || impl == Impl::kWrapperSubmitted ||
                             impl == Impl::kWrapperInline || pipelined;
        const bool want_ratio = wrapped || impl == Impl::kProcessor;
        Batch b = make_batch(size, batch, impl != Impl::kInner || want_ratio, !store);
        SerializerPtr ser = make_ser(serde);
        DeserializerPtr deser = make_deser(serde);
        if (impl != Impl::kInner) direct_pass(*ser, *deser, b, true);  // temps hold valid codes
        double total_s = 0;
        // codec_ratio: after every timed task, one untimed direct pass over the same batch; the
        // interleaving keeps both sides under the same machine load.
        double direct_s = 0;
        auto time_direct_pass = [&] {
          if (!want_ratio) return;
          const auto t0 = Clock::now();
          for (std::size_t t = 0; t < depth; ++t) direct_pass(*ser, *deser, b, store);
          direct_s += seconds_since(t0);
        };
        try {
          if (impl == Impl::kSerdeDirect) {
            for (auto _ : st) {
              const auto t0 = Clock::now();
              direct_pass(*ser, *deser, b, store);
              const double s = seconds_since(t0);
              st.SetIterationTime(s);
              total_s += s;
            }
          } else if (impl == Impl::kProcessor) {
            AsyncSerdeProcessor p(make_ser(serde), make_deser(serde), 1);
            for (auto _ : st) {
              const auto t0 = Clock::now();
              const bool ok = store ? serialize_round_trip(p, b.wide, b.temps)
                                    : deserialize_round_trip(p, b.temps, b.dsts);
              const double s = seconds_since(t0);
              if (!ok) {
                st.SkipWithError("serde task failed");
                break;
              }
              st.SetIterationTime(s);
              total_s += s;
              time_direct_pass();
            }
            p.close();
          } else {
            // Room for the batches in flight (wide bytes; the wrapper stores one byte per
            // element) and their temps (1.5 bytes per element), with slack for the rounding.
            const auto capacity = static_cast<std::uint64_t>(batch_bytes * 2) + (64ull << 20);
            WrapperRig rig;
            L2AdapterPtr bare;
            L2AdapterInterface* a = nullptr;
            if (wrapped) {
              SerdeWrapperOptions options;
              if (impl == Impl::kWrapperInline) {
                options.inline_serialize_max_bytes = size * batch;
                options.inline_deserialize_max_bytes = size * batch;  // >= the serialized bytes
                options.finish_on_submit = true;
              } else if (impl == Impl::kWrapperSubmitted) {
                options.inline_serialize_max_bytes = 0;
                options.inline_deserialize_max_bytes = 0;
                options.finish_on_submit = false;
              }
              rig = make_wrapper_rig(fp8_row_config(serde), capacity, capacity, options);
              a = rig.adapter.get();
            } else {
              bare = make_fast_mock(capacity);
              a = bare.get();
            }
            // Pipelined rows: task t stores / loads keys of its own (the same wide data, its own
            // load destinations).
            std::vector<std::vector<ObjectKey>> task_keys{b.keys};
            std::vector<std::vector<MemoryObjPtr>> task_dsts{b.dsts};
            for (std::size_t t = 1; t < depth; ++t) {
              task_keys.push_back(make_bench_keys(1 + t * batch, batch));
              std::vector<MemoryObjPtr> dsts;
              for (const MemoryObjPtr& d : b.dsts) dsts.push_back(MemoryObj::allocate(d->layout()));
              task_dsts.push_back(std::move(dsts));
            }
            const std::vector<std::vector<MemoryObjPtr>> task_wide(depth, b.wide);
            if (!store && store_pipelined(*a, task_keys, task_wide) != depth) {
              st.SkipWithError("setup store failed");
              return;
            }
            double submit_total = 0;
            const std::chrono::nanoseconds spun_before = caller_spun();
            for (auto _ : st) {
              const auto t0 = Clock::now();
              bool ok = false;
              double submit_s = 0;
              if (pipelined) {
                ok = (store ? store_pipelined(*a, task_keys, task_wide)
                            : load_pipelined(*a, task_keys, task_dsts)) == depth;
              } else if (store) {
                ok = store_round_trip(*a, b.keys, b.wide, &submit_s).is_successful();
              } else {
                ok = load_round_trip(*a, b.keys, b.dsts, &submit_s).all();
              }
              const double s = seconds_since(t0);
              submit_total += submit_s;
              if (!ok) {
                st.SkipWithError(store ? "store task failed" : "load task missed keys");
                break;
              }
              st.SetIterationTime(s);
              total_s += s;
              if (store) {  // untimed: the next store must copy again
                for (const auto& keys : task_keys) a->delete_keys(keys);
              }
              time_direct_pass();
            }
            // The CPU the caller burnt re-checking the fd before it slept, per task (console /
            // JSON only): the price of --caller-spin-us.
            if (!pipelined && st.iterations() > 0) {
              st.counters["caller_spin_s"] =
                  std::chrono::duration<double>(caller_spun() - spun_before).count() /
                  static_cast<double>(st.iterations());
            }
            // Where a wrapped task's time goes (console / JSON only, not exported): the submit call
            // (temp reservation in L1) and the mean of each step the wrapper times itself.
            if (wrapped && st.iterations() > 0) {
              const auto n = static_cast<double>(st.iterations());
              if (!pipelined) st.counters["submit_s"] = submit_total / n;
              const Json steps = static_cast<SerdeL2AdapterWrapper*>(a)->metrics().summary().at(
                  "step_latency_seconds");
              const std::vector<std::string> names =
                  store ? std::vector<std::string>{"serialize", "inner_store"}
                        : std::vector<std::string>{"inner_load", "deserialize"};
              for (const std::string& step : names) {
                if (steps.contains(step)) st.counters[step + "_s"] = steps[step].value("mean", 0.0);
              }
            }
            a->close();
          }
        } catch (const std::exception& e) {
          st.SkipWithError(e.what());
          return;
        }
        const auto iters = st.iterations();
        st.SetItemsProcessed(iters * static_cast<std::int64_t>(batch * depth));
        st.SetBytesProcessed(static_cast<std::int64_t>(static_cast<double>(iters) * batch_bytes));
        if (want_ratio && total_s > 0) st.counters[kCodecRatioCounter] = direct_s / total_s;
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseManualTime();
}

}  // namespace

void register_wrapper_suite(const SuiteConfig& c) {
  const std::vector<std::uint64_t> sizes =
      c.sizes_or(c.quick ? std::vector<std::uint64_t>{1ull << 20}
                         : std::vector<std::uint64_t>{256ull << 10, 1ull << 20, 8ull << 20});
  for (std::uint64_t size : sizes) {
    if (size % 2 != 0) continue;  // bfloat16 chunks
    for (std::size_t batch : c.batches_or_default()) {
      // The default grid skips tasks over 128 MiB (8 MiB x 64): one such task takes seconds
      // with the scalar serde and would dominate the run. Explicit --sizes / --batches keep all.
      if (c.sizes.empty() && c.batches.empty() && size * batch > kMaxDefaultTaskBytes) continue;
      for (bool store : {true, false}) {
        register_case("fp8", store, Impl::kInner, size, batch);
        for (const char* serde : {"fp8", kFp8SimdRow}) {
          for (Impl impl : {Impl::kWrapper, Impl::kWrapperSubmitted, Impl::kWrapperInline,
                            Impl::kWrapperPipelined, Impl::kProcessor, Impl::kSerdeDirect}) {
            if (impl == Impl::kWrapperSubmitted && std::string(serde) != "fp8") continue;
            // Pipelined rows keep at most 64 MiB of wide data in flight by default: past the
            // process HostBufferPool's bound (256 MiB of temps and stored copies) every task
            // pays fresh page faults again, which measures the VM, not the wrapper.
            if (impl == Impl::kWrapperPipelined && c.sizes.empty() && c.batches.empty() &&
                size * batch * kPipelineDepth > kMaxDefaultPipelinedBytes) {
              continue;
            }
            register_case(serde, store, impl, size, batch);
          }
        }
      }
    }
  }
}

}  // namespace lmcache::bench
