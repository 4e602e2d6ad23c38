#include "lmcache/bench/workloads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "lmcache/core/testing/test_keys.h"
#include "lmcache/serde/async_serde_processor.h"
#include "lmcache/serde/fp8_serde.h"

namespace lmcache::bench {
namespace {

// The gate's counts depend on these bytes: pin a few so that a change to the generator is a
// deliberate re-baseline, not an accident.
TEST(Workloads, KvValuesAreDeterministicAndRoughlyStandardNormal) {
  std::vector<std::byte> a(4 << 10), b(4 << 10);
  fill_kv_values(a, DType::kFloat32, 1);
  fill_kv_values(b, DType::kFloat32, 1);
  EXPECT_EQ(a, b);
  fill_kv_values(b, DType::kFloat32, 2);
  EXPECT_NE(a, b);
  double sum = 0, sq = 0;
  const std::size_t n = a.size() / 4;
  for (std::size_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, a.data() + 4 * i, 4);
    ASSERT_TRUE(std::isfinite(x));
    ASSERT_LE(std::fabs(x), 3.5f);  // Irwin-Hall(4) is bounded by 2*sqrt(3)
    sum += x;
    sq += x * x;
  }
  EXPECT_NEAR(sum / static_cast<double>(n), 0.0, 0.1);
  EXPECT_NEAR(sq / static_cast<double>(n), 1.0, 0.15);
  float first;
  std::memcpy(&first, a.data(), 4);
  EXPECT_EQ(first, first);  // not NaN
  // Every dtype the codec takes.
  std::vector<std::byte> h(64), bf(64);
  fill_kv_values(h, DType::kFloat16, 1);
  fill_kv_values(bf, DType::kBFloat16, 1);
  EXPECT_NE(h, bf);
  std::vector<std::byte> ragged(3);
  EXPECT_THROW(fill_kv_values(ragged, DType::kFloat16, 1), std::invalid_argument);
  EXPECT_THROW(fill_kv_values(h, DType::kUInt8, 1), std::invalid_argument);
}

TEST(Workloads, KeysAreDistinct) {
  const auto k = make_bench_keys(5, 3);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_NE(k[0], k[1]);
  EXPECT_EQ(k[0], make_bench_keys(5, 1)[0]);
}

TEST(Workloads, ProcessorRoundTripsWithTheNoopSerde) {
  AsyncSerdeProcessor p(std::make_shared<NoopSerializer>(), std::make_shared<NoopDeserializer>(),
                        1);
  auto src = make_kv_object(DType::kBFloat16, 4096, 1);
  auto dst = MemoryObj::allocate(MemoryLayoutDesc::single({4096}, DType::kUInt8));
  EXPECT_TRUE(serialize_round_trip(p, {src}, {dst}));
  EXPECT_TRUE(deserialize_round_trip(p, {dst}, {src}));
  EXPECT_EQ(serialize_pipelined(p, {src}, {dst}, 50), 50u);
  p.close();
}

TEST(Workloads, WrapperRigStoresAndLoadsThroughFp8) {
  WrapperRig rig = make_wrapper_rig(Json{{"type", "fp8"}}, 8 << 20, 8 << 20);
  const auto keys = make_bench_keys(1, 2);
  std::vector<MemoryObjPtr> objs{make_kv_object(DType::kBFloat16, 8192, 1),
                                 make_kv_object(DType::kBFloat16, 8192, 2)};
  const L2StoreResult r = store_round_trip(*rig.adapter, keys, objs);
  ASSERT_TRUE(r.is_successful());
  EXPECT_EQ(r.bytes_transferred(), 8192u);  // one byte per element
  std::vector<MemoryObjPtr> dsts{make_kv_object(DType::kBFloat16, 8192, 3),
                                 make_kv_object(DType::kBFloat16, 8192, 4)};
  EXPECT_TRUE(load_round_trip(*rig.adapter, keys, dsts).all());
  rig.adapter->close();
  EXPECT_EQ(rig.l1->get_memory_usage().used_bytes, 0u);
}

// The caller's spin (--caller-spin-us) changes how round trips wait, never what they return;
// its cost is accounted in caller_spun(). The default wrapper's tasks take a serde worker and
// the loop, so the caller waits and, with a spin set, spins first.
TEST(Workloads, RoundTripsWithACallerSpinAccountTheSpin) {
  EXPECT_EQ(caller_spin().count(), 0) << "no spin until set";
  set_caller_spin(std::chrono::microseconds(-5));
  EXPECT_EQ(caller_spin().count(), 0) << "negative budgets are none";
  set_caller_spin(std::chrono::microseconds(300));
  EXPECT_EQ(caller_spin(), std::chrono::microseconds(300));
  WrapperRig rig = make_wrapper_rig(Json{{"type", "fp8"}}, 8 << 20, 8 << 20);
  const auto keys = make_bench_keys(40, 1);
  std::vector<MemoryObjPtr> objs{make_kv_object(DType::kBFloat16, 65536, 1)};
  const std::chrono::nanoseconds before = caller_spun();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store_round_trip(*rig.adapter, keys, objs).is_successful());
    rig.adapter->delete_keys(keys);
  }
  EXPECT_GT(caller_spun(), before) << "waiting on a worker's result, the caller spun first";
  set_caller_spin(std::chrono::microseconds(0));
  rig.adapter->close();
}

