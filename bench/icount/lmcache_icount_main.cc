// lmcache-icount: fixed-size workloads for the instruction-count gate (bench/icount/gate.py).
//
// Each workload is prepared outside the measured region (buffers, input data, threads), then
// run once between
//   CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION;  ...  CALLGRIND_STOP_INSTRUMENTATION;
//   CALLGRIND_DUMP_STATS_AT("<workload name>");
// so that, under `valgrind --tool=callgrind --instr-atstart=no`, each dump holds exactly that
// workload's instructions. Outside valgrind the macros are no-ops and the binary just runs.
//
// Workloads (names are the baseline keys):
//   codec/scalar/{encode,decode}/<dtype>/<format>     the reference codec (what the fp8 serde
//                                                     calls), 256 Ki elements
//   codec/simd_sse4/{encode,decode}/<dtype>/<format>  fp8_encode_fast / fp8_decode_fast pinned
//                                                     to Highway's SSE4 target, one thread:
//                                                     every x86-64 CI machine (and valgrind,
//                                                     which has no AVX-512) runs it, so the
//                                                     count does not depend on the CPU
//   processor/noop/round_trip                         200 x (submit -> eventfd -> query) on an
//                                                     AsyncSerdeProcessor(noop, 1 worker)
//   processor/noop/pipelined                          4 x 64 tasks in flight, then drained
//   wrapper/fp8/store_load                            16 rounds of store + load of 4 bfloat16
//                                                     chunks of 16 KiB through the wrapper over
//                                                     the fast mock (fp8, 1 worker)
//   wrapper/fp8_simd/store_load                       the same with the fp8 serde's kernel
//                                                     pinned to SIMD and SSE4 (its "kernel" /
//                                                     "simd_target" options):
//                                                     mostly the wrapper's
//                                                     own bookkeeping, L1 temps and copies
//   wrapper/inner/store_load                          the same rounds on the mock alone
// The multithreaded workloads (processor, wrapper) are counted over all threads; their
// run-to-run spread is measured by gate.py --runs and recorded in baselines.json.
//
// Flags: --list (names), --info (JSON: toolchain and the pinned SIMD target), --only NAME
// (repeatable; default all). An unknown flag or --only name exits 2 naming it; a workload that
// fails exits 1 naming it.
#include <gnu/libc-version.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "lmcache/bench/build_info.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/serde/async_serde_processor.h"

namespace {

using namespace lmcache;         // NOLINT: a small tool
using namespace lmcache::bench;  // NOLINT

constexpr std::size_t kCodecElements = std::size_t{1} << 18;
constexpr const char* kPinnedTarget = "SSE4";

// A workload: prepare() runs unmeasured and returns the measured body.
struct Workload {
  std::string name;
  std::function<std::function<void()>()> prepare;
};

std::int64_t pinned_target_bit() {
  for (std::int64_t t : fp8::fp8_simd_targets()) {
    if (fp8::fp8_simd_target_name(t) == kPinnedTarget) return t;
  }
  return 0;
}

void add_codec_workloads(std::vector<Workload>& out) {
  for (bool simd : {false, true}) {
    for (bool encode : {true, false}) {
      for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
        for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
          const std::string name = std::string("codec/") + (simd ? "simd_sse4" : "scalar") + "/" +
                                   (encode ? "encode/" : "decode/") +
                                   std::string(dtype_name(dtype)) + "/" +
                                   std::string(fp8_format_name(format));
          out.push_back(
              {name, [=]() -> std::function<void()> {
                 const std::size_t n = kCodecElements;
                 auto wide = std::make_shared<std::vector<std::byte>>(n * element_size(dtype));
                 fill_kv_values(*wide, dtype, 1);
                 auto codes = std::make_shared<std::vector<std::uint8_t>>(n);
                 fp8_encode(*wide, dtype, n, *codes, format, Fp8Overflow::kNonSaturating);
                 const fp8::KernelOptions opt{.threads = 1,
                                              .backend = fp8::Fp8Backend::kSimd,
                                              .simd_target = simd ? pinned_target_bit() : 0};
                 if (simd && opt.simd_target == 0) {
                   throw std::runtime_error(std::string("SIMD target ") + kPinnedTarget +
                                            " is not available on this CPU");
                 }
                 return [=] {
                   if (encode && simd) {
                     fp8::fp8_encode_fast(*wide, dtype, n, *codes, format,
                                          Fp8Overflow::kNonSaturating, opt);
                   } else if (encode) {
                     fp8_encode(*wide, dtype, n, *codes, format, Fp8Overflow::kNonSaturating);
                   } else if (simd) {
                     fp8::fp8_decode_fast(*codes, n, *wide, dtype, format, opt);
                   } else {
                     fp8_decode(*codes, n, *wide, dtype, format);
                   }
                 };
               }});
        }
      }
    }
  }
}

