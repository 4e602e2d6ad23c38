#include "lmcache/bench/workloads.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/conformance/reference_impls.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/core/spin_wait.h"
#include "lmcache/serde/lmcr_serde.h"
#include "lmcache/serde/serde_registry.h"
#include "lmcache/wrapper/serde_l2_adapter_wrapper.h"

namespace lmcache::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Irwin-Hall: the sum of four uniform 16-bit integers, centred and scaled to unit variance.
// Integer sum, exact int -> float conversion and one IEEE multiply: the same on every machine.
float approx_normal(std::uint64_t& state) {
  const std::uint64_t r = splitmix64(state);
  const auto sum = static_cast<std::int32_t>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) +
                                             ((r >> 32) & 0xFFFF) + (r >> 48)) -
                   2 * 65535;
  // The standard deviation of the sum is 65536 * sqrt(4 / 12) = 37837.23.
  return static_cast<float>(sum) * (1.0f / 37837.23f);
}

// Round-to-nearest-even float32 -> bfloat16 bits (finite inputs only, which is all we make).
std::uint16_t to_bf16_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>(bits >> 16);
}

[[noreturn]] void timed_out(const char* what) {
  throw std::runtime_error(std::string(what) + ": no result within " +
                           std::to_string(kRoundTripTimeout.count()) + " s");
}

std::atomic<std::int64_t> g_caller_spin_us{0};
std::atomic<std::int64_t> g_caller_spun_ns{0};

// The calling thread's waiter for store_round_trip() / load_round_trip(), rebuilt when
// set_caller_spin() changed the budget.
AdaptiveSpinWaiter& caller_waiter() {
  thread_local std::unique_ptr<AdaptiveSpinWaiter> waiter;
  const std::chrono::microseconds spin(g_caller_spin_us.load(std::memory_order_relaxed));
  if (!waiter || waiter->max_spin() != spin) waiter = std::make_unique<AdaptiveSpinWaiter>(spin);
  return *waiter;
}

// Waits until `fd` is readable, consumes it; throws after the deadline. With a `waiter`, waits
// through it (it may re-check the fd before sleeping) and adds what that cost to
// g_caller_spun_ns.
void wait_and_consume(int fd, Clock::time_point deadline, const char* what,
                      AdaptiveSpinWaiter* waiter = nullptr) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  bool ready = false;
  if (left.count() > 0 && waiter != nullptr) {
    const std::chrono::nanoseconds before = waiter->spun();
    ready = waiter->wait_readable(fd, left);
    g_caller_spun_ns.fetch_add((waiter->spun() - before).count(), std::memory_order_relaxed);
  } else if (left.count() > 0) {
    ready = wait_readable(fd, left);
  }
  if (!ready) timed_out(what);
  consume_fd(fd);
}

// Waits until `query(id)` (one-shot: optional<success>) has answered for every pending task;
// returns how many succeeded. The fd coalesces completions, so every pending task is scanned
// after each wake-up.
template <class Query>
std::size_t wait_for_all(std::vector<TaskId> pending, int fd, Clock::time_point deadline,
                         const char* what, const Query& query) {
  std::size_t ok = 0;
  while (!pending.empty()) {
    wait_and_consume(fd, deadline, what);
    std::size_t kept = 0;
    for (TaskId id : pending) {
      if (std::optional<bool> r = query(id)) {
        ok += *r ? 1 : 0;
      } else {
        pending[kept++] = id;
      }
    }
    pending.resize(kept);
  }
  return ok;
}

}  // namespace

