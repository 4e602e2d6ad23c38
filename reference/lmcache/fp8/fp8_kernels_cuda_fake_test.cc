// File: lmcache/fp8/fp8_kernels_cuda_fake_test.cc
//
// The CUDA backend's host code against a fake CUDA runtime (testing/fake_cuda_runtime.h), on
// every machine and in every build: error attribution and clearing (a failed call's error never
// resurfaces as a later launch's failure; a launch is judged by its own error; sticky errors
// stop the backend), all-or-nothing allocation (staging, timers), availability (no GPU, no
// kernel image), argument validation, the vectorised-kernel decision, the chunked staging
// pipeline, waits before host copies, and event timing over many launches with reused streams
// and events. The fake runs kernels with the scalar reference codec and defers queued work
// until something waits for it, as a GPU may.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lmcache/fp8/fp8_kernels.h"
#include "lmcache/fp8/fp8_kernels_cuda.h"
#include "lmcache/fp8/internal/cuda_runtime.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_backend.h"
#include "lmcache/fp8/testing/fake_cuda_runtime.h"
#include "lmcache/fp8/testing/fp8_samples.h"
#include "lmcache/fp8/testing/kernel_checks.h"

namespace lmcache::fp8 {
namespace {

using cuda_testing::CudaCall;
using cuda_testing::FakeCudaRuntime;
using fp8_internal::DecodeMatches;
using fp8_internal::EncodeMatches;
using fp8_internal::first_mismatch;
using fp8_internal::kCudaErrorIllegalAddress;
using fp8_internal::kCudaErrorInvalidValue;
using fp8_internal::kCudaErrorLaunchOutOfResources;
using fp8_internal::kCudaErrorMemoryAllocation;
using fp8_internal::kCudaErrorNoKernelImageForDevice;
using fp8_internal::kCudaSuccess;
using fp8_internal::kFormats;
using fp8_internal::kOverflows;
using fp8_internal::kWideDTypes;
using fp8_internal::mode_name;
using fp8_internal::random_bytes;
using fp8_internal::ScopedCudaRuntimeOverride;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr KernelOptions kCudaOpt{.backend = Fp8Backend::kCuda};

// Staging chunks of the backend under test: odd and small, so multi-chunk calls (ragged chunks,
// both slots, reuse) cost little even under the sanitizers. Its buffers are 4 bytes per element.
constexpr std::size_t kChunk = 4099;

// How the size of one staging buffer appears in messages.
std::string staging_size() { return "(" + std::to_string(kChunk * 4) + " bytes)"; }

// The message of the exception `f` throws as E ("" if it throws nothing).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

class Fp8CudaFake : public ::testing::Test {
 protected:
  Fp8CudaFake() { override_.emplace(fake_, kChunk); }

  // Every test ends with the override gone (its staging freed) and nothing else left behind,
  // unless a sticky error destroyed the context (whose resources die with it: frees fail).
  void TearDown() override {
    override_.reset();
    if (fake_.sticky_error() != kCudaSuccess) return;
    EXPECT_EQ(fake_.device_allocations(), 0u);
    EXPECT_EQ(fake_.pinned_allocations(), 0u);
    EXPECT_EQ(fake_.streams(), 0u);
    EXPECT_EQ(fake_.events(), 0u);
    EXPECT_EQ(fake_.queued_ops(), 0u);
  }

  // Encodes `src` on the fake device, `src_offset` elements / `dst_offset` bytes into buffers,
  // on `stream`, and copies the codes back.
  std::vector<std::uint8_t> device_encode(std::span<const std::byte> src, DType d, Fp8Format f,
                                          Fp8Overflow o, std::size_t src_offset = 0,
                                          std::size_t dst_offset = 0, void* stream = nullptr) {
    const std::size_t elem = element_size(d);
    const std::size_t n = src.size() / elem;
    cuda::DeviceBuffer in(src.size() + src_offset * elem);
    cuda::DeviceBuffer out(n + dst_offset);
    auto* in_ptr = static_cast<std::byte*>(in.data()) + src_offset * elem;
    auto* out_ptr = static_cast<std::uint8_t*>(out.data()) + dst_offset;
    cuda::copy_to_device(in_ptr, src.data(), src.size());
    fp8_encode_cuda_device(in_ptr, d, n, out_ptr, f, o, stream);
    std::vector<std::uint8_t> host(n);
    cuda::copy_to_host(host.data(), out_ptr, n);  // waits for `stream` too
    return host;
  }

