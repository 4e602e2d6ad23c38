// File: lmcache/devices/fp8_kernels_cuda.cc
//
// Host side of the CUDA backend (built only with CUDA): argument checks, device memory and
// timing helpers, and the pinned, double-buffered host -> device -> host pipeline.
//
// Pipeline: the data moves in chunks of kChunkElements through two slots, each with pinned
// input/output staging buffers, device buffers and its own stream. While the GPU copies and
// converts one slot's chunk, the CPU copies the next chunk into the other slot's pinned
// buffer and copies finished results out, so the PCIe transfers, the kernel and the host
// copies overlap. The staging (~128 MiB pinned + 128 MiB device) is allocated on first use on
// the then-current device and kept for the process's lifetime (never freed: freeing at exit
// would race the CUDA runtime's own teardown).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/devices/fp8_kernels_cuda.h"
#include "lmcache/devices/internal/fp8_kernels_cuda_launch.h"

namespace lmcache::devices {
namespace {

using devices_internal::WideKind;

void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorString(err) +
                             " (cudaError " + std::to_string(static_cast<int>(err)) + ")");
  }
}

void check(int err, const char* call) { check(static_cast<cudaError_t>(err), call); }

void require_gpu() {
  if (!fp8_cuda_available()) {
    throw std::runtime_error("fp8 cuda backend: no CUDA GPU is usable on this machine");
  }
}

WideKind wide_kind(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return devices_internal::kWideF16;
    case DType::kBFloat16:
      return devices_internal::kWideBF16;
    default:  // kFloat32; validated by the caller
      return devices_internal::kWideF32;
  }
}

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

void check_element_alignment(const void* p, std::size_t elem, const char* which) {
  if (!aligned(p, elem)) {
    throw std::invalid_argument(std::string("fp8 cuda: ") + which +
                                " device pointer is not aligned to its element size " +
                                std::to_string(elem));
  }
}

// ---------------------------------------------------------------------------------------------
// The staging pipeline.

constexpr std::size_t kChunkElements = std::size_t{4} << 20;  // 16 MiB of float32 per chunk
constexpr std::size_t kMaxElemBytes = 4;

struct Slot {
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  void* dev_in = nullptr;
  void* dev_out = nullptr;
  cudaStream_t stream = nullptr;
  std::byte* host_out = nullptr;  // where the slot's pending result goes, if any
  std::size_t out_bytes = 0;
};

struct Staging {
  std::mutex mu;
  bool ready = false;
  int device = 0;
  Slot slots[2];
};

Staging& staging() {
  static Staging* s = new Staging;  // intentionally never destroyed (see file comment)
  return *s;
}