void fill_kv_values(std::span<std::byte> out, DType dtype, std::uint64_t seed) {
  const std::size_t elem = element_size(dtype);
  if (out.size() % elem != 0) {
    throw std::invalid_argument("fill_kv_values: " + std::to_string(out.size()) +
                                " bytes is not a whole number of " +
                                std::string(dtype_name(dtype)) + " elements");
  }
  const std::size_t n = out.size() / elem;
  std::uint64_t state = seed;
  std::byte* p = out.data();
  switch (dtype) {
    case DType::kFloat32:
      for (std::size_t i = 0; i < n; ++i) {
        const float x = approx_normal(state);
        std::memcpy(p + 4 * i, &x, 4);
      }
      return;
    case DType::kBFloat16:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint16_t b = to_bf16_bits(approx_normal(state));
        std::memcpy(p + 2 * i, &b, 2);
      }
      return;
    case DType::kFloat16:
      for (std::size_t i = 0; i < n; ++i) {
        const auto h = static_cast<_Float16>(approx_normal(state));  // IEEE RNE, exact rule
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    default:
      throw std::invalid_argument("fill_kv_values: unsupported dtype " +
                                  std::string(dtype_name(dtype)));
  }
}

MemoryObjPtr make_kv_object(DType dtype, std::size_t bytes, std::uint64_t seed) {
  const std::size_t elem = element_size(dtype);
  if (bytes % elem != 0) {
    throw std::invalid_argument("make_kv_object: " + std::to_string(bytes) +
                                " bytes is not a whole number of elements");
  }
  auto obj = MemoryObj::allocate(
      MemoryLayoutDesc::single({static_cast<std::int64_t>(bytes / elem)}, dtype));
  fill_kv_values(obj->bytes(), dtype, seed);
  return obj;
}

std::vector<ObjectKey> make_bench_keys(std::uint64_t first, std::size_t n) {
  std::vector<ObjectKey> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = first + i;
    std::string hash(8, '\0');
    std::memcpy(hash.data(), &h, 8);
    keys.emplace_back(std::move(hash), "bench", 0);
  }
  return keys;
}

const ObjectKey& bench_key() {
  static const ObjectKey key = make_bench_keys(0, 1)[0];
  return key;
}

std::size_t NoopSerializer::serialize(const MemoryObj&, MemoryObj&, const ObjectKey&) { return 0; }
std::size_t NoopSerializer::estimate_serialized_size(const MemoryLayoutDesc&) const { return 0; }
void NoopDeserializer::deserialize(const MemoryObj&, MemoryObj&, const ObjectKey&) {}

bool serialize_round_trip(SerdeProcessor& p, std::vector<MemoryObjPtr> srcs,
                          std::vector<MemoryObjPtr> dsts) {
  const auto deadline = Clock::now() + kRoundTripTimeout;
  std::vector<ObjectKey> keys = make_bench_keys(0, srcs.size());
  const TaskId id = p.submit_serialize(std::move(srcs), std::move(dsts), std::move(keys));
  for (;;) {
    wait_and_consume(p.get_serialize_event_fd(), deadline, "serialize");
    if (std::optional<bool> r = p.query_serialize_result(id)) return *r;
  }
}

bool deserialize_round_trip(SerdeProcessor& p, std::vector<MemoryObjPtr> srcs,
                            std::vector<MemoryObjPtr> dsts) {
  const auto deadline = Clock::now() + kRoundTripTimeout;
  std::vector<ObjectKey> keys = make_bench_keys(0, srcs.size());
  const TaskId id = p.submit_deserialize(std::move(srcs), std::move(dsts), std::move(keys));
  for (;;) {
    wait_and_consume(p.get_deserialize_event_fd(), deadline, "deserialize");
    if (std::optional<bool> r = p.query_deserialize_result(id)) return *r;
  }
}

std::size_t serialize_pipelined(SerdeProcessor& p, const std::vector<MemoryObjPtr>& srcs,
                                const std::vector<MemoryObjPtr>& dsts, std::size_t tasks) {
  const auto deadline = Clock::now() + kRoundTripTimeout;
  std::vector<TaskId> pending;
  pending.reserve(tasks);
  for (std::size_t i = 0; i < tasks; ++i) {
    pending.push_back(p.submit_serialize({srcs[i % srcs.size()]}, {dsts[i % dsts.size()]},
                                         make_bench_keys(i % srcs.size(), 1)));
  }
  return wait_for_all(std::move(pending), p.get_serialize_event_fd(), deadline,
                      "serialize (pipelined)",
                      [&](TaskId id) { return p.query_serialize_result(id); });
}