  std::vector<std::byte> device_decode(std::span<const std::uint8_t> codes, DType d, Fp8Format f,
                                       std::size_t src_offset = 0, std::size_t dst_offset = 0) {
    const std::size_t elem = element_size(d);
    const std::size_t n = codes.size();
    cuda::DeviceBuffer in(n + src_offset);
    cuda::DeviceBuffer out((n + dst_offset) * elem);
    auto* in_ptr = static_cast<std::uint8_t*>(in.data()) + src_offset;
    auto* out_ptr = static_cast<std::byte*>(out.data()) + dst_offset * elem;
    cuda::copy_to_device(in_ptr, codes.data(), n);
    fp8_decode_cuda_device(in_ptr, n, out_ptr, d, f);
    std::vector<std::byte> host(n * elem);
    cuda::copy_to_host(host.data(), out_ptr, host.size());
    return host;
  }

  FakeCudaRuntime fake_;
  std::optional<ScopedCudaRuntimeOverride> override_;
};

// ---------------------------------------------------------------------------------------------
// Availability

TEST_F(Fp8CudaFake, AvailableWithAUsableGpu) {
  EXPECT_TRUE(fp8_cuda_available());
  EXPECT_EQ(fp8_cuda_unavailable_reason(), "");
  EXPECT_EQ(fake_.calls(CudaCall::kKernelImage), 1u);
  EXPECT_TRUE(fp8_cuda_available());  // cached
  EXPECT_EQ(fake_.calls(CudaCall::kKernelImage), 1u);
}

TEST_F(Fp8CudaFake, NoGpuIsUnavailableWithTheReasonAndNoPendingError) {
  fake_.set_device_count(0);
  EXPECT_FALSE(fp8_cuda_available());
  EXPECT_THAT(fp8_cuda_unavailable_reason(),
              AllOf(HasSubstr("cudaGetDeviceCount"), HasSubstr("no CUDA-capable device")));
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
  EXPECT_THAT(message_of<std::runtime_error>([] { cuda::DeviceBuffer b(16); }),
              HasSubstr("no CUDA-capable device"));
  std::vector<std::byte> src(16);
  std::vector<std::uint8_t> dst(4);
  EXPECT_THAT(message_of<std::runtime_error>([&] {
                fp8_encode_fast(src, DType::kFloat32, 4, dst, Fp8Format::kE4M3FN,
                                Fp8Overflow::kNonSaturating, kCudaOpt);
              }),
              AllOf(HasSubstr("backend cuda requested"), HasSubstr("no CUDA-capable device")));
  EXPECT_EQ(fake_.calls(CudaCall::kMallocDevice), 0u);
  EXPECT_EQ(fake_.calls(CudaCall::kMallocPinned), 0u);
}

// A GPU the fat binary does not cover: unavailable (tests skip, the router refuses) instead of
// every launch failing with "no kernel image".
TEST_F(Fp8CudaFake, GpuWithoutAKernelImageIsUnavailableWithTheReason) {
  fake_.set_kernel_image_error(kCudaErrorNoKernelImageForDevice);
  fake_.set_compute_capability(7, 5);
  EXPECT_FALSE(fp8_cuda_available());
  EXPECT_THAT(fp8_cuda_unavailable_reason(),
              AllOf(HasSubstr("compute capability 7.5"), HasSubstr("no kernel image"),
                    HasSubstr("cudaFuncGetAttributes"), HasSubstr("architectures fake"),
                    HasSubstr("CMAKE_CUDA_ARCHITECTURES")));
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
  std::vector<std::byte> src(64);
  std::vector<std::uint8_t> dst(16);
  EXPECT_THROW(fp8_encode_fast(src, DType::kFloat32, 16, dst, Fp8Format::kE4M3FN,
                               Fp8Overflow::kNonSaturating, kCudaOpt),
               std::runtime_error);
  EXPECT_EQ(fake_.calls(CudaCall::kLaunch), 0u);
}

// ---------------------------------------------------------------------------------------------
// Finding 1: a failed call's error is cleared and never reported as a later launch's failure.

TEST_F(Fp8CudaFake, OutOfMemoryIsNotReportedAsTheNextLaunchsFailure) {
  fake_.set_device_memory(std::size_t{1} << 20);
  const auto src = random_bytes(4096, 1);
  const auto want = fp8_internal::reference_encode(src, DType::kFloat32, Fp8Format::kE4M3FN,
                                                   Fp8Overflow::kSaturating);
  cuda::DeviceBuffer in(src.size());
  cuda::DeviceBuffer out(want.size());
  cuda::copy_to_device(in.data(), src.data(), src.size());

  EXPECT_THAT(message_of<std::runtime_error>([] { cuda::DeviceBuffer big(std::size_t{2} << 20); }),
              AllOf(HasSubstr("cudaMalloc(2097152 bytes)"), HasSubstr("out of memory")));
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess) << "the failed cudaMalloc's error was left set";

