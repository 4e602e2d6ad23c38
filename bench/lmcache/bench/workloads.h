// File: lmcache/bench/workloads.h
//
// The fixed workloads both lmcache-bench (timed) and lmcache-icount (instruction-counted) run,
// so the gate counts exactly the paths the benchmarks time: deterministic KV-like input data,
// a no-op serde, the submit -> eventfd -> result round trips of a SerdeProcessor and of an L2
// adapter, and the wrapper rig (SerdeL2AdapterWrapper over a fast MockL2Adapter).
//
// Determinism: the input generator uses integer arithmetic and exact conversions only, so the
// same seed gives the same bytes with any compiler, libm or CPU. That matters for the gate: the
// scalar codec's branches, hence its instruction count, depend on the values.
//
// Nothing here uses Google Benchmark, so lmcache-icount links none of it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lmcache/conformance/registry.h"
#include "lmcache/core/bitmap.h"
#include "lmcache/core/config.h"
#include "lmcache/core/dtype.h"
#include "lmcache/core/l2_store_result.h"
#include "lmcache/core/memory_obj.h"
#include "lmcache/core/object_key.h"
#include "lmcache/l1/byte_capacity_allocator.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/l2_adapter.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/serde/fp8_serde.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::bench {

// How long a round trip may take before the helpers below give up (a hung component must
// fail a benchmark, not hang the run).
inline constexpr std::chrono::seconds kRoundTripTimeout{60};

// fill_kv_values()
//
// Fills `out` (a whole number of `dtype` elements; float32, float16 or bfloat16) with values
// distributed roughly as N(0, 1) -- a KV cache's typical spread -- from `seed`. Exact and
// platform-independent. Throws std::invalid_argument for another dtype or a ragged size.
void fill_kv_values(std::span<std::byte> out, DType dtype, std::uint64_t seed);

// make_kv_object()
//
// A MemoryObj of one 1-D group of `bytes / element_size(dtype)` elements, filled by
// fill_kv_values(). `bytes` must be a multiple of the element size.
MemoryObjPtr make_kv_object(DType dtype, std::size_t bytes, std::uint64_t seed);

// make_bench_keys()
//
// `n` distinct keys, model "bench", chunk hashes `first`, `first + 1`, ... (8 bytes each), so
// rounds can use fresh keys without colliding.
std::vector<ObjectKey> make_bench_keys(std::uint64_t first, std::size_t n);

// bench_key()
//
// make_bench_keys(0, 1)[0]: the key the serde benchmarks pass to serialize() / deserialize().
const ObjectKey& bench_key();

// NoopSerializer / NoopDeserializer
//
// A serde that does nothing: serialize() writes no byte and returns 0, deserialize() returns
// at once; estimate_serialized_size() is 0. Isolates a processor's own per-task cost.
class NoopSerializer final : public Serializer {
 public:
  std::size_t serialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
  std::size_t estimate_serialized_size(const MemoryLayoutDesc& layout) const override;
};

class NoopDeserializer final : public Deserializer {
 public:
  void deserialize(const MemoryObj& src, MemoryObj& dst, const ObjectKey& key) override;
};

// serialize_round_trip() / deserialize_round_trip()
//
// submit -> wait on the direction's eventfd -> consume it -> query, until the task's result
// arrives; returns it. Assumes no other task of that direction is in flight (the fd is
// consumed). Throws std::runtime_error after kRoundTripTimeout.
bool serialize_round_trip(SerdeProcessor& p, std::vector<MemoryObjPtr> srcs,
                          std::vector<MemoryObjPtr> dsts);
bool deserialize_round_trip(SerdeProcessor& p, std::vector<MemoryObjPtr> srcs,
                            std::vector<MemoryObjPtr> dsts);

// serialize_pipelined()
//
// Submits `tasks` serialize tasks of one pair each (srcs[i % n] -> dsts[i % n]) at once, then
// waits for all of them. Returns how many succeeded. Throws std::runtime_error on timeout.
std::size_t serialize_pipelined(SerdeProcessor& p, const std::vector<MemoryObjPtr>& srcs,
                                const std::vector<MemoryObjPtr>& dsts, std::size_t tasks);

// set_caller_spin() / caller_spin() / caller_spun()
//
// The most store_round_trip() and load_round_trip() re-check the completion fd without sleeping
// before they sleep in poll(), through an AdaptiveSpinWaiter per calling thread (it spins only
// while the previous wait ended within twice this budget, and on one wait in 8); 0 until set:
// lmcache-bench sets its --caller-spin-us. caller_spun() is the total time spent re-checking since
// the process started: CPU a spinning caller burns, which the wrapper rows report per task
// (caller_spin_s). The processor rows never spin: they measure the hand-offs themselves.
void set_caller_spin(std::chrono::microseconds spin);
std::chrono::microseconds caller_spin();
std::chrono::nanoseconds caller_spun();

