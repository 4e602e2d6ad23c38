# LmcacheCuda.cmake: whether the CUDA fp8 kernels (reference/lmcache/fp8, lmcache::fp8_kernels)
# are built. Included by reference/CMakeLists.txt, the highest directory holding CUDA sources,
# before its components; sets LMCACHE_HAVE_CUDA. CUDA is optional.
#
# LMCACHE_ENABLE_CUDA: AUTO builds the CUDA kernels when check_language(CUDA) finds nvcc, ON
# requires it, OFF never builds them.
#
# CMAKE_CUDA_ARCHITECTURES, unless given: a fat binary for the GPU generations LMCache users
# run, SASS for Ampere (80: A100/A30, 86: A10/A40/RTX 30xx), Ada (89: L4/L40/RTX 40xx), Hopper
# (90: H100/H200), Blackwell (100: B200/GB200 and, binary-compatible, B300; 120: RTX 50xx/RTX
# PRO 6000) plus compute_120 PTX, which the driver JIT-compiles for newer GPUs. A SASS image
# also runs on later minor versions of its major (sm_80 on sm_87, sm_120 on sm_121). The full
# list costs about 10 s more nvcc time than one architecture (devices/README.md); sanitizer
# builds (LMCACHE_SANITIZE), which CI runs without a GPU, default to 90 alone. On a GPU the
# kernels' image is checked at run time (fp8_cuda_available()), so a GPU the binary does not
# cover is reported unavailable, with the reason, instead of failing every launch.
# CMake 3.25 predates CUDA 13; an explicit architecture list avoids its out-of-date "all" /
# "all-major" tables (CUDA 13 dropped sm_50..sm_72), and everything else (compiler detection,
# FindCUDAToolkit, CUDA::cudart) works unchanged with nvcc 13.0.
set(LMCACHE_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA fp8 kernels: AUTO, ON or OFF")
set_property(CACHE LMCACHE_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
set(LMCACHE_HAVE_CUDA OFF)
if(NOT LMCACHE_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(LMCACHE_HAVE_CUDA ON)
  elseif(LMCACHE_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LMCACHE_ENABLE_CUDA=ON but no CUDA compiler was found (set CUDACXX)")
  elseif(NOT LMCACHE_ENABLE_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "LMCACHE_ENABLE_CUDA must be AUTO, ON or OFF (got '${LMCACHE_ENABLE_CUDA}')")
  endif()
endif()
if(LMCACHE_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    if(LMCACHE_SANITIZE)
      set(lmcache_cuda_default_archs 90)
    else()
      set(lmcache_cuda_default_archs "80-real;86-real;89-real;90-real;100-real;120")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${lmcache_cuda_default_archs}" CACHE STRING
        "CUDA architectures of the fp8 kernels (see cmake/LmcacheCuda.cmake)")
  endif()
  # ccache (found at the top) caches nvcc's output too: warm rebuilds skip the fat binary.
  if(CCACHE_PROGRAM AND NOT DEFINED CMAKE_CUDA_COMPILER_LAUNCHER)
    set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
  endif()
  # Enabled here, the highest directory holding CUDA sources; consumers link plain host code.
  enable_language(CUDA)
  # CMake 3.25 knows nvcc's dialect flags only up to C++17, so CUDA_STANDARD 20 (or the
  # CXX_STANDARD 20 that CUDA sources inherit) fails with "requires the language dialect
  # CUDA20". nvcc >= 12 accepts -std=c++20; tell CMake so, as CMake 3.26+ does itself.
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0
     AND NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  endif()
  # GLOBAL: a static build carries CUDA::cudart, private to lmcache::fp8_kernels, onto the link
  # lines of its consumers in other directories (the serde).
  find_package(CUDAToolkit REQUIRED GLOBAL)
  message(STATUS "lmcache fp8: CUDA kernels ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "lmcache fp8: CUDA kernels OFF (CPU-only build)")
endif()