void add_processor_workloads(std::vector<Workload>& out) {
  out.push_back({"processor/noop/round_trip", []() -> std::function<void()> {
                   auto p = std::make_shared<AsyncSerdeProcessor>(
                       std::make_shared<NoopSerializer>(), std::make_shared<NoopDeserializer>(), 1);
                   auto src = make_kv_object(DType::kBFloat16, 4096, 1);
                   auto dst = MemoryObj::allocate(MemoryLayoutDesc::single({4096}, DType::kUInt8));
                   serialize_round_trip(*p, {src}, {dst});  // warm the paths once, unmeasured
                   return [=] {
                     for (int i = 0; i < 200; ++i) {
                       if (!serialize_round_trip(*p, {src}, {dst})) {
                         throw std::runtime_error("noop serialize failed");
                       }
                     }
                   };
                 }});
  out.push_back({"processor/noop/pipelined", []() -> std::function<void()> {
                   auto p = std::make_shared<AsyncSerdeProcessor>(
                       std::make_shared<NoopSerializer>(), std::make_shared<NoopDeserializer>(), 1);
                   std::vector<MemoryObjPtr> srcs{make_kv_object(DType::kBFloat16, 4096, 1)};
                   std::vector<MemoryObjPtr> dsts{
                       MemoryObj::allocate(MemoryLayoutDesc::single({4096}, DType::kUInt8))};
                   serialize_pipelined(*p, srcs, dsts, 64);
                   return [=] {
                     for (int i = 0; i < 4; ++i) {
                       if (serialize_pipelined(*p, srcs, dsts, 64) != 64) {
                         throw std::runtime_error("noop pipelined serialize failed");
                       }
                     }
                   };
                 }});
}

void add_wrapper_workloads(std::vector<Workload>& out) {
  for (const char* serde : {"fp8", kFp8SimdRow, ""}) {
    const bool wrapped = serde[0] != '\0';
    out.push_back(
        {wrapped ? std::string("wrapper/") + serde + "/store_load" : "wrapper/inner/store_load",
         [wrapped, serde]() -> std::function<void()> {
           constexpr std::size_t kChunk = 16 << 10;
           constexpr std::size_t kBatch = 4;
           struct State {
             WrapperRig rig;
             L2AdapterPtr bare;
             L2AdapterInterface* adapter = nullptr;
             std::vector<MemoryObjPtr> wide;
             std::vector<MemoryObjPtr> dsts;
           };
           auto s = std::make_shared<State>();
           if (wrapped) {
             const bool pinned = std::string(serde) == kFp8SimdRow;
             s->rig = make_wrapper_rig(fp8_row_config(serde, pinned ? kPinnedTarget : ""),
                                       16ull << 20, 16ull << 20);
             s->adapter = s->rig.adapter.get();
           } else {
             s->bare = make_fast_mock(16ull << 20);
             s->adapter = s->bare.get();
           }
           for (std::size_t i = 0; i < kBatch; ++i) {
             s->wide.push_back(make_kv_object(DType::kBFloat16, kChunk, 10 + i));
             s->dsts.push_back(make_kv_object(DType::kBFloat16, kChunk, 20 + i));
           }
           // Warm-up round with its own keys, unmeasured.
           const auto warm = make_bench_keys(1u << 20, kBatch);
           store_round_trip(*s->adapter, warm, s->wide);
           load_round_trip(*s->adapter, warm, s->dsts);
           s->adapter->delete_keys(warm);
           return [s] {
             for (std::uint64_t round = 0; round < 16; ++round) {
               const auto keys = make_bench_keys(round * kBatch, kBatch);
               if (!store_round_trip(*s->adapter, keys, s->wide).is_successful() ||
                   !load_round_trip(*s->adapter, keys, s->dsts).all()) {
                 throw std::runtime_error("wrapper store/load round failed");
               }
               s->adapter->delete_keys(keys);
             }
           };
         }});
  }
}

