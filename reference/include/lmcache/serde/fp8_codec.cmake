# fp8_codec.cmake: included by the serde CMakeLists.
#
# The scalar reference fp8 codec as its own small library, lmcache::fp8_codec: the serde
# library and the SIMD / CUDA device backends (which must match it byte for byte) depend on it.
set(LMCACHE_FP8_CODEC_SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp8_codec.cc)

lmcache_add_library(fp8_codec
  INCLUDE_ROOT ${LMCACHE_REFERENCE_INCLUDE}
  SOURCES ${LMCACHE_FP8_CODEC_SOURCES}
  DEPS lmcache::core)

lmcache_add_test(fp8_codec_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fp8_codec_test.cc
  DEPS lmcache::fp8_codec
  LABELS unit)
