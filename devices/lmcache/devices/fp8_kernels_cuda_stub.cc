// File: lmcache/devices/fp8_kernels_cuda_stub.cc
//
// The CUDA backend of a build without CUDA (no nvcc, or LMCACHE_ENABLE_CUDA=OFF): the queries
// say "no", everything else throws std::runtime_error saying why.
#include <stdexcept>

#include "lmcache/devices/fp8_kernels_cuda.h"
#include "lmcache/devices/internal/fp8_kernels_cuda_launch.h"

namespace lmcache::devices {
namespace {

[[noreturn]] void not_built() {
  throw std::runtime_error(
      "fp8 cuda backend: not built (configure with nvcc available and LMCACHE_ENABLE_CUDA "
      "AUTO or ON)");
}

}  // namespace

bool fp8_cuda_built() { return false; }
bool fp8_cuda_available() { return false; }

void fp8_encode_cuda_device(const void*, DType, std::size_t, std::uint8_t*, Fp8Format, Fp8Overflow,
                            void*) {
  not_built();
}

void fp8_decode_cuda_device(const std::uint8_t*, std::size_t, void*, DType, Fp8Format, void*) {
  not_built();
}

namespace cuda {

DeviceBuffer::DeviceBuffer(std::size_t) { not_built(); }
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  data_ = other.data_;
  size_ = other.size_;
  other.data_ = nullptr;
  other.size_ = 0;
  return *this;
}

void copy_to_device(void*, const void*, std::size_t) { not_built(); }
void copy_to_host(void*, const void*, std::size_t) { not_built(); }
void copy_device_to_device(void*, const void*, std::size_t, void*) { not_built(); }
void synchronize(void*) { not_built(); }
double time_ms(const std::function<void(void*)>&) { not_built(); }

}  // namespace cuda

}  // namespace lmcache::devices

namespace lmcache::devices_internal {

void encode_host(const std::byte*, DType, std::size_t, std::uint8_t*, Fp8Format, Fp8Overflow) {
  devices::not_built();
}

void decode_host(const std::uint8_t*, std::size_t, std::byte*, DType, Fp8Format) {
  devices::not_built();
}

}  // namespace lmcache::devices_internal
