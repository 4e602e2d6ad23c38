# Debian's libtorch-dev 1.13 (CPU only). We link libtorch_cpu and libc10 directly instead of
# find_package(Torch): that config probes for CUDA (nvcc may be installed) and is slow.
if(TARGET lmcache::torch)
  return()
endif()
find_path(LMCACHE_TORCH_INCLUDE_DIR ATen/core/Tensor.h)
find_library(LMCACHE_TORCH_CPU_LIBRARY torch_cpu)
find_library(LMCACHE_C10_LIBRARY c10)
if(NOT LMCACHE_TORCH_INCLUDE_DIR OR NOT LMCACHE_TORCH_CPU_LIBRARY OR NOT LMCACHE_C10_LIBRARY)
  message(FATAL_ERROR "libtorch (ATen/c10) not found: run scripts/install-deps.sh "
                      "(Debian package libtorch-dev)")
endif()
add_library(lmcache::torch INTERFACE IMPORTED)
set_target_properties(lmcache::torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${LMCACHE_TORCH_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "${LMCACHE_TORCH_CPU_LIBRARY};${LMCACHE_C10_LIBRARY}")
