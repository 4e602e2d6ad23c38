// File: lmcache/fp8/internal/cuda_runtime_none.cc
//
// The CUDA runtime of a build without CUDA (no nvcc, or LMCACHE_ENABLE_CUDA=OFF): there is
// none, so the backend reports itself not built and everything that needs a GPU throws.
#include "lmcache/fp8/internal/cuda_runtime.h"

namespace lmcache::fp8_internal {

CudaRuntime* real_cuda_runtime() { return nullptr; }

}  // namespace lmcache::fp8_internal
