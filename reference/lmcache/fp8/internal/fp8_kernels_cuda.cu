// File: lmcache/fp8/internal/fp8_kernels_cuda.cu
//
// The CUDA fp8 kernels. Each element goes through the same fp8_bits.h function the CPU
// kernels use, so the bytes are the reference's. Grid-stride loops over std::size_t indexes
// (counts past 2^32 are fine); in the vectorised form a thread moves 4 elements (one 16- or
// 8-byte load of wide values, one 4-byte store of codes, or the reverse), and the last
// count % 4 elements are handled one per thread. The grid is capped at kMaxBlocks blocks of
// kThreadsPerBlock threads, so above 65535 * 256 work items (about 67 M elements vectorised,
// 16.8 M element-wise) threads go round the loop more than once.
//
// Launches go through cudaLaunchKernel, which returns the launch's own error: a `<<<...>>>`
// launch returns nothing, and reading cudaGetLastError() after it would also report whatever
// an earlier failed call left pending in the thread's error state.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "lmcache/fp8/internal/fp8_bits.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_launch.h"

namespace lmcache::fp8_internal {
namespace {

namespace fb = fp8_internal::fp8_bits;

constexpr int kThreadsPerBlock = 256;
constexpr std::size_t kMaxBlocks = 65535;

template <int kKind, Fp8Format kFormat, bool kSat>
__device__ __forceinline__ std::uint8_t encode_value(std::uint32_t bits) {
  if constexpr (kKind == kWideF32) {
    return fb::encode_f32_bits<kFormat, kSat>(bits);
  } else if constexpr (kKind == kWideF16) {
    return fb::encode_f16_bits<kFormat, kSat>(static_cast<std::uint16_t>(bits));
  } else {
    return fb::encode_bf16_bits<kFormat, kSat>(static_cast<std::uint16_t>(bits));
  }
}

template <int kKind>
__device__ __forceinline__ std::uint32_t load_wide(const void* src, std::size_t i) {
  if constexpr (kKind == kWideF32) {
    return static_cast<const std::uint32_t*>(src)[i];
  } else {
    return static_cast<const std::uint16_t*>(src)[i];
  }
}

// The grid-stride walk of both kernels: with kVec, groups of 4 elements (group g is elements
// 4g to 4g+3), then the last n % 4 elements one by one; without, every element one by one.
template <bool kVec, class Group, class Element>
__device__ __forceinline__ void grid_stride(std::size_t n, Group&& group, Element&& element) {
  const std::size_t tid = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  std::size_t done = 0;
  if constexpr (kVec) {
    const std::size_t groups = n / 4;
    for (std::size_t g = tid; g < groups; g += stride) group(g);
    done = groups * 4;
  }
  for (std::size_t i = done + tid; i < n; i += stride) element(i);
}

template <int kKind, Fp8Format kFormat, bool kSat, bool kVec>
__global__ void encode_kernel(const void* __restrict__ src, std::size_t n,
                              std::uint8_t* __restrict__ dst) {
  grid_stride<kVec>(
      n,
      [&](std::size_t g) {
        std::uint32_t in[4];
        if constexpr (kKind == kWideF32) {
          const uint4 v = static_cast<const uint4*>(src)[g];
          in[0] = v.x;
          in[1] = v.y;
          in[2] = v.z;
          in[3] = v.w;
        } else {
          const uint2 v = static_cast<const uint2*>(src)[g];
          in[0] = v.x & 0xFFFFu;
          in[1] = v.x >> 16;
          in[2] = v.y & 0xFFFFu;
          in[3] = v.y >> 16;
        }
        std::uint32_t out = 0;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          out |= static_cast<std::uint32_t>(encode_value<kKind, kFormat, kSat>(in[k])) << (8 * k);
        }
        reinterpret_cast<std::uint32_t*>(dst)[g] = out;
      },
      [&](std::size_t i) {
        dst[i] = encode_value<kKind, kFormat, kSat>(load_wide<kKind>(src, i));
      });
}

template <int kKind, Fp8Format kFormat>
__device__ __forceinline__ std::uint32_t decode_value(std::uint8_t code) {
  if constexpr (kKind == kWideF32) {
    return fb::decode_f32_bits<kFormat>(code);
  } else if constexpr (kKind == kWideF16) {
    return fb::decode_f16_bits<kFormat>(code);
  } else {
    return fb::decode_bf16_bits<kFormat>(code);
  }
}

template <int kKind, Fp8Format kFormat, bool kVec>
__global__ void decode_kernel(const std::uint8_t* __restrict__ src, std::size_t n,
                              void* __restrict__ dst) {
  grid_stride<kVec>(
      n,
      [&](std::size_t g) {
        const std::uint32_t codes = reinterpret_cast<const std::uint32_t*>(src)[g];
        std::uint32_t out[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          out[k] = decode_value<kKind, kFormat>(static_cast<std::uint8_t>(codes >> (8 * k)));
        }
        if constexpr (kKind == kWideF32) {
          static_cast<uint4*>(dst)[g] = make_uint4(out[0], out[1], out[2], out[3]);
        } else {
          static_cast<uint2*>(dst)[g] =
              make_uint2(out[0] | (out[1] << 16), out[2] | (out[3] << 16));
        }
      },
      [&](std::size_t i) {
        const std::uint32_t v = decode_value<kKind, kFormat>(src[i]);
        if constexpr (kKind == kWideF32) {
          static_cast<std::uint32_t*>(dst)[i] = v;
        } else {
          static_cast<std::uint16_t*>(dst)[i] = static_cast<std::uint16_t>(v);
        }
      });
}

unsigned blocks_for(std::size_t work_items) {
  const std::size_t blocks = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

// Launches `kernel` with the arguments (src, n, dst) and returns the launch's own error.
template <class Src, class Dst>
int launch(void (*kernel)(Src, std::size_t, Dst), std::size_t work_items, Src src, std::size_t n,
           Dst dst, cudaStream_t s) {
  void* args[] = {&src, &n, &dst};
  return static_cast<int>(
      cudaLaunchKernel(kernel, dim3(blocks_for(work_items)), dim3(kThreadsPerBlock), args, 0, s));
}

template <int kKind, Fp8Format kFormat, bool kSat>
int encode_as(const void* src, std::size_t n, std::uint8_t* dst, bool vec, cudaStream_t s) {
  return vec ? launch(encode_kernel<kKind, kFormat, kSat, true>, n / 4 + 4, src, n, dst, s)
             : launch(encode_kernel<kKind, kFormat, kSat, false>, n, src, n, dst, s);
}

template <int kKind, Fp8Format kFormat>
int encode_with_overflow(const void* src, std::size_t n, std::uint8_t* dst, Fp8Overflow o, bool vec,
                         cudaStream_t s) {
  return o == Fp8Overflow::kSaturating ? encode_as<kKind, kFormat, true>(src, n, dst, vec, s)
                                       : encode_as<kKind, kFormat, false>(src, n, dst, vec, s);
}

template <int kKind>
int encode_with_format(const void* src, std::size_t n, std::uint8_t* dst, Fp8Format f,
                       Fp8Overflow o, bool vec, cudaStream_t s) {
  return f == Fp8Format::kE5M2
             ? encode_with_overflow<kKind, Fp8Format::kE5M2>(src, n, dst, o, vec, s)
             : encode_with_overflow<kKind, Fp8Format::kE4M3FN>(src, n, dst, o, vec, s);
}

template <int kKind, Fp8Format kFormat>
int decode_as(const std::uint8_t* src, std::size_t n, void* dst, bool vec, cudaStream_t s) {
  return vec ? launch(decode_kernel<kKind, kFormat, true>, n / 4 + 4, src, n, dst, s)
             : launch(decode_kernel<kKind, kFormat, false>, n, src, n, dst, s);
}

template <int kKind>
int decode_with_format(const std::uint8_t* src, std::size_t n, void* dst, Fp8Format f, bool vec,
                       cudaStream_t s) {
  return f == Fp8Format::kE5M2 ? decode_as<kKind, Fp8Format::kE5M2>(src, n, dst, vec, s)
                               : decode_as<kKind, Fp8Format::kE4M3FN>(src, n, dst, vec, s);
}

}  // namespace

int launch_encode(const void* d_src, WideKind src_kind, std::size_t count, std::uint8_t* d_dst,
                  Fp8Format format, Fp8Overflow overflow, bool vectorized, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (src_kind) {
    case kWideF16:
      return encode_with_format<kWideF16>(d_src, count, d_dst, format, overflow, vectorized, s);
    case kWideBF16:
      return encode_with_format<kWideBF16>(d_src, count, d_dst, format, overflow, vectorized, s);
    default:
      return encode_with_format<kWideF32>(d_src, count, d_dst, format, overflow, vectorized, s);
  }
}

int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst, WideKind dst_kind,
                  Fp8Format format, bool vectorized, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dst_kind) {
    case kWideF16:
      return decode_with_format<kWideF16>(d_src, count, d_dst, format, vectorized, s);
    case kWideBF16:
      return decode_with_format<kWideBF16>(d_src, count, d_dst, format, vectorized, s);
    default:
      return decode_with_format<kWideF32>(d_src, count, d_dst, format, vectorized, s);
  }
}

int kernel_image_status() {
  cudaFuncAttributes attributes;
  return static_cast<int>(
      cudaFuncGetAttributes(&attributes, encode_kernel<kWideF32, Fp8Format::kE4M3FN, false, true>));
}

}  // namespace lmcache::fp8_internal
