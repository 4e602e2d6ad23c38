// File: lmcache/fp8/fp8_kernels_cuda_test.cc
//
// The CUDA kernels on a real GPU against the scalar reference codec, byte for byte: every
// 16-bit input and every code, odd lengths on every mode at every alignment with guard bytes
// around every output, a size where each thread goes round the grid-stride loop more than once,
// more than 2^31 elements where memory allows, the pinned host pipeline over several chunks,
// copies that must wait for non-blocking streams, and the error paths a GPU can show without
// corrupting its context (out of memory followed by a launch). Without a usable GPU every case
// skips with fp8_cuda_unavailable_reason(), except the one that checks that the backend then
// fails cleanly. The host-code logic (error attribution, sticky errors, all-or-nothing
// allocation) is tested without a GPU in fp8_kernels_cuda_fake_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"
#include "lmcache/fp8/testing/fp8_samples.h"

namespace lmcache::fp8 {
namespace {

using namespace fp8_internal;  // the samples and the reference (testing/fp8_samples.h)
using ::testing::HasSubstr;

#define LMCACHE_REQUIRE_GPU()                                                             \
  do {                                                                                    \
    if (!fp8_cuda_available()) GTEST_SKIP() << "CUDA: " << fp8_cuda_unavailable_reason(); \
  } while (0)

// The grid is at most 65535 blocks of 256 threads (fp8_kernels_cuda.cu); past this many work
// items a thread handles a second one.
constexpr std::size_t kGridThreads = std::size_t{65535} * 256;

constexpr std::size_t kGuardBytes = 256;
constexpr std::uint8_t kGuardByte = 0xA5;

std::size_t host_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Bytes of host memory the kernel says are available now.
std::size_t host_available_bytes() {
  return static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) *
         static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Fills `out` with pseudo-random bytes, in parallel (sizes here reach gigabytes).
void fill_random(std::span<std::byte> out, std::uint64_t seed) {
  const std::size_t parts = host_threads();
  const std::size_t step = (out.size() / parts + 7) & ~std::size_t{7};
  std::vector<std::thread> workers;
  for (std::size_t p = 0; p < parts && p * step < out.size(); ++p) {
    workers.emplace_back([=] {
      std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + p + 1;
      const std::size_t end = std::min(out.size(), (p + 1) * step);
      for (std::size_t i = p * step; i < end; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out[i] = static_cast<std::byte>(x >> 24);
      }
    });
  }
  for (auto& w : workers) w.join();
}

// A device buffer with `misalign` bytes and kGuardBytes of guard pattern before the payload
// and kGuardBytes after it.
class Guarded {
 public:
  Guarded(std::size_t payload, std::size_t misalign)
      : buf_(2 * kGuardBytes + misalign + payload),
        offset_(kGuardBytes + misalign),
        bytes_(payload) {
    const std::vector<std::uint8_t> pattern(offset_, kGuardByte);
    cuda::copy_to_device(buf_.data(), pattern.data(), offset_);
    cuda::copy_to_device(data() + bytes_, pattern.data(), kGuardBytes);
  }

  std::byte* data() const { return static_cast<std::byte*>(buf_.data()) + offset_; }

  std::vector<std::byte> payload() const {
    std::vector<std::byte> out(bytes_);
    if (bytes_ > 0) cuda::copy_to_host(out.data(), data(), bytes_);
    return out;
  }

  // Whether every byte around the payload still holds the guard pattern.
  bool guards_intact() const {
    std::vector<std::uint8_t> before(offset_);
    std::vector<std::uint8_t> after(kGuardBytes);
    cuda::copy_to_host(before.data(), buf_.data(), offset_);
    cuda::copy_to_host(after.data(), data() + bytes_, kGuardBytes);
    const auto intact = [](const std::vector<std::uint8_t>& v) {
      return std::all_of(v.begin(), v.end(), [](std::uint8_t b) { return b == kGuardByte; });
    };
    return intact(before) && intact(after);
  }