  // The launch is queued and succeeds: it must not throw (the caller would free a buffer the
  // GPU is about to write), and its output arrives.
  EXPECT_NO_THROW(fp8_encode_cuda_device(in.data(), DType::kFloat32, want.size(),
                                         static_cast<std::uint8_t*>(out.data()), Fp8Format::kE4M3FN,
                                         Fp8Overflow::kSaturating));
  std::vector<std::uint8_t> got(want.size());
  cuda::copy_to_host(got.data(), out.data(), got.size());
  EXPECT_EQ(first_mismatch(got, want), -1);
  EXPECT_TRUE(fp8_cuda_available());  // out of memory is not sticky
}

TEST_F(Fp8CudaFake, FailedStagingAllocationIsNotReportedByTheNextLaunch) {
  const auto src = random_bytes(4096, 2);
  std::vector<std::uint8_t> host_out(1024);
  fake_.fail_call(CudaCall::kMallocDevice, 1, kCudaErrorMemoryAllocation);
  EXPECT_THAT(message_of<std::runtime_error>([&] {
                fp8_encode_fast(src, DType::kFloat32, 1024, host_out, Fp8Format::kE5M2,
                                Fp8Overflow::kNonSaturating, kCudaOpt);
              }),
              AllOf(HasSubstr("cudaMalloc" + staging_size()), HasSubstr("out of memory")));
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
  const auto want = fp8_internal::reference_encode(src, DType::kFloat32, Fp8Format::kE5M2,
                                                   Fp8Overflow::kNonSaturating);
  EXPECT_EQ(
      first_mismatch(
          device_encode(src, DType::kFloat32, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating), want),
      -1);
}

// An error someone else left pending is neither stolen nor blamed on the launch.
TEST_F(Fp8CudaFake, LaunchIsJudgedByItsOwnErrorOnly) {
  ASSERT_TRUE(fp8_cuda_available());
  fake_.fail_call(CudaCall::kMemGetInfo, 1, kCudaErrorInvalidValue);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(fake_.mem_get_info(&free_bytes, &total_bytes), kCudaErrorInvalidValue);  // "user code"
  const auto src = random_bytes(256, 3);
  const auto want = fp8_internal::reference_encode(src, DType::kBFloat16, Fp8Format::kE4M3FN,
                                                   Fp8Overflow::kNonSaturating);
  EXPECT_EQ(first_mismatch(device_encode(src, DType::kBFloat16, Fp8Format::kE4M3FN,
                                         Fp8Overflow::kNonSaturating),
                           want),
            -1);
  EXPECT_EQ(fake_.pending_error(), kCudaErrorInvalidValue);
  EXPECT_EQ(fake_.get_last_error(), kCudaErrorInvalidValue);
}

TEST_F(Fp8CudaFake, FailedLaunchThrowsItsOwnErrorAndClearsIt) {
  cuda::DeviceBuffer in(16);
  cuda::DeviceBuffer out(32);
  fake_.fail_call(CudaCall::kLaunch, 1, kCudaErrorLaunchOutOfResources);
  EXPECT_THAT(message_of<std::runtime_error>([&] {
                fp8_decode_cuda_device(static_cast<std::uint8_t*>(in.data()), 16, out.data(),
                                       DType::kFloat16, Fp8Format::kE4M3FN);
              }),
              AllOf(HasSubstr("fp8 decode kernel launch"), HasSubstr("too many resources"),
                    Not(HasSubstr("sticky"))));
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
  EXPECT_TRUE(fp8_cuda_available());
  EXPECT_NO_THROW(fp8_decode_cuda_device(static_cast<std::uint8_t*>(in.data()), 16, out.data(),
                                         DType::kFloat16, Fp8Format::kE4M3FN));
  cuda::synchronize();
}

// ---------------------------------------------------------------------------------------------
// Sticky errors

TEST_F(Fp8CudaFake, StickyFaultStopsTheBackendAndNamesTheFirstError) {
  const auto src = random_bytes(4096, 4);
  cuda::DeviceBuffer in(src.size());
  cuda::DeviceBuffer out(1024);
  cuda::copy_to_device(in.data(), src.data(), src.size());
  fake_.fault_next_kernel(kCudaErrorIllegalAddress);
  // The launch itself succeeds; the fault surfaces at the wait.
  EXPECT_NO_THROW(fp8_encode_cuda_device(in.data(), DType::kFloat32, 1024,
                                         static_cast<std::uint8_t*>(out.data()), Fp8Format::kE4M3FN,
                                         Fp8Overflow::kNonSaturating));
  EXPECT_THAT(message_of<std::runtime_error>([] { cuda::synchronize(); }),
              AllOf(HasSubstr("cudaDeviceSynchronize"), HasSubstr("illegal memory access"),
                    HasSubstr("sticky")));
  EXPECT_FALSE(fp8_cuda_available());
  EXPECT_THAT(fp8_cuda_unavailable_reason(), HasSubstr("illegal memory access"));
  const std::size_t launches = fake_.calls(CudaCall::kLaunch);
  EXPECT_THAT(message_of<std::runtime_error>([&] {
                fp8_encode_cuda_device(in.data(), DType::kFloat32, 1024,
                                       static_cast<std::uint8_t*>(out.data()), Fp8Format::kE4M3FN,
                                       Fp8Overflow::kNonSaturating);
              }),
              HasSubstr("illegal memory access"));
  EXPECT_EQ(fake_.calls(CudaCall::kLaunch), launches) << "work was sent to a dead context";
}

TEST_F(Fp8CudaFake, StickyFaultInsideTheHostPipelineThrowsAndLeavesNothingQueued) {
  const std::size_t n = kChunk + 100;
  const auto src = random_bytes(n * 2, 5);
  std::vector<std::uint8_t> dst(n);
  fake_.fault_next_kernel(kCudaErrorIllegalAddress);
  EXPECT_THAT(message_of<std::runtime_error>([&] {
                fp8_encode_fast(src, DType::kFloat16, n, dst, Fp8Format::kE4M3FN,
                                Fp8Overflow::kNonSaturating, kCudaOpt);
              }),
              AllOf(HasSubstr("illegal memory access"), HasSubstr("sticky")));
  EXPECT_EQ(fake_.queued_ops(), 0u);
  EXPECT_FALSE(fp8_cuda_available());
  EXPECT_THROW(fp8_encode_fast(src, DType::kFloat16, n, dst, Fp8Format::kE4M3FN,
                               Fp8Overflow::kNonSaturating, kCudaOpt),
               std::runtime_error);
}

// ---------------------------------------------------------------------------------------------
// Finding 2: staging allocation is all or nothing.

TEST_F(Fp8CudaFake, StagingAllocationFailureAtEveryStepLeavesNothingAllocated) {
  // The staging's allocations in order: per slot two pinned buffers, two device buffers and a
  // stream. Fail each in turn; every failure must free what came before it.
  const std::vector<std::pair<CudaCall, int>> steps = {
      {CudaCall::kMallocPinned, 1}, {CudaCall::kMallocPinned, 2}, {CudaCall::kMallocDevice, 1},
      {CudaCall::kMallocDevice, 2}, {CudaCall::kStreamCreate, 1}, {CudaCall::kMallocPinned, 3},
      {CudaCall::kMallocPinned, 4}, {CudaCall::kMallocDevice, 3}, {CudaCall::kMallocDevice, 4},
      {CudaCall::kStreamCreate, 2}};
  const std::size_t n = 1000;
  const auto src = random_bytes(n * 4, 6);
  const auto want = fp8_internal::reference_encode(src, DType::kFloat32, Fp8Format::kE4M3FN,
                                                   Fp8Overflow::kSaturating);
  std::vector<std::uint8_t> dst(n);
  for (const auto& [call, nth] : steps) {
    const int error =
        call == CudaCall::kStreamCreate ? kCudaErrorInvalidValue : kCudaErrorMemoryAllocation;
    fake_.fail_call(call, nth, error);
    EXPECT_THROW(fp8_encode_fast(src, DType::kFloat32, n, dst, Fp8Format::kE4M3FN,
                                 Fp8Overflow::kSaturating, kCudaOpt),
                 std::runtime_error)
        << "step " << static_cast<int>(call) << "#" << nth;
    EXPECT_EQ(fake_.pinned_allocations(), 0u) << "step " << static_cast<int>(call) << "#" << nth;
    EXPECT_EQ(fake_.device_allocations(), 0u) << "step " << static_cast<int>(call) << "#" << nth;
    EXPECT_EQ(fake_.streams(), 0u) << "step " << static_cast<int>(call) << "#" << nth;
    EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
  }
  // The retry after all those failures allocates exactly one staging set, once.
  for (int round = 0; round < 3; ++round) {
    std::fill(dst.begin(), dst.end(), 0);
    fp8_encode_fast(src, DType::kFloat32, n, dst, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating,
                    kCudaOpt);
    EXPECT_EQ(first_mismatch(dst, want), -1);
    EXPECT_EQ(fake_.pinned_allocations(), 4u);
    EXPECT_EQ(fake_.device_allocations(), 4u);
    EXPECT_EQ(fake_.streams(), 2u);
  }
}

TEST_F(Fp8CudaFake, StagingThatDoesNotFitIsReportedAndNotLeaked) {
  fake_.set_device_memory(kChunk * 4 * 5 / 2);  // two of the four device staging buffers
  const auto codes = random_bytes(999, 7);
  std::vector<std::byte> dst(999 * 2);
  const std::span<const std::uint8_t> in(reinterpret_cast<const std::uint8_t*>(codes.data()),
                                         codes.size());
  for (int attempt = 0; attempt < 3; ++attempt) {
    EXPECT_THAT(message_of<std::runtime_error>([&] {
                  fp8_decode_fast(in, in.size(), dst, DType::kBFloat16, Fp8Format::kE5M2, kCudaOpt);
                }),
                AllOf(HasSubstr("cudaMalloc" + staging_size()), HasSubstr("out of memory")));
    EXPECT_EQ(fake_.device_bytes(), 0u);
    EXPECT_EQ(fake_.pinned_allocations(), 0u);
    EXPECT_EQ(fake_.streams(), 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// The host pipeline

TEST_F(Fp8CudaFake, HostPipelineMatchesTheReferenceOverSeveralChunks) {
  // Ten chunks (both slots, each reused) and a ragged last one.
  const std::size_t n = 10 * kChunk + 333;
  const auto src = random_bytes(n * 4, 8);
  EXPECT_TRUE(
      EncodeMatches(src, DType::kFloat32, Fp8Format::kE5M2, Fp8Overflow::kNonSaturating, kCudaOpt));
  const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(src.data()), n);
  EXPECT_TRUE(DecodeMatches(codes, DType::kFloat16, Fp8Format::kE4M3FN, kCudaOpt));
}

TEST_F(Fp8CudaFake, HostPipelineOddLengthsOnEveryMode) {
  const auto pool = random_bytes(4 * 3 * kChunk, 9);
  for (std::size_t n :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{7},
        std::size_t{33}, std::size_t{1025}, kChunk - 1, kChunk, kChunk + 1, 3 * kChunk - 3}) {
    for (DType d : kWideDTypes) {
      const std::span<const std::byte> src(pool.data(), n * element_size(d));
      for (Fp8Format f : kFormats) {
        for (Fp8Overflow o : kOverflows) {
          std::vector<std::uint8_t> got(n);
          fp8_encode_fast(src, d, n, got, f, o, kCudaOpt);
          EXPECT_EQ(first_mismatch(got, fp8_internal::reference_encode(src, d, f, o)), -1)
              << "n=" << n << " " << dtype_name(d) << " " << mode_name(f, o);
        }
        const std::span<const std::uint8_t> codes(
            reinterpret_cast<const std::uint8_t*>(pool.data()), n);
        std::vector<std::byte> got(n * element_size(d));
        fp8_decode_fast(codes, n, got, d, f, kCudaOpt);
        EXPECT_EQ(first_mismatch(got, fp8_internal::reference_decode(codes, d, f), element_size(d)),
                  -1)
            << "n=" << n << " " << dtype_name(d) << " " << fp8_format_name(f);
      }
    }
  }
}

// A failure in the middle of a multi-chunk call: the call throws, waits for everything it
// queued, and nothing writes into its destination afterwards.
TEST_F(Fp8CudaFake, FailureMidPipelineLeavesNoWorkBehind) {
  const std::size_t n = 2 * kChunk + 5;
  const auto src = random_bytes(n * 2, 10);
  for (const auto& [call, nth] :
       {std::pair{CudaCall::kLaunch, 2}, std::pair{CudaCall::kMemcpyAsync, 4},
        std::pair{CudaCall::kMemcpyAsync, 5}}) {
    std::vector<std::uint8_t> dst(n);
    fake_.fail_call(call, nth, kCudaErrorLaunchOutOfResources);
    EXPECT_THROW(fp8_encode_fast(src, DType::kBFloat16, n, dst, Fp8Format::kE4M3FN,
                                 Fp8Overflow::kNonSaturating, kCudaOpt),
                 std::runtime_error);
    EXPECT_EQ(fake_.queued_ops(), 0u);
    EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
    std::fill(dst.begin(), dst.end(), 0xEE);
    std::vector<std::uint8_t> other(n);
    fp8_encode_fast(src, DType::kBFloat16, n, other, Fp8Format::kE4M3FN,
                    Fp8Overflow::kNonSaturating, kCudaOpt);
    EXPECT_EQ(std::count(dst.begin(), dst.end(), 0xEE), static_cast<long>(n))
        << "a late write reached the failed call's destination";
    EXPECT_EQ(first_mismatch(
                  other, fp8_internal::reference_encode(src, DType::kBFloat16, Fp8Format::kE4M3FN,
                                                        Fp8Overflow::kNonSaturating)),
              -1);
  }
}

TEST_F(Fp8CudaFake, StagingStaysOnItsDeviceAndTheCallersDeviceIsRestored) {
  fake_.set_device_count(2);
  const auto src = random_bytes(400, 11);
  std::vector<std::uint8_t> dst(100);
  fp8_encode_fast(src, DType::kFloat32, 100, dst, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating,
                  kCudaOpt);  // staging on device 0
  ASSERT_EQ(fake_.set_device(1), kCudaSuccess);
  fp8_encode_fast(src, DType::kFloat32, 100, dst, Fp8Format::kE4M3FN, Fp8Overflow::kSaturating,
                  kCudaOpt);
  int device = -1;
  ASSERT_EQ(fake_.get_device(&device), kCudaSuccess);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(fake_.calls(CudaCall::kSetDevice), 3u);  // ours: to 0 and back to 1
}

TEST_F(Fp8CudaFake, ConcurrentHostCallsAreSerialisedAndCorrect) {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<long> mismatch(kThreads, -2);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::size_t n = 20000 + 7 * static_cast<std::size_t>(t);
      const auto src = random_bytes(n * 2, 100 + t);
      std::vector<std::uint8_t> got(n);
      fp8_encode_fast(src, DType::kFloat16, n, got, Fp8Format::kE5M2, Fp8Overflow::kSaturating,
                      kCudaOpt);
      mismatch[t] =
          first_mismatch(got, fp8_internal::reference_encode(src, DType::kFloat16, Fp8Format::kE5M2,
                                                             Fp8Overflow::kSaturating));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatch[t], -1) << "thread " << t;
  EXPECT_EQ(fake_.streams(), 2u);  // one staging set for all
}

// ---------------------------------------------------------------------------------------------
// Device-pointer entry points

// The fake faults a vectorised kernel on misaligned pointers, so every placement here checks
// that the backend picks the element-wise kernel exactly when it must.
TEST_F(Fp8CudaFake, UnalignedPlacementsOnEveryDtype) {
  const auto pool = random_bytes(4 * 67, 12);
  for (DType d : kWideDTypes) {
    const std::span<const std::byte> src(pool.data(), 67 * element_size(d));
    const auto want =
        fp8_internal::reference_encode(src, d, Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating);
    const std::span<const std::uint8_t> codes(reinterpret_cast<const std::uint8_t*>(pool.data()),
                                              67);
    const auto want_dec = fp8_internal::reference_decode(codes, d, Fp8Format::kE5M2);
    for (std::size_t src_off = 0; src_off < 4; ++src_off) {
      for (std::size_t dst_off = 0; dst_off < 4; ++dst_off) {
        EXPECT_EQ(first_mismatch(device_encode(src, d, Fp8Format::kE4M3FN,
                                               Fp8Overflow::kNonSaturating, src_off, dst_off),
                                 want),
                  -1)
            << dtype_name(d) << " src+" << src_off << " dst+" << dst_off;
        EXPECT_EQ(first_mismatch(device_decode(codes, d, Fp8Format::kE5M2, dst_off, src_off),
                                 want_dec, element_size(d)),
                  -1)
            << dtype_name(d) << " codes+" << dst_off << " dst+" << src_off;
      }
    }
  }
  EXPECT_TRUE(fp8_cuda_available()) << "a kernel faulted";
}

TEST_F(Fp8CudaFake, DeviceEntryPointsValidateBeforeEnqueuing) {
  cuda::DeviceBuffer buf(256);
  auto* base = static_cast<std::uint8_t*>(buf.data());
  const auto bad_format = static_cast<Fp8Format>(7);
  const auto bad_overflow = static_cast<Fp8Overflow>(9);
  // The reference codec's messages, word for word.
  const std::string ref_format = message_of<std::invalid_argument>(
      [&] { fp8_encode({}, DType::kFloat32, 0, {}, bad_format, Fp8Overflow::kNonSaturating); });
  const std::string ref_overflow = message_of<std::invalid_argument>(
      [&] { fp8_encode({}, DType::kFloat32, 0, {}, Fp8Format::kE4M3FN, bad_overflow); });
  const std::string ref_dtype = message_of<std::invalid_argument>(
      [&] { fp8_decode({}, 0, {}, DType::kUInt8, Fp8Format::kE4M3FN); });
  ASSERT_FALSE(ref_format.empty());
  EXPECT_EQ(message_of<std::invalid_argument>([&] {
              fp8_encode_cuda_device(base, DType::kFloat32, 4, base + 128, bad_format,
                                     Fp8Overflow::kNonSaturating);
            }),
            ref_format);
  EXPECT_EQ(message_of<std::invalid_argument>([&] {
              fp8_encode_cuda_device(base, DType::kFloat32, 4, base + 128, Fp8Format::kE4M3FN,
                                     bad_overflow);
            }),
            ref_overflow);
  EXPECT_EQ(message_of<std::invalid_argument>([&] {
              fp8_decode_cuda_device(base, 4, base + 128, DType::kUInt8, Fp8Format::kE4M3FN);
            }),
            ref_dtype);
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_encode_cuda_device(base, DType::kFloat32,
                                       std::numeric_limits<std::size_t>::max() / 2, base + 128,
                                       Fp8Format::kE4M3FN, Fp8Overflow::kNonSaturating);
              }),
              HasSubstr("overflows"));
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_encode_cuda_device(nullptr, DType::kFloat32, 4, base, Fp8Format::kE4M3FN,
                                       Fp8Overflow::kNonSaturating);
              }),
              HasSubstr("source device pointer is null"));
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_decode_cuda_device(base, 4, nullptr, DType::kFloat16, Fp8Format::kE4M3FN);
              }),
              HasSubstr("destination device pointer is null"));
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_encode_cuda_device(base + 1, DType::kFloat32, 4, base + 128, Fp8Format::kE4M3FN,
                                       Fp8Overflow::kNonSaturating);
              }),
              HasSubstr("not aligned to its element size 4"));
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_decode_cuda_device(base, 4, base + 129, DType::kBFloat16, Fp8Format::kE5M2);
              }),
              HasSubstr("not aligned to its element size 2"));
  // Overlap: 16 float32 at base, their codes at base + 60 (inside the source) ...
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_encode_cuda_device(base, DType::kFloat32, 16, base + 60, Fp8Format::kE4M3FN,
                                       Fp8Overflow::kNonSaturating);
              }),
              HasSubstr("overlap"));
  // ... and codes at base + 8 decoding into 8 float16 at base (codes inside the output).
  EXPECT_THAT(message_of<std::invalid_argument>([&] {
                fp8_decode_cuda_device(base + 8, 8, base, DType::kFloat16, Fp8Format::kE4M3FN);
              }),
              HasSubstr("overlap"));
  EXPECT_EQ(fake_.calls(CudaCall::kLaunch), 0u);
  // Adjacent ranges are fine, and count 0 launches nothing.
  EXPECT_NO_THROW(fp8_encode_cuda_device(base, DType::kFloat32, 16, base + 64, Fp8Format::kE4M3FN,
                                         Fp8Overflow::kNonSaturating));
  EXPECT_NO_THROW(fp8_encode_cuda_device(nullptr, DType::kFloat32, 0, nullptr, Fp8Format::kE4M3FN,
                                         Fp8Overflow::kNonSaturating));
  EXPECT_EQ(fake_.calls(CudaCall::kLaunch), 1u);
  cuda::synchronize();
}