std::vector<Workload> all_workloads() {
  std::vector<Workload> w;
  add_codec_workloads(w);
  add_processor_workloads(w);
  add_wrapper_workloads(w);
  return w;
}

int run(int argc, char** argv) {
  std::set<std::string> only;
  bool list = false;
  bool info = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--list") {
      list = true;
    } else if (a == "--info") {
      info = true;
    } else if (a == "--only" && i + 1 < argc) {
      only.insert(argv[++i]);
    } else {
      const bool help = a == "--help" || a == "-h";
      if (!help) {
        std::fprintf(stderr, "lmcache-icount: %s\n",
                     a == "--only" ? "--only needs a workload name (see --list)"
                                   : ("unknown argument '" + a + "'").c_str());
      }
      std::fprintf(help ? stdout : stderr,
                   "usage: lmcache-icount [--list] [--info] [--only NAME]...\n"
                   "Run under valgrind --tool=callgrind --instr-atstart=no (see "
                   "bench/icount/gate.py).\n");
      return help ? 0 : 2;
    }
  }
  const std::vector<Workload> workloads = all_workloads();
  for (const std::string& name : only) {
    const bool known = std::any_of(workloads.begin(), workloads.end(),
                                   [&](const Workload& w) { return w.name == name; });
    if (!known) {
      std::fprintf(stderr, "lmcache-icount: --only '%s' names no workload (see --list)\n",
                   name.c_str());
      return 2;
    }
  }
  if (list) {
    for (const auto& w : workloads) std::printf("%s\n", w.name.c_str());
    return 0;
  }
  if (info) {
    const std::int64_t bit = pinned_target_bit();
    nlohmann::json j = {
        {"version", LMCACHE_BENCH_VERSION},   {"git_sha", LMCACHE_BENCH_GIT_SHA},
        {"compiler", LMCACHE_BENCH_COMPILER}, {"build_type", LMCACHE_BENCH_BUILD_TYPE},
        {"glibc", gnu_get_libc_version()},    {"simd_target", kPinnedTarget},
        {"simd_target_available", bit != 0},  {"codec_elements", kCodecElements}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  int ran = 0;
  for (const auto& w : workloads) {
    if (!only.empty() && !only.count(w.name)) continue;
    try {
      std::function<void()> body = w.prepare();
      CALLGRIND_ZERO_STATS;
      CALLGRIND_START_INSTRUMENTATION;
      body();
      CALLGRIND_STOP_INSTRUMENTATION;
      CALLGRIND_DUMP_STATS_AT(w.name.c_str());
    } catch (const std::exception& e) {
      CALLGRIND_STOP_INSTRUMENTATION;
      std::fprintf(stderr, "lmcache-icount: %s: %s\n", w.name.c_str(), e.what());
      return 1;
    }
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "lmcache-icount: no workload selected\n");
    return 2;
  }
  std::printf("lmcache-icount: %d workload(s) ran\n", ran);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lmcache::cli::guarded_main("lmcache-icount", [&] { return run(argc, argv); });
}