void set_caller_spin(std::chrono::microseconds spin) {
  g_caller_spin_us.store(std::max<std::int64_t>(0, spin.count()), std::memory_order_relaxed);
}

std::chrono::microseconds caller_spin() {
  return std::chrono::microseconds(g_caller_spin_us.load(std::memory_order_relaxed));
}

std::chrono::nanoseconds caller_spun() {
  return std::chrono::nanoseconds(g_caller_spun_ns.load(std::memory_order_relaxed));
}

L2StoreResult store_round_trip(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                               const std::vector<MemoryObjPtr>& objects, double* submit_seconds) {
  const auto start = Clock::now();
  const auto deadline = start + kRoundTripTimeout;
  const TaskId id = a.submit_store_task(keys, objects);
  if (submit_seconds) *submit_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (;;) {
    wait_and_consume(a.get_store_event_fd(), deadline, "store", &caller_waiter());
    auto done = a.pop_completed_store_tasks();
    auto it = done.find(id);
    if (it != done.end()) return it->second;
  }
}

Bitmap load_round_trip(L2AdapterInterface& a, const std::vector<ObjectKey>& keys,
                       const std::vector<MemoryObjPtr>& objects, double* submit_seconds) {
  const auto start = Clock::now();
  const auto deadline = start + kRoundTripTimeout;
  const TaskId id = a.submit_load_task(keys, objects);
  if (submit_seconds) *submit_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (;;) {
    wait_and_consume(a.get_load_event_fd(), deadline, "load", &caller_waiter());
    if (std::optional<Bitmap> r = a.query_load_result(id)) return std::move(*r);
  }
}

namespace {

void check_pipelined_lists(const char* what, std::size_t keys, std::size_t objects) {
  if (keys != objects) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(keys) +
                                " key batches but " + std::to_string(objects) + " object batches");
  }
}

}  // namespace

std::size_t store_pipelined(L2AdapterInterface& a, const std::vector<std::vector<ObjectKey>>& keys,
                            const std::vector<std::vector<MemoryObjPtr>>& objects) {
  check_pipelined_lists("store_pipelined", keys.size(), objects.size());
  const auto deadline = Clock::now() + kRoundTripTimeout;
  std::set<TaskId> pending;
  for (std::size_t t = 0; t < keys.size(); ++t) {
    pending.insert(a.submit_store_task(keys[t], objects[t]));
  }
  std::size_t ok = 0;
  while (!pending.empty()) {
    wait_and_consume(a.get_store_event_fd(), deadline, "store (pipelined)");
    for (const auto& [id, result] : a.pop_completed_store_tasks()) {
      if (pending.erase(id) == 1 && result.is_successful()) ++ok;
    }
  }
  return ok;
}

std::size_t load_pipelined(L2AdapterInterface& a, const std::vector<std::vector<ObjectKey>>& keys,
                           const std::vector<std::vector<MemoryObjPtr>>& objects) {
  check_pipelined_lists("load_pipelined", keys.size(), objects.size());
  const auto deadline = Clock::now() + kRoundTripTimeout;
  std::vector<TaskId> pending;
  for (std::size_t t = 0; t < keys.size(); ++t) {
    pending.push_back(a.submit_load_task(keys[t], objects[t]));
  }
  return wait_for_all(std::move(pending), a.get_load_event_fd(), deadline, "load (pipelined)",
                      [&](TaskId id) -> std::optional<bool> {
                        std::optional<Bitmap> r = a.query_load_result(id);
                        if (!r) return std::nullopt;
                        return r->all();
                      });
}

std::unique_ptr<MockL2Adapter> make_fast_mock(std::uint64_t capacity_bytes) {
  MockL2AdapterOptions options;
  options.max_capacity_bytes = capacity_bytes;
  options.bandwidth_bytes_per_sec = kFastMockBandwidth;
  options.lend_load_views = true;  // zero copy on load, as lent buffers are on store
  // A task submitted while the mock is idle runs on the submitter: no hand-off to its worker.
  options.run_when_idle = true;
  return std::make_unique<MockL2Adapter>(options);
}