 private:
  cuda::DeviceBuffer buf_;
  std::size_t offset_;
  std::size_t bytes_;
};

// Encodes `src` on the GPU with its first element `src_offset` elements and its first code
// `dst_offset` bytes past a 256-byte boundary (a non-zero offset forces the element-wise
// kernel); checks the guards around the output.
std::vector<std::uint8_t> gpu_encode(std::span<const std::byte> src, DType d, Fp8Format f,
                                     Fp8Overflow o, std::size_t src_offset = 0,
                                     std::size_t dst_offset = 0) {
  const std::size_t elem = element_size(d);
  const std::size_t n = src.size() / elem;
  Guarded in(src.size(), src_offset * elem);
  Guarded out(n, dst_offset);
  if (n > 0) cuda::copy_to_device(in.data(), src.data(), src.size());
  fp8_encode_cuda_device(in.data(), d, n, reinterpret_cast<std::uint8_t*>(out.data()), f, o);
  cuda::synchronize();
  EXPECT_TRUE(out.guards_intact()) << "encode wrote outside its output: n=" << n;
  EXPECT_TRUE(in.guards_intact());
  const auto bytes = out.payload();
  std::vector<std::uint8_t> host(n);
  if (n > 0) std::memcpy(host.data(), bytes.data(), n);
  return host;
}

std::vector<std::byte> gpu_decode(std::span<const std::uint8_t> codes, DType d, Fp8Format f,
                                  std::size_t src_offset = 0, std::size_t dst_offset = 0) {
  const std::size_t elem = element_size(d);
  const std::size_t n = codes.size();
  Guarded in(n, src_offset);
  Guarded out(n * elem, dst_offset * elem);
  if (n > 0) cuda::copy_to_device(in.data(), codes.data(), n);
  fp8_decode_cuda_device(reinterpret_cast<const std::uint8_t*>(in.data()), n, out.data(), d, f);
  cuda::synchronize();
  EXPECT_TRUE(out.guards_intact()) << "decode wrote outside its output: n=" << n;
  return out.payload();
}

TEST(Fp8Cuda, Every16BitInputMatchesReference) {
  LMCACHE_REQUIRE_GPU();
  const auto src = fp8_internal::all_16bit_patterns();
  for (DType d : {DType::kFloat16, DType::kBFloat16}) {
    for (Fp8Format f : kFormats) {
      for (Fp8Overflow o : kOverflows) {
        const auto want = fp8_internal::reference_encode(src, d, f, o);
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
  const auto src = fp8_internal::as_bytes(fp8_internal::dense_f32_sample());
  for (Fp8Format f : kFormats) {
    for (Fp8Overflow o : kOverflows) {
      const auto want = fp8_internal::reference_encode(src, DType::kFloat32, f, o);
      for (std::size_t offset : {0, 1}) {
        EXPECT_EQ(first_mismatch(gpu_encode(src, DType::kFloat32, f, o, offset), want), -1)
            << mode_name(f, o) << " offset " << offset;
      }
    }
  }
}

TEST(Fp8Cuda, EveryCodeDecodesLikeReference) {
  LMCACHE_REQUIRE_GPU();
  const auto codes = fp8_internal::all_codes();
  for (Fp8Format f : kFormats) {
    for (DType d : kWideDTypes) {
      const auto want = fp8_internal::reference_decode(codes, d, f);
      for (std::size_t offset : {0, 1}) {
        EXPECT_EQ(first_mismatch(gpu_decode(codes, d, f, offset, offset), want, element_size(d)),
                  -1)
            << fp8_format_name(f) << " -> " << dtype_name(d) << " offset " << offset;
      }
    }
  }
}

// Every length class (below, at and past a multiple of 4, the vector tail) on every mode, with
// the source and the destination at every offset within a 4-element group.
TEST(Fp8Cuda, OddLengthsOnEveryModeAtEveryAlignment) {
  LMCACHE_REQUIRE_GPU();
  std::vector<std::byte> pool(4 * 4100);
  fill_random(pool, 3);
  for (std::size_t n : {0, 1, 2, 3, 4, 5, 7, 33, 1023, 1025, 4097}) {
    for (DType d : kWideDTypes) {
      const std::span<const std::byte> src(pool.data(), n * element_size(d));
      const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(pool.data()),
                                                n);
      for (std::size_t src_off = 0; src_off < 4; ++src_off) {
        for (std::size_t dst_off = 0; dst_off < 4; ++dst_off) {
          for (Fp8Format f : kFormats) {
            for (Fp8Overflow o : kOverflows) {
              EXPECT_EQ(first_mismatch(gpu_encode(src, d, f, o, src_off, dst_off),
                                       fp8_internal::reference_encode(src, d, f, o)),
                        -1)
                  << "n=" << n << " " << dtype_name(d) << " " << mode_name(f, o) << " src+"
                  << src_off << " dst+" << dst_off;
            }
            EXPECT_EQ(first_mismatch(gpu_decode(codes, d, f, dst_off, src_off),
                                     fp8_internal::reference_decode(codes, d, f), element_size(d)),
                      -1)
                << "n=" << n << " " << dtype_name(d) << " " << fp8_format_name(f) << " codes+"
                << dst_off << " dst+" << src_off;
          }
        }
      }
    }
  }
}

// Past the grid's capacity in the vectorised kernel (4 elements per work item) and, at offset
// 1, in the element-wise one: every thread loops again, and the tail past the last full group
// still lands right.
TEST(Fp8Cuda, SizesWhereThreadsLoopAgain) {
  LMCACHE_REQUIRE_GPU();
  const std::size_t n = 4 * kGridThreads + 4 * 1000 + 3;  // 67,112,963
  const cuda::MemoryInfo mem = cuda::memory_info();
  if (mem.free_bytes < 3 * (n * 4 + n)) {
    GTEST_SKIP() << "needs " << 3 * (n * 5) << " bytes of free GPU memory, has " << mem.free_bytes;
  }
  const KernelOptions simd{.threads = host_threads(), .backend = Fp8Backend::kSimd};
  std::vector<std::byte> src(n * 4);
  fill_random(src, 5);
  for (DType d : {DType::kFloat32, DType::kBFloat16}) {
    const std::span<const std::byte> in(src.data(), n * element_size(d));
    std::vector<std::uint8_t> want(n);
    fp8_encode_fast(in, d, n, want, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating, simd);
    for (std::size_t offset : {0, 1}) {
      EXPECT_EQ(first_mismatch(
                    gpu_encode(in, d, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating, offset, offset),
                    want),
                -1)
          << dtype_name(d) << " offset " << offset;
    }
    const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(src.data()), n);
    std::vector<std::byte> want_dec(n * element_size(d));
    fp8_decode_fast(codes, n, want_dec, d, Fp8Format::kE5M2, simd);
    for (std::size_t offset : {0, 1}) {
      EXPECT_EQ(first_mismatch(gpu_decode(codes, d, Fp8Format::kE5M2, offset, offset), want_dec,
                               element_size(d)),
                -1)
          << dtype_name(d) << " offset " << offset;
    }
  }
}

// More than 2^31 elements (32-bit index arithmetic would wrap): bfloat16 decode then encode of
// 2^31 + 31 elements, 8.6 GB on the GPU and about as much on the host, checked against per-code
// tables of the reference.
TEST(Fp8Cuda, MoreThan2To31Elements) {
  LMCACHE_REQUIRE_GPU();
  const std::size_t n = (std::size_t{1} << 31) + 31;
  const std::size_t device_need = n + 2 * n + n + 2 * kGuardBytes * 3;
  const std::size_t host_need = n + 2 * n + n;
  const cuda::MemoryInfo mem = cuda::memory_info();
  if (mem.free_bytes < device_need + (std::size_t{256} << 20)) {
    GTEST_SKIP() << "needs " << device_need << " bytes of free GPU memory, has " << mem.free_bytes;
  }
  if (host_available_bytes() < host_need + (std::size_t{2} << 30)) {
    GTEST_SKIP() << "needs " << host_need << " bytes of available host memory, has "
                 << host_available_bytes();
  }
  // Per-code expectations from the reference: decode(c), and encode(decode(c)).
  std::array<std::uint16_t, 256> dec{};
  std::array<std::uint8_t, 256> enc{};
  {
    std::vector<std::uint8_t> all(256);
    for (int c = 0; c < 256; ++c) all[c] = static_cast<std::uint8_t>(c);
    const auto wide = fp8_internal::reference_decode(all, DType::kBFloat16, Fp8Format::kE5M2);
    std::memcpy(dec.data(), wide.data(), wide.size());
    const auto back = fp8_internal::reference_encode(wide, DType::kBFloat16, Fp8Format::kE4M3FN,
                                                     Fp8Overflow::kSaturating);
    std::copy(back.begin(), back.end(), enc.begin());
  }
  std::vector<std::byte> codes(n);
  fill_random(codes, 11);
  Guarded d_codes(n, 0);
  Guarded d_wide(2 * n, 0);
  Guarded d_back(n, 0);
  cuda::copy_to_device(d_codes.data(), codes.data(), n);
  fp8_decode_cuda_device(reinterpret_cast<const std::uint8_t*>(d_codes.data()), n, d_wide.data(),
                         DType::kBFloat16, Fp8Format::kE5M2);
  fp8_encode_cuda_device(d_wide.data(), DType::kBFloat16, n,
                         reinterpret_cast<std::uint8_t*>(d_back.data()), Fp8Format::kE4M3FN,
                         Fp8Overflow::kSaturating);
  cuda::synchronize();
  EXPECT_TRUE(d_wide.guards_intact());
  EXPECT_TRUE(d_back.guards_intact());

  // The first mismatching element of each check, found in parallel (SIZE_MAX if none).
  auto first_bad = [&](auto bad) {
    const std::size_t parts = host_threads();
    const std::size_t step = n / parts + 1;
    std::vector<std::size_t> found(parts, SIZE_MAX);
    std::vector<std::thread> workers;
    for (std::size_t p = 0; p < parts; ++p) {
      workers.emplace_back([&, p] {
        for (std::size_t i = p * step; i < std::min(n, (p + 1) * step); ++i) {
          if (bad(i)) {
            found[p] = i;
            return;
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    return *std::min_element(found.begin(), found.end());
  };
  {
    const auto wide = d_wide.payload();
    const auto* w = reinterpret_cast<const std::uint16_t*>(wide.data());
    EXPECT_EQ(
        first_bad([&](std::size_t i) { return w[i] != dec[static_cast<std::uint8_t>(codes[i])]; }),
        SIZE_MAX);
  }
  const auto back = d_back.payload();
  EXPECT_EQ(first_bad([&](std::size_t i) {
              return static_cast<std::uint8_t>(back[i]) != enc[static_cast<std::uint8_t>(codes[i])];
            }),
            SIZE_MAX);
}

TEST(Fp8Cuda, HostPipelineMatchesReferenceOverSeveralChunks) {
  LMCACHE_REQUIRE_GPU();
  // More than two 4 Mi-element chunks, with a ragged last one.
  const std::size_t n = (std::size_t{9} << 20) + 333;
  std::vector<std::byte> src(n * 4);
  fill_random(src, 17);
  const KernelOptions cuda_opt{.backend = Fp8Backend::kCuda};
  for (DType d : kWideDTypes) {
    const std::span<const std::byte> in(src.data(), n * element_size(d));
    const auto want =
        fp8_internal::reference_encode(in, d, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating);
    std::vector<std::uint8_t> got(n);
    fp8_encode_fast(in, d, n, got, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating, cuda_opt);
    EXPECT_EQ(first_mismatch(got, want), -1) << dtype_name(d);

    const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(src.data()), n);
    const auto want_dec = fp8_internal::reference_decode(codes, d, Fp8Format::kE4M3FN);
    std::vector<std::byte> got_dec(want_dec.size());
    fp8_decode_fast(codes, n, got_dec, d, Fp8Format::kE4M3FN, cuda_opt);
    EXPECT_EQ(first_mismatch(got_dec, want_dec, element_size(d)), -1) << dtype_name(d);
  }
}

// copy_to_host must wait for work on a non-blocking stream (a plain cudaMemcpy does not).
TEST(Fp8Cuda, CopyToHostWaitsForNonBlockingStreams) {
  LMCACHE_REQUIRE_GPU();
  const std::size_t n = std::size_t{16} << 20;
  std::vector<std::byte> src(n * 4);
  fill_random(src, 19);
  const auto want = fp8_internal::reference_encode(src, DType::kFloat32, Fp8Format::kE4M3FN,
                                                   Fp8Overflow::kNonSaturating);
  cuda::DeviceBuffer in(src.size());
  cuda::DeviceBuffer out(n);
  cuda::copy_to_device(in.data(), src.data(), src.size());
  std::vector<std::uint8_t> got(n);
  for (int round = 0; round < 3; ++round) {
    cuda::Stream stream;
    const std::vector<std::uint8_t> zeros(n, 0);
    cuda::copy_to_device(out.data(), zeros.data(), n);
    fp8_encode_cuda_device(in.data(), DType::kFloat32, n, static_cast<std::uint8_t*>(out.data()),
                           Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating, stream.get());
    cuda::copy_to_host(got.data(), out.data(), n);
    EXPECT_EQ(first_mismatch(got, want), -1) << "round " << round;
  }
}

// Finding 1 on a GPU: a failed allocation's error must not be reported by the next launch.
TEST(Fp8Cuda, OutOfMemoryThenALaunchThatSucceeds) {
  LMCACHE_REQUIRE_GPU();
  const cuda::MemoryInfo mem = cuda::memory_info();
  EXPECT_THAT([&] { cuda::DeviceBuffer too_big(mem.total_bytes + (std::size_t{1} << 30)); },
              ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("out of memory")));
  std::vector<std::byte> src(4096);
  fill_random(src, 23);
  EXPECT_EQ(
      first_mismatch(gpu_encode(src, DType::kFloat16, Fp8Format::kE5M2, Fp8Overflow::kSaturating),
                     fp8_internal::reference_encode(src, DType::kFloat16, Fp8Format::kE5M2,
                                                    Fp8Overflow::kSaturating)),
      -1);
  EXPECT_TRUE(fp8_cuda_available());
}

TEST(Fp8Cuda, LaunchTimerMeasuresABatch) {
  LMCACHE_REQUIRE_GPU();
  cuda::DeviceBuffer a(std::size_t{1} << 20);
  cuda::DeviceBuffer b(std::size_t{1} << 20);
  cuda::LaunchTimer timer;
  const auto copy = [&](void* s) { cuda::copy_device_to_device(b.data(), a.data(), a.size(), s); };
  EXPECT_GE(timer.launches_for(1.0, copy), 1);
  EXPECT_GT(timer.ms_per_launch(10, copy), 0.0);
}

// Runs everywhere: without a usable GPU the CUDA surface fails loudly, never silently.
TEST(Fp8Cuda, UnavailableBackendThrows) {
  if (fp8_cuda_available()) GTEST_SKIP() << "a CUDA GPU is usable";
  EXPECT_FALSE(fp8_cuda_unavailable_reason().empty());
  EXPECT_THAT([] { cuda::DeviceBuffer b(16); }, ::testing::ThrowsMessage<std::runtime_error>(
                                                    HasSubstr(fp8_cuda_unavailable_reason())));
  std::uint8_t codes[4] = {};
  float out[4] = {};
  EXPECT_THROW(fp8_decode_cuda_device(codes, 4, out, DType::kFloat32, Fp8Format::kE4M3FN),
               std::runtime_error);
  EXPECT_THROW(cuda::LaunchTimer timer, std::runtime_error);
  EXPECT_THROW(cuda::Stream stream, std::runtime_error);
  EXPECT_THROW(cuda::memory_info(), std::runtime_error);
}

}  // namespace
}  // namespace lmcache::fp8
