// File: lmcache/bench/testing/sample_labels.h
//
// Test support (never installed): the labels of one codec row, as the bench tests use them.
#pragma once

#include <cstdint>

#include "lmcache/bench/bench_catalog.h"

namespace lmcache::bench_testing {

// The labels of the 1 MiB bfloat16 -> float8_e4m3fn SIMD encode row on `threads` threads.
inline bench::BenchLabels codec_encode_labels(std::uint64_t threads = 1) {
  return {.suite = "codec",
          .op = "encode",
          .impl = "simd",
          .serde = "fp8",
          .dtype = "bfloat16",
          .format = "float8_e4m3fn",
          .size_bytes = 1 << 20,
          .threads = threads};
}

}  // namespace lmcache::bench_testing