WrapperRig make_wrapper_rig(const Json& serde_config, std::uint64_t l1_capacity_bytes,
                            std::uint64_t mock_capacity_bytes, SerdeWrapperOptions options) {
  WrapperRig rig;
  rig.l1 = std::make_shared<L1Manager>(l1_capacity_bytes);
  rig.adapter = std::make_unique<SerdeL2AdapterWrapper>(make_fast_mock(mock_capacity_bytes),
                                                        create_serde_processor(serde_config),
                                                        rig.l1, std::move(options));
  return rig;
}

Fp8SerdeOptions fp8_row_options(const std::string& row, const std::string& simd_target) {
  Fp8SerdeOptions o;
  if (row == kFp8SimdRow) {
    o.kernel = Fp8SerdeKernel::kSimd;
    o.simd_target = simd_target;
  } else if (row != "fp8" || !simd_target.empty()) {
    throw std::invalid_argument("bench: unknown fp8 row '" + row + "'" +
                                (simd_target.empty() ? "" : " with a simd_target"));
  }
  Fp8Serializer check(o);  // throws for a simd_target this CPU lacks
  return o;
}

Json fp8_row_config(const std::string& row, const std::string& simd_target) {
  const Fp8SerdeOptions o = fp8_row_options(row, simd_target);
  Json config{{"type", "fp8"}};
  if (o.kernel != Fp8SerdeKernel::kAuto) config["kernel"] = fp8_serde_kernel_name(o.kernel);
  if (!o.simd_target.empty()) config["simd_target"] = o.simd_target;
  return config;
}

void add_fp8_simd_descriptors(conformance::Registry& registry) {
  for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    // The reference descriptor's declarations (dtypes, bounds) with the serde pinned to SIMD.
    conformance::SerdeUnderTest d = conformance::reference_fp8_serde(format);
    d.name = format == Fp8Format::kE4M3FN ? "fp8_simd_e4m3fn" : "fp8_simd_e5m2";
    Fp8SerdeOptions o = fp8_row_options(kFp8SimdRow);
    o.format = format;
    d.make_serializer = [o] { return std::make_shared<Fp8Serializer>(o); };
    d.make_deserializer = [o] { return std::make_shared<Fp8Deserializer>(o); };
    d.make_multi_serializer = nullptr;
    d.make_multi_deserializer = nullptr;
    registry.add_serde(std::move(d));
  }
}

void add_reference_descriptors(conformance::Registry& registry) {
  registry.add_serde(conformance::reference_fp8_serde(Fp8Format::kE4M3FN));
  registry.add_serde(conformance::reference_fp8_serde(Fp8Format::kE5M2));
  registry.add_processor(conformance::reference_async_fp8_processor(Fp8Format::kE4M3FN, 1));
  registry.add_processor(conformance::reference_async_fp8_processor(Fp8Format::kE5M2, 3));
  registry.add_serde(conformance::reference_checksum_serde());
  registry.add_serde(conformance::reference_aes_gcm_serde(128, false));
  registry.add_serde(conformance::reference_aes_gcm_serde(256, false));
  registry.add_serde(conformance::reference_fp8_checksum_chain());
  // LMCache's newer formats: encrypt (aesgcm's frame, its own key label) and the LMCR v1
  // compressed record (zlib Deflate: far below memcpy, which the report shows beside it).
  registry.add_serde(conformance::reference_encrypt_serde(256));
  // The kit's lmcr descriptor with the serde's own defaults (raw Deflate, 1 MiB chunks, level
  // 6: what a config of {"type": "lmcr"} gets), not the kit's fast gzip level 1.
  conformance::SerdeUnderTest lmcr = conformance::reference_lmcr_serde();
  lmcr.name = "lmcr";
  lmcr.make_serializer = [] { return std::make_shared<LmcrSerializer>(LmcrEncodeOptions{}); };
  registry.add_serde(std::move(lmcr));
}

}  // namespace lmcache::bench
