// The serde/ suite (see suites.h): every serde and processor of a conformance Registry -- the
// reference implementations and whatever --plugin registered -- on the same KV-like inputs, so
// a vendor's numbers sit beside the reference's in one run and one metrics file.
//
//   serde/{serialize,deserialize}/direct/<name>/<dtype>/cpu/size:N/threads:1
//        the descriptor's Serializer / Deserializer called directly
//   serde/{serialize,deserialize}/processor/<name>/<dtype>/cpu/size:N/threads:1
//        the descriptor's SerdeProcessor, one task of one object, submit -> eventfd -> query
//   serde/memcpy/direct/memcpy/uint8/cpu/size:N/threads:1
//        one memcpy of N bytes between two buffers of the same kind: the in-run yardstick of
//        the integrity serdes (checksum >= 0.8x of it, docs/integrity.md)
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "lmcache/bench/bench_catalog.h"
#include "lmcache/bench/suites.h"
#include "lmcache/bench/workloads.h"
#include "lmcache/conformance/registry.h"

namespace lmcache::bench {
namespace {

bool wide_dtype(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
}

BenchLabels labels(bool serialize, const char* impl, const std::string& name, DType dtype,
                   std::uint64_t size) {
  return {.suite = "serde",
          .op = serialize ? "serialize" : "deserialize",
          .impl = impl,
          .serde = name,
          .dtype = std::string(dtype_name(dtype)),
          .size_bytes = size,
          .threads = 1};
}

MemoryObjPtr byte_buffer(std::size_t bytes) {
  return MemoryObj::allocate(MemoryLayoutDesc::single(
      {static_cast<std::int64_t>(std::max<std::size_t>(1, bytes))}, DType::kUInt8));
}

// Registers `run` under `l`: one item of `size` bytes an iteration, timed in real time.
// `run(st)` sets up and runs the timed loop; it returns false when it gave up (after
// SkipWithError), and an exception it throws skips the benchmark with its message.
template <class Run>
void register_sized(const BenchLabels& l, std::uint64_t size, Run run) {
  register_labeled(l,
                   [size, run](benchmark::State& st) {
                     try {
                       if (!run(st)) return;
                     } catch (const std::exception& e) {
                       st.SkipWithError(e.what());
                       return;
                     }
                     st.SetItemsProcessed(st.iterations());
                     st.SetBytesProcessed(st.iterations() * static_cast<std::int64_t>(size));
                   })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void register_direct(const conformance::SerdeUnderTest& serde, bool serialize, DType dtype,
                     std::uint64_t size) {
  register_sized(labels(serialize, "direct", serde.name, dtype, size), size,
                 [serde, serialize, dtype, size](benchmark::State& st) {
                   SerializerPtr ser = serde.make_serializer();
                   DeserializerPtr deser = serde.make_deserializer();
                   MemoryObjPtr src = make_kv_object(dtype, size, 7);
                   MemoryObjPtr wire = byte_buffer(ser->estimate_serialized_size(src->layout()));
                   MemoryObjPtr back = MemoryObj::allocate(src->layout());
                   wire->set_used_size(ser->serialize(*src, *wire, bench_key()));
                   for (auto _ : st) {
                     if (serialize) {
                       wire->set_used_size(wire->physical_size());
                       wire->set_used_size(ser->serialize(*src, *wire, bench_key()));
                     } else {
                       deser->deserialize(*wire, *back, bench_key());
                     }
                     benchmark::ClobberMemory();
                   }
                   return true;
                 });
}

void register_memcpy(std::uint64_t size) {
  BenchLabels l = labels(true, "direct", "memcpy", DType::kUInt8, size);
  l.op = "memcpy";
  register_sized(l, size, [size](benchmark::State& st) {
    MemoryObjPtr a = byte_buffer(size), b = byte_buffer(size);
    std::memset(a->data(), 7, size);
    for (auto _ : st) {
      std::memcpy(b->data(), a->data(), size);
      benchmark::ClobberMemory();
    }
    return true;
  });
}

void register_processor(const conformance::ProcessorUnderTest& proc, bool serialize, DType dtype,
                        std::uint64_t size) {
  register_sized(labels(serialize, "processor", proc.name, dtype, size), size,
                 [proc, serialize, dtype, size](benchmark::State& st) {
                   SerdeProcessorPtr p = proc.make();
                   MemoryObjPtr src = make_kv_object(dtype, size, 7);
                   MemoryObjPtr wire = byte_buffer(p->estimate_serialized_size(src->layout()));
                   MemoryObjPtr back = MemoryObj::allocate(src->layout());
                   if (!serialize_round_trip(*p, {src}, {wire})) {
                     st.SkipWithError("serialize task failed");
                     return false;
                   }
                   for (auto _ : st) {
                     const bool ok = serialize ? serialize_round_trip(*p, {src}, {wire})
                                               : deserialize_round_trip(*p, {wire}, {back});
                     if (!ok) {
                       st.SkipWithError("serde task failed");
                       break;
                     }
                   }
                   p->close();
                   return true;
                 });
}

}  // namespace

void register_serde_suite(const SuiteConfig& c, const conformance::Registry& registry) {
  const std::vector<std::uint64_t> sizes = c.sizes_or({1ull << 20});
  for (std::uint64_t size : sizes) register_memcpy(size);
  for (const auto& serde : registry.serdes()) {
    for (DType dtype : serde.input_dtypes) {
      if (!wide_dtype(dtype)) continue;
      for (std::uint64_t size : sizes) {
        if (size % element_size(dtype) != 0) continue;
        register_direct(serde, true, dtype, size);
        register_direct(serde, false, dtype, size);
      }
    }
  }
  for (const auto& proc : registry.processors()) {
    for (DType dtype : proc.input_dtypes) {
      if (!wide_dtype(dtype)) continue;
      for (std::uint64_t size : sizes) {
        if (size % element_size(dtype) != 0) continue;
        register_processor(proc, true, dtype, size);
        register_processor(proc, false, dtype, size);
      }
    }
  }
}

}  // namespace lmcache::bench
