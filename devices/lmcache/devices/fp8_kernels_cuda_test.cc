// File: lmcache/devices/fp8_kernels_cuda_test.cc
//
// The CUDA backend against the scalar reference codec, byte for byte: device-pointer kernels
// (vectorised and element-aligned forms, odd lengths) and the pinned host pipeline (several
// chunks, so both staging slots are reused). Without a GPU every case skips with the reason,
// except the one that checks that the backend then fails cleanly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "lmcache/devices/fp8_kernels.h"
#include "lmcache/devices/fp8_kernels_cuda.h"
#include "lmcache/devices/testing/fp8_samples.h"

namespace lmcache::devices {
namespace {

using devices_internal::first_mismatch;
using devices_internal::kFormats;
using devices_internal::kOverflows;
using devices_internal::kWideDTypes;
using devices_internal::mode_name;

#define LMCACHE_REQUIRE_GPU()                                                   \
  do {                                                                          \
    if (!fp8_cuda_available()) {                                                \
      GTEST_SKIP() << (fp8_cuda_built() ? "no CUDA GPU on this machine"         \
                                        : "the CUDA kernels are not built (no " \
                                          "nvcc at configure time)");           \
    }                                                                           \
  } while (0)

// Encodes `src` on the GPU starting `offset_elems` elements into a device buffer (offset 1
// forces the element-aligned, non-vectorised kernel).
std::vector<std::uint8_t> gpu_encode(std::span<const std::byte> src, DType d, Fp8Format f,
                                     Fp8Overflow o, std::size_t offset_elems) {
  const std::size_t elem = element_size(d);
  const std::size_t n = src.size() / elem;
  cuda::DeviceBuffer in((n + offset_elems) * elem);
  cuda::DeviceBuffer out(n + offset_elems);
  auto* in_ptr = static_cast<std::byte*>(in.data()) + offset_elems * elem;
  auto* out_ptr = static_cast<std::uint8_t*>(out.data()) + offset_elems;
  if (n > 0) cuda::copy_to_device(in_ptr, src.data(), n * elem);
  fp8_encode_cuda_device(in_ptr, d, n, out_ptr, f, o);
  cuda::synchronize();
  std::vector<std::uint8_t> host(n);
  if (n > 0) cuda::copy_to_host(host.data(), out_ptr, n);
  return host;
}

std::vector<std::byte> gpu_decode(std::span<const std::uint8_t> codes, DType d, Fp8Format f,
                                  std::size_t offset_elems) {
  const std::size_t elem = element_size(d);
  const std::size_t n = codes.size();
  cuda::DeviceBuffer in(n + offset_elems);
  cuda::DeviceBuffer out((n + offset_elems) * elem);
  auto* in_ptr = static_cast<std::uint8_t*>(in.data()) + offset_elems;
  auto* out_ptr = static_cast<std::byte*>(out.data()) + offset_elems * elem;
  if (n > 0) cuda::copy_to_device(in_ptr, codes.data(), n);
  fp8_decode_cuda_device(in_ptr, n, out_ptr, d, f);
  cuda::synchronize();
  std::vector<std::byte> host(n * elem);
  if (n > 0) cuda::copy_to_host(host.data(), out_ptr, n * elem);
  return host;
}

TEST(Fp8Cuda, Every16BitInputMatchesReference) {
  LMCACHE_REQUIRE_GPU();
  const auto src = devices_internal::all_16bit_patterns();
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (Fp8Format f : kFormats) {
      for (Fp8Overflow o : kOverflows) {
        const auto want = devices_internal::reference_encode(src, d, f, o);
        for (std::size_t offset : {0, 1}) {
          EXPECT_EQ(first_mismatch(gpu_encode(src, d, f, o, offset), want), -1)
              << dtype_name(d) << " " << mode_name(f, o) << " offset " << offset;
        }
      }
    }
  }
}

TEST(Fp8Cuda, DenseFloat32SampleMatchesReference) {
  LMCACHE_REQUIRE_GPU();
  const auto src = devices_internal::as_bytes(devices_internal::dense_f32_sample());
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      const auto want = devices_internal::reference_encode(src, DType::kFloat32, f, o);
      for (std::size_t offset : {0, 1}) {
        EXPECT_EQ(first_mismatch(gpu_encode(src, DType::kFloat32, f, o, offset), want), -1)
            << mode_name(f, o) << " offset " << offset;
      }
    }
  }
}