// store_round_trip() / load_round_trip()
//
// Submit one L2 task and wait (fd, consume, pop / query) until its result arrives, spinning
// first as set_caller_spin() says. Assume no other task of that kind is in flight. Throw
// std::runtime_error after kRoundTripTimeout. When `submit_seconds` is set, it receives the time
// the submit call itself took.
L2StoreResult store_round_trip(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                               const std::vector<MemoryObjPtr>& objects,
                               double* submit_seconds = nullptr);
Bitmap load_round_trip(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                       const std::vector<MemoryObjPtr>& objects, double* submit_seconds = nullptr);

// store_pipelined() / load_pipelined()
//
// Submit one L2 task per batch (keys[t], objects[t]) back to back, then wait until every one
// has its result: how a controller keeps several tasks in flight. Return how many succeeded
// (store: success; load: every bit set). Assume no other task of that kind is in flight. Throw
// std::invalid_argument when the lists differ in length, std::runtime_error after
// kRoundTripTimeout.
std::size_t store_pipelined(L2AdapterInterface& a, const std::vector<std::vector<ObjectKey>>& keys,
                            const std::vector<std::vector<MemoryObjPtr>>& objects);
std::size_t load_pipelined(L2AdapterInterface& a, const std::vector<std::vector<ObjectKey>>& keys,
                           const std::vector<std::vector<MemoryObjPtr>>& objects);

// The simulated bandwidth of the benchmarks' mock adapter: 1 PB/s, so that the mock's copy,
// not its simulated transfer time, is what gets measured.
inline constexpr std::uint64_t kFastMockBandwidth = std::uint64_t{1} << 50;

// make_fast_mock()
//
// A MockL2Adapter with `capacity_bytes` and kFastMockBandwidth that lends load views (and, as
// every mock, store buffers): the wrapper rows measure the zero-copy paths.
std::unique_ptr<MockL2Adapter> make_fast_mock(std::uint64_t capacity_bytes);

// WrapperRig
//
// A SerdeL2AdapterWrapper over a fast mock with the serde `serde_config` (e.g.
// {"type": "fp8"}), its temps in `l1`.
struct WrapperRig {
  std::shared_ptr<L1Manager> l1;
  L2AdapterPtr adapter;  // the wrapper
};

// make_wrapper_rig()
//
// Builds the rig; `l1_capacity_bytes` must fit a batch's temps (1.5 bytes per element for
// fp8), `mock_capacity_bytes` what the rounds store at once; `options` configure the wrapper
// (its inline serde steps).
WrapperRig make_wrapper_rig(const Json& serde_config, std::uint64_t l1_capacity_bytes,
                            std::uint64_t mock_capacity_bytes, SerdeWrapperOptions options = {});

// The fp8 rows of the wrapper and serde suites: "fp8" is the fp8 serde as configured by
// default; "fp8_simd" is the same serde with its kernel pinned to the SIMD backend (and, with
// `simd_target`, to that Highway target) through the serde's own "kernel" / "simd_target"
// options. Row names, not serde types: both rows build the registered "fp8" serde.
inline constexpr const char* kFp8SimdRow = "fp8_simd";

// fp8_row_options() / fp8_row_config()
//
// The options (as Fp8Serializer takes them) or the serde config (as create_serde_processor()
// takes it) of row `row` ("fp8" or "fp8_simd"). Throws std::invalid_argument for another row
// name, or a simd_target not available here.
Fp8SerdeOptions fp8_row_options(const std::string& row, const std::string& simd_target = "");
Json fp8_row_config(const std::string& row, const std::string& simd_target = "");

// add_fp8_simd_descriptors()
//
// Adds "fp8_simd_e4m3fn" and "fp8_simd_e5m2" to `registry`: the reference fp8 serde
// descriptors with the serde pinned to the SIMD kernels, so the serde/ suite times both.
void add_fp8_simd_descriptors(conformance::Registry& registry);

// add_reference_descriptors()
//
// Adds the reference rows the serde/ suite times to `registry`: the fp8 serdes of both formats,
// the integrity serdes (docs/integrity.md) "checksum", "aesgcm_128", "aesgcm_256" and
// "chain_fp8_checksum", LMCache's "encrypt_256" and the "lmcr" compressed record
// (docs/lmcr.md), and the async fp8 processors. A fixed set rather than the conformance
// kit's whole reference list, so row names stay comparable across runs as that list grows.
void add_reference_descriptors(conformance::Registry& registry);

}  // namespace lmcache::bench
