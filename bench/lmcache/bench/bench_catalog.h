// File: lmcache/bench/bench_catalog.h
//
// The catalog of lmcache-bench's benchmarks: every benchmark is registered through
// register_labeled() with a BenchLabels value, a small, bounded set of label values that the
// metrics exporter (metrics_export.h) turns into Prometheus labels. The benchmark's name is
// built from the labels, so two benchmarks with the same labels cannot exist (registration
// throws), and the exporter never has to parse a free-form name.
//
// Name layout: <suite>/<op>/<impl>/<serde>/<dtype>/<format>/<device>/size:<bytes>/
// threads:<n>/batch:<n>, with fields that do not apply ("none") left out, e.g.
//   codec/encode/simd/bfloat16/float8_e4m3fn/cpu/size:1048576/threads:1
//   wrapper/store/wrapper/fp8/bfloat16/float8_e4m3fn/cpu/size:1048576/threads:1/batch:8
// Google Benchmark appends "/real_time" or "/manual_time"; base_benchmark_name() strips it.
//
// Thread safety: registration happens in main() before the run; lookups afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

namespace lmcache::bench {

// The value of a label that does not apply to a benchmark (e.g. the dtype of an L1 case).
inline constexpr std::string_view kNotApplicable = "none";

// BenchLabels
//
// One benchmark's coordinates. Every value comes from a bounded set: suite and op names fixed
// by the suites, serde names from the serde registry or a plugin's descriptors, dtype and
// format names from the fp8 codec, sizes / threads / batches from the command line lists.
struct BenchLabels {
  std::string suite;                   // codec, roofline, processor, wrapper, l1, serde
  std::string op;                      // encode, decode, memcpy, store, load, ...
  std::string impl;                    // scalar, simd, cuda, wrapper, inner, ...
  std::string serde{kNotApplicable};   // fp8, noop, a plugin's serde name
  std::string dtype{kNotApplicable};   // the wide (unquantised) dtype
  std::string format{kNotApplicable};  // float8_e4m3fn, float8_e5m2
  std::string device = "cpu";          // cpu, cuda
  std::uint64_t size_bytes = 0;        // bytes of one wide object (0: none)
  std::uint64_t threads = 0;           // threads or workers (0: none)
  std::uint64_t batch = 0;             // objects per task (0: none)

  // The label map the exporter uses (size_bytes, threads and batch as decimal strings, "none"
  // for 0).
  std::map<std::string, std::string> as_map() const;

  friend bool operator==(const BenchLabels&, const BenchLabels&) = default;
};

// The Prometheus label names of BenchLabels, in as_map() order.
const std::vector<std::string>& bench_label_names();

// benchmark_name()
//
// The registered name built from `labels` (see the file comment).
std::string benchmark_name(const BenchLabels& labels);

// base_benchmark_name()
//
// `name` without Google Benchmark's "/real_time", "/manual_time", "/repeats:N", "/iterations:N"
// and "/min_time:X" suffixes: the name register_labeled() registered.
std::string base_benchmark_name(std::string_view name);

// register_labeled()
//
// Registers `fn` under benchmark_name(labels) with benchmark::RegisterBenchmark and records
// the labels in the catalog. Returns the benchmark for further configuration (Unit,
// UseRealTime, ...). Throws std::logic_error when a benchmark with the same labels exists.
benchmark::internal::Benchmark* register_labeled(const BenchLabels& labels,
                                                 std::function<void(benchmark::State&)> fn);

// find_labels()
//
// The labels registered under `name` (a run's name; suffixes are stripped); nullopt for a
// benchmark registered some other way.
std::optional<BenchLabels> find_labels(std::string_view name);

// catalog_size()
//
// How many benchmarks register_labeled() has registered.
std::size_t catalog_size();

}  // namespace lmcache::bench
