// File: lmcache/fp8/internal/fp8_kernels_cuda_launch.h
//
// Internal: the kernel launchers compiled by nvcc (fp8_kernels_cuda.cu). Their only caller is
// the real CUDA runtime (cuda_runtime_real.cc), which the host code reaches through the
// CudaRuntime interface (cuda_runtime.h). They check nothing: callers validate dtypes, enums,
// pointers and alignment first.
//
// Each returns the cudaError_t (as int; 0 = success) of its own launch, as cudaLaunchKernel
// reports it, never an error some earlier call left pending in the thread's error state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lmcache/fp8/fp8_codec.h"
#include "lmcache/fp8/internal/fp8_wide_kind.h"

namespace lmcache::fp8_internal {

// `vectorized`: the caller checked that the wide pointer is aligned to 4 elements and the code
// pointer to 4 bytes, so each thread can move 4 elements with one load and one store.
int launch_encode(const void* d_src, WideKind src_kind, std::size_t count, std::uint8_t* d_dst,
                  Fp8Format format, Fp8Overflow overflow, bool vectorized, void* stream);
int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst, WideKind dst_kind,
                  Fp8Format format, bool vectorized, void* stream);

// kernel_image_status()
//
// cudaFuncGetAttributes on one of the kernels for the current device: 0 when this build's fat
// binary holds an image that loads there (a SASS image for its architecture, or PTX the driver
// can JIT-compile for it), cudaErrorNoKernelImageForDevice (209) or
// cudaErrorInvalidDeviceFunction (98) when it does not. All kernels are compiled for the same
// architecture list, so one stands for all.
int kernel_image_status();

}  // namespace lmcache::fp8_internal