TEST(Workloads, PipelinedTasksAllComplete) {
  WrapperRig rig = make_wrapper_rig(Json{{"type", "fp8"}}, 8 << 20, 8 << 20);
  const std::vector<std::vector<ObjectKey>> keys{make_bench_keys(1, 2), make_bench_keys(3, 2),
                                                 make_bench_keys(5, 2)};
  std::vector<MemoryObjPtr> wide{make_kv_object(DType::kBFloat16, 8192, 1),
                                 make_kv_object(DType::kBFloat16, 8192, 2)};
  EXPECT_EQ(store_pipelined(*rig.adapter, keys, {wide, wide, wide}), 3u);
  std::vector<std::vector<MemoryObjPtr>> dsts;
  for (int t = 0; t < 3; ++t) {
    dsts.push_back({make_kv_object(DType::kBFloat16, 8192, 10 + 2 * t),
                    make_kv_object(DType::kBFloat16, 8192, 11 + 2 * t)});
  }
  EXPECT_EQ(load_pipelined(*rig.adapter, keys, dsts), 3u);
  // A batch whose keys were never stored loads nothing: counted as not succeeded.
  EXPECT_EQ(load_pipelined(*rig.adapter, {keys[0], make_bench_keys(100, 2)}, {dsts[0], dsts[1]}),
            1u);
  EXPECT_THROW(store_pipelined(*rig.adapter, keys, {wide}), std::invalid_argument);
  rig.adapter->close();
  EXPECT_EQ(rig.l1->get_memory_usage().used_bytes, 0u);
}

// The fp8_simd rows pin the fp8 serde's kernel; they must produce the default serde's bytes,
// or the rows would compare different work.
TEST(Workloads, Fp8SimdRowMatchesTheDefaultSerde) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (Fp8Format format : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
      auto src = make_kv_object(dtype, 3 * 4096, 9);
      const auto bytes_layout = MemoryLayoutDesc::single({3 * 4096}, DType::kUInt8);
      auto a = MemoryObj::allocate(bytes_layout);
      auto b = MemoryObj::allocate(bytes_layout);
      Fp8SerdeOptions simd = fp8_row_options(kFp8SimdRow, "SCALAR");
      simd.format = format;
      const std::size_t na = Fp8Serializer({format}).serialize(*src, *a, test_key());
      const std::size_t nb = Fp8Serializer(simd).serialize(*src, *b, test_key());
      ASSERT_EQ(na, nb);
      EXPECT_TRUE(std::equal(a->data(), a->data() + na, b->data()));
      a->set_used_size(na);
      auto back_ref = MemoryObj::allocate(src->layout());
      auto back_simd = MemoryObj::allocate(src->layout());
      Fp8Deserializer({format}).deserialize(*a, *back_ref, test_key());
      Fp8Deserializer(simd).deserialize(*a, *back_simd, test_key());
      EXPECT_TRUE(
          std::equal(back_ref->data(), back_ref->data() + back_ref->size(), back_simd->data()));
    }
  }
  EXPECT_EQ(fp8_row_config("fp8"), (Json{{"type", "fp8"}}));
  EXPECT_EQ(fp8_row_config(kFp8SimdRow, "SCALAR"),
            (Json{{"type", "fp8"}, {"kernel", "simd"}, {"simd_target", "SCALAR"}}));
  EXPECT_THROW(fp8_row_options("fp8_avx"), std::invalid_argument);
  EXPECT_THROW(fp8_row_options(kFp8SimdRow, "NOT_A_TARGET"), std::invalid_argument);
}

}  // namespace
}  // namespace lmcache::bench