// copy_to_host must wait for kernels queued on non-blocking streams, which a plain cudaMemcpy
// does not (the fake runs them only when waited for).
TEST_F(Fp8CudaFake, CopyToHostWaitsForNonBlockingStreams) {
  cuda::Stream stream;
  const auto src = random_bytes(1024, 13);
  const auto want = fp8_internal::reference_encode(src, DType::kFloat16, Fp8Format::kE5M2,
                                                   Fp8Overflow::kSaturating);
  EXPECT_EQ(first_mismatch(device_encode(src, DType::kFloat16, Fp8Format::kE5M2,
                                         Fp8Overflow::kSaturating, 0, 0, stream.get()),
                           want),
            -1);
}

// ---------------------------------------------------------------------------------------------
// Timing

TEST_F(Fp8CudaFake, LaunchTimerTimesManyLaunchesWithOneStreamAndTwoEvents) {
  fake_.set_op_ms(0.25);
  cuda::DeviceBuffer a(4096);
  cuda::DeviceBuffer b(4096);
  {
    cuda::LaunchTimer timer;
    EXPECT_EQ(fake_.streams(), 1u);
    EXPECT_EQ(fake_.events(), 2u);
    auto copy = [&](void* s) { cuda::copy_device_to_device(b.data(), a.data(), 4096, s); };
    for (int round = 0; round < 3; ++round) {
      EXPECT_DOUBLE_EQ(timer.ms_per_launch(8, copy), 0.25);
    }
    EXPECT_EQ(fake_.calls(CudaCall::kMemcpyAsync), 24u);
    EXPECT_EQ(timer.launches_for(10.0, copy), 40);
    EXPECT_THROW(timer.ms_per_launch(0, copy), std::invalid_argument);
    EXPECT_EQ(fake_.calls(CudaCall::kStreamCreate), 1u);
    EXPECT_EQ(fake_.calls(CudaCall::kEventCreate), 2u);
    EXPECT_EQ(fake_.calls(CudaCall::kEventRecord), 2u * 4);
  }
  EXPECT_EQ(fake_.streams(), 0u);
  EXPECT_EQ(fake_.events(), 0u);
}

TEST_F(Fp8CudaFake, LaunchTimerIsMadeWholeOrNotAtAll) {
  fake_.fail_call(CudaCall::kEventCreate, 2, kCudaErrorMemoryAllocation);
  EXPECT_THROW(cuda::LaunchTimer timer, std::runtime_error);
  EXPECT_EQ(fake_.streams(), 0u);
  EXPECT_EQ(fake_.events(), 0u);
  EXPECT_EQ(fake_.pending_error(), kCudaSuccess);
}

TEST_F(Fp8CudaFake, MemoryInfoReportsTheDevice) {
  fake_.set_device_memory(std::size_t{8} << 20);
  cuda::DeviceBuffer buf(std::size_t{3} << 20);
  const cuda::MemoryInfo info = cuda::memory_info();
  EXPECT_EQ(info.total_bytes, std::size_t{8} << 20);
  EXPECT_EQ(info.free_bytes, std::size_t{5} << 20);
}

}  // namespace
}  // namespace lmcache::fp8