TEST(Fp8Cuda, EveryCodeDecodesLikeReference) {
  LMCACHE_REQUIRE_GPU();
  const auto codes = devices_internal::all_codes();
  for (Fp8Format f : kFormats) {
    for (DType d : kWideDTypes) {
      const auto want = devices_internal::reference_decode(codes, d, f);
      for (std::size_t offset : {0, 1}) {
        EXPECT_EQ(first_mismatch(gpu_decode(codes, d, f, offset), want, element_size(d)), -1)
            << fp8_format_name(f) << " -> " << dtype_name(d) << " offset " << offset;
      }
    }
  }
}

TEST(Fp8Cuda, OddLengths) {
  LMCACHE_REQUIRE_GPU();
  std::mt19937 rng(3);
  std::vector<std::byte> pool(4 * 1100);
  for (auto& b : pool) b = static_cast<std::byte>(rng());
  for (std::size_t n : {0, 1, 2, 3, 5, 7, 33, 1023, 1025}) {
    for (DType d : kWideDTypes) {
      const std::span<const std::byte> src(pool.data(), n * element_size(d));
      const auto want =
          devices_internal::reference_encode(src, d, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating);
      EXPECT_EQ(
          first_mismatch(gpu_encode(src, d, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating, 0), want),
          -1)
          << "n=" << n;
      const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(pool.data()),
                                                n);
      EXPECT_EQ(first_mismatch(gpu_decode(codes, d, Fp8Format::kE5M2, 0),
                               devices_internal::reference_decode(codes, d, Fp8Format::kE5M2),
                               element_size(d)),
                -1)
          << "n=" << n;
    }
  }
}

TEST(Fp8Cuda, HostPipelineMatchesReferenceOverSeveralChunks) {
  LMCACHE_REQUIRE_GPU();
  // More than two 4 Mi-element chunks, with a ragged last one.
  const std::size_t n = (std::size_t{9} << 20) + 333;
  std::mt19937 rng(17);
  std::vector<std::byte> src(n * 4);
  for (auto& b : src) b = static_cast<std::byte>(rng());
  const KernelOptions cuda_opt{.backend = Fp8Backend::kCuda};
  for (DType d : kWideDTypes) {
    const std::span<const std::byte> in(src.data(), n * element_size(d));
    const auto want =
        devices_internal::reference_encode(in, d, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating);
    std::vector<std::uint8_t> got(n);
    fp8_encode_fast(in, d, n, got, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating, cuda_opt);
    EXPECT_EQ(first_mismatch(got, want), -1) << dtype_name(d);

    const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(src.data()), n);
    const auto want_dec = devices_internal::reference_decode(codes, d, Fp8Format::kE4M3FN);
    std::vector<std::byte> got_dec(want_dec.size());
    fp8_decode_fast(codes, n, got_dec, d, Fp8Format::kE4M3FN, cuda_opt);
    EXPECT_EQ(first_mismatch(got_dec, want_dec, element_size(d)), -1) << dtype_name(d);
  }
}

TEST(Fp8Cuda, DevicePointerErrors) {
  LMCACHE_REQUIRE_GPU();
  cuda::DeviceBuffer buf(64);
  auto* base = static_cast<std::uint8_t*>(buf.data());
  // A float32 source one byte off its alignment.
  EXPECT_THROW(fp8_encode_cuda_device(base + 1, DType::kFloat32, 4, base + 32, Fp8Format::kE4M3FN,
                                      Fp8Overflow::kNonSaturating),
               std::invalid_argument);
  EXPECT_THROW(fp8_decode_cuda_device(base, 4, base + 32, DType::kUInt8, Fp8Format::kE4M3FN),
               std::invalid_argument);
}

// Runs everywhere: without a usable GPU the CUDA surface fails loudly, never silently.
TEST(Fp8Cuda, UnavailableBackendThrows) {
  if (fp8_cuda_available()) GTEST_SKIP() << "a CUDA GPU is present";
  EXPECT_THROW(cuda::DeviceBuffer(16), std::runtime_error);
  std::uint8_t codes[4] = {};
  float out[4] = {};
  EXPECT_THROW(fp8_decode_cuda_device(codes, 4, out, DType::kFloat32, Fp8Format::kE4M3FN),
               std::runtime_error);
  EXPECT_THROW(cuda::time_ms([](void*) {}), std::runtime_error);
}

}  // namespace
}  // namespace lmcache::devices