void allocate(Staging& s) {
  if (s.ready) return;
  check(cudaGetDevice(&s.device), "cudaGetDevice");
  const std::size_t bytes = kChunkElements * kMaxElemBytes;
  for (Slot& slot : s.slots) {
    check(cudaHostAlloc(&slot.pinned_in, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    check(cudaHostAlloc(&slot.pinned_out, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    check(cudaMalloc(&slot.dev_in, bytes), "cudaMalloc");
    check(cudaMalloc(&slot.dev_out, bytes), "cudaMalloc");
    check(cudaStreamCreateWithFlags(&slot.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  s.ready = true;
}

// Waits for the slot's work and delivers its pending result.
void drain(Slot& slot) {
  if (slot.host_out == nullptr) return;
  std::byte* out = std::exchange(slot.host_out, nullptr);
  check(cudaStreamSynchronize(slot.stream), "cudaStreamSynchronize");
  std::memcpy(out, slot.pinned_out, slot.out_bytes);
}

// Makes the staging device current for the duration of a call.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// Runs launch(dev_in, n, dev_out, stream) over `count` elements chunk by chunk.
template <class Launch>
void pipeline(const std::byte* src, std::size_t in_elem, std::size_t count, std::byte* dst,
              std::size_t out_elem, const Launch& launch) {
  require_gpu();
  Staging& s = staging();
  std::lock_guard<std::mutex> lock(s.mu);
  allocate(s);
  DeviceGuard guard(s.device);
  try {
    for (std::size_t begin = 0, c = 0; begin < count; begin += kChunkElements, ++c) {
      Slot& slot = s.slots[c % 2];
      drain(slot);
      const std::size_t n = std::min(kChunkElements, count - begin);
      std::memcpy(slot.pinned_in, src + begin * in_elem, n * in_elem);
      check(cudaMemcpyAsync(slot.dev_in, slot.pinned_in, n * in_elem, cudaMemcpyHostToDevice,
                            slot.stream),
            "cudaMemcpyAsync(host to device)");
      check(launch(slot.dev_in, n, slot.dev_out, slot.stream), "fp8 kernel launch");
      check(cudaMemcpyAsync(slot.pinned_out, slot.dev_out, n * out_elem, cudaMemcpyDeviceToHost,
                            slot.stream),
            "cudaMemcpyAsync(device to host)");
      slot.host_out = dst + begin * out_elem;
      slot.out_bytes = n * out_elem;
    }
    drain(s.slots[0]);
    drain(s.slots[1]);
  } catch (...) {
    // Leave no pending result behind: a later call must not write into this call's buffers.
    for (Slot& slot : s.slots) {
      if (slot.host_out != nullptr) cudaStreamSynchronize(slot.stream);
      slot.host_out = nullptr;
    }
    throw;
  }
}

}  // namespace

bool fp8_cuda_built() { return true; }

bool fp8_cuda_available() {
  static const bool available = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return available;
}

void fp8_encode_cuda_device(const void* d_src, DType src_dtype, std::size_t count,
                            std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                            void* stream) {
  fp8_encode({}, src_dtype, 0, {}, format, overflow);  // the reference's enum/dtype checks
  const std::size_t elem = element_size(src_dtype);
  check_element_alignment(d_src, elem, "source");
  require_gpu();
  if (count == 0) return;
  const bool vec = aligned(d_src, 4 * elem) && aligned(d_dst, 4);
  check(devices_internal::launch_encode(d_src, wide_kind(src_dtype), count, d_dst, format, overflow,
                                        vec, stream),
        "fp8 encode kernel launch");
}

void fp8_decode_cuda_device(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                            DType dst_dtype, Fp8Format format, void* stream) {
  fp8_decode({}, 0, {}, dst_dtype, format);
  const std::size_t elem = element_size(dst_dtype);
  check_element_alignment(d_dst, elem, "destination");
  require_gpu();
  if (count == 0) return;
  const bool vec = aligned(d_src, 4) && aligned(d_dst, 4 * elem);
  check(devices_internal::launch_decode(d_src, count, d_dst, wide_kind(dst_dtype), format, vec,
                                        stream),
        "fp8 decode kernel launch");
}

namespace cuda {

DeviceBuffer::DeviceBuffer(std::size_t size) : size_(size) {
  require_gpu();
  if (size > 0) check(cudaMalloc(&data_, size), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void copy_to_device(void* d_dst, const void* h_src, std::size_t bytes) {
  check(cudaMemcpy(d_dst, h_src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(host to device)");
}

void copy_to_host(void* h_dst, const void* d_src, std::size_t bytes) {
  check(cudaMemcpy(h_dst, d_src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(device to host)");
}

void copy_device_to_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream) {
  check(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice,
                        static_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync(device to device)");
}

void synchronize(void* stream) {
  if (stream == nullptr) {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  } else {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }
}

double time_ms(const std::function<void(void* stream)>& work) {
  require_gpu();
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  // Released on every path, including a throwing `work`.
  struct Release {
    cudaStream_t& stream;
    cudaEvent_t& start;
    cudaEvent_t& stop;
    ~Release() {
      if (start != nullptr) cudaEventDestroy(start);
      if (stop != nullptr) cudaEventDestroy(stop);
      cudaStreamDestroy(stream);
    }
  } release{stream, start, stop};
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  work(stream);
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  return ms;
}

}  // namespace cuda

}  // namespace lmcache::devices

namespace lmcache::devices_internal {

void encode_host(const std::byte* src, DType src_dtype, std::size_t count, std::uint8_t* dst,
                 Fp8Format format, Fp8Overflow overflow) {
  const WideKind kind = devices::wide_kind(src_dtype);
  devices::pipeline(src, element_size(src_dtype), count, reinterpret_cast<std::byte*>(dst), 1,
                    [&](void* in, std::size_t n, void* out, cudaStream_t stream) {
                      // Staging buffers are cudaMalloc'ed (256-byte aligned): always vectorised.
                      return launch_encode(in, kind, n, static_cast<std::uint8_t*>(out), format,
                                           overflow, true, stream);
                    });
}

void decode_host(const std::uint8_t* src, std::size_t count, std::byte* dst, DType dst_dtype,
                 Fp8Format format) {
  const WideKind kind = devices::wide_kind(dst_dtype);
  devices::pipeline(reinterpret_cast<const std::byte*>(src), 1, count, dst, element_size(dst_dtype),
                    [&](void* in, std::size_t n, void* out, cudaStream_t stream) {
                      return launch_decode(static_cast<const std::uint8_t*>(in), n, out, kind,
                                           format, true, stream);
                    });
}

}  // namespace lmcache::devices_internal
