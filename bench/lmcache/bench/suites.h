// File: lmcache/bench/suites.h
//
// The benchmark suites of lmcache-bench, registered programmatically (register_labeled()) so
// that the sizes, thread counts, devices and plugin serdes of a run decide what exists:
//
//   codec/      fp8 encode / decode per (dtype, format, size, threads, device) with the scalar
//               reference codec and the SIMD kernels (and the CUDA kernels on a GPU), through
//               the same entry points the serde uses (lmcache::fp8_encode for the reference,
//               lmcache::fp8::fp8_encode_fast for the fast backends). Supersedes the
//               devices area's lmcache-bench-kernels for everything but its per-SIMD-target rows.
//   roofline/   memcpy (CPU; device-to-device copy on a GPU) of the same bytes. Every codec row
//               also measures its own roofline (roofline.h: the same copy on the row's own
//               buffers, right after its timed loop, with its spread) and carries
//               roofline_ratio = its throughput / that copy's median.
//   processor/  AsyncSerdeProcessor: per-task latency (submit -> eventfd -> query) with a no-op
//               serde, throughput with tasks in flight, and direct serializer calls.
//   wrapper/    SerdeL2AdapterWrapper store / load end to end over a fast mock adapter, the
//               mock alone ("inner"), the AsyncSerdeProcessor alone, and the bare serde
//               ("serde_direct"), for KV-sized chunks and batches.
//   l2/         KV chunks stored and loaded through real L2 storage (the resp adapter over a
//               private redis-server, the fs adapter over a temporary directory), raw and
//               through the fp8 serde wrapper (l2_suite.cc).
//   l1/         L1Manager reserve_write / finish cycles.
//   serde/      every serde of the conformance registry (the reference fp8 serdes and those of
//               --plugin), serialize and deserialize side by side.
//
// Byte convention: the codec and roofline suites count bytes read + written (SetBytesProcessed);
// the processor, wrapper, l2, serde and l1 suites count the bytes of the wide (unquantised) objects
// handled, i.e. what a caller stores or loads. Items: elements (codec), tasks (processor),
// chunks (wrapper, serde), keys (l1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/core/dtype.h"

namespace lmcache::conformance {
class Registry;
}

namespace lmcache::bench {

struct SuiteConfig {
  bool quick = false;
  bool cpu = true;    // register the CPU codec rows
  bool cuda = false;  // register the CUDA codec rows (the caller checked a GPU is usable)
  std::vector<std::size_t> threads;  // empty: defaults
  std::vector<std::uint64_t> sizes;  // empty: defaults
  std::vector<std::size_t> batches;  // empty: defaults
  // The l2/ rows of a native connector plugin: the implementation name its rows carry (impl)
  // and the L2 adapter type it was registered as; empty: none.
  std::string l2_plugin_impl;
  std::string l2_plugin_type;

  // The object sizes to run: `sizes`, else `defaults`.
  std::vector<std::uint64_t> sizes_or(std::vector<std::uint64_t> defaults) const {
    return sizes.empty() ? std::move(defaults) : sizes;
  }
  // The batch sizes to run: `batches`, else 1 and 8 (quick) or 1, 8 and 64.
  std::vector<std::size_t> batches_or_default() const {
    if (!batches.empty()) return batches;
    return quick ? std::vector<std::size_t>{1, 8} : std::vector<std::size_t>{1, 8, 64};
  }
};

// register_codec_suite()
//
// The codec/ and roofline/ rows for config.cpu / config.cuda. Throws std::invalid_argument
// when a size is not a whole number of float32 elements.
void register_codec_suite(const SuiteConfig& config);

// register_processor_suite()
//
// The processor/ rows: no-op latency and throughput per worker count, and fp8 on 1 MiB
// bfloat16 chunks (or config.sizes).
void register_processor_suite(const SuiteConfig& config);

// register_wrapper_suite()
//
// The wrapper/ rows for serdes "fp8" and "fp8_simd" (registers the latter's factory).
void register_wrapper_suite(const SuiteConfig& config);

// register_l2_suite()
//
// The l2/ rows: resp, fs and config.l2_plugin_impl (when set), raw and fp8, 1 MiB bfloat16 chunks
// (or config.sizes) at batches 1, 8, 64 (quick: 1, 8; or config.batches), and beside them
// redis-benchmark's SET and GET of the same sizes against the same server (the server's
// ceiling). Starts redis-server when a resp or redis-benchmark row first runs.
void register_l2_suite(const SuiteConfig& config);

// bench_redis_endpoint()
//
// The host and port of the run's private redis-server (the one the resp and redis-benchmark
// rows use), starting it now if no row has. Throws std::runtime_error naming the reason when
// there is none (not installed, did not start). lmcache-bench exports it as
// LMCACHE_BENCH_REDIS_HOST / LMCACHE_BENCH_REDIS_PORT before it loads a connector plugin.
std::pair<std::string, int> bench_redis_endpoint();

// register_l1_suite()
//
// The l1/ rows.
void register_l1_suite(const SuiteConfig& config);

// register_serde_suite()
//
// The serdes and processors of `registry` (reference implementations plus plugins).
void register_serde_suite(const SuiteConfig& config, const conformance::Registry& registry);

// ---------------------------------------------------------------------------------------------
// Helpers shared by the suites.

// The default thread list: 1 and the number of CPUs (just 1 when --quick or on one CPU).
std::vector<std::size_t> default_threads(bool quick);

// kv_values()
//
// A process-wide buffer of at least `bytes` bytes of fill_kv_values() data of `dtype`
// (float32 / float16 / bfloat16), seed 1; grown on demand, never shrunk. Not thread-safe: call
// it from the benchmark thread.
std::span<const std::byte> kv_values(DType dtype, std::size_t bytes);

}  // namespace lmcache::bench
