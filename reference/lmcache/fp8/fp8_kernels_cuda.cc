// File: lmcache/fp8/fp8_kernels_cuda.cc
//
// Host side of the CUDA backend: argument checks, error handling, device memory, streams and
// timing, and the pinned, double-buffered host -> device -> host pipeline. It calls the CUDA
// runtime only through the CudaRuntime interface (internal/cuda_runtime.h), so it is built in
// every configuration and tested against a fake runtime on machines without a GPU; without
// CUDA the backend simply has no runtime.
//
// Error discipline (see fp8_kernels_cuda.h): every CUDA call is checked with its own return
// value; when one fails, its error is read back out of the thread's error state
// (get_last_error) before throwing, so no later check can mistake it for its own; a sticky
// error is remembered and refuses all further work.
//
// Pipeline: the data moves in chunks of kStagingChunkElements through two slots, each with
// pinned input/output staging buffers, device buffers and its own stream. While the GPU copies
// and converts one slot's chunk, the CPU copies the next chunk into the other slot's pinned
// buffer and copies finished results out, so the PCIe transfers, the kernel and the host copies
// overlap. The staging (64 MiB pinned + 64 MiB device) is allocated on first use on the
// then-current device and kept for the process's lifetime (never freed: freeing at exit would
// race the CUDA runtime's own teardown).
#include "lmcache/fp8/fp8_kernels_cuda.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "lmcache/fp8/internal/cuda_runtime.h"
#include "lmcache/fp8/internal/fp8_kernels_cuda_backend.h"

namespace lmcache::fp8_internal {
namespace {

constexpr std::size_t kMaxElemBytes = 4;

WideKind wide_kind(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return kWideF16;
    case DType::kBFloat16:
      return kWideBF16;
    default:  // kFloat32; validated by the caller
      return kWideF32;
  }
}

struct Slot {
  void* pinned_in = nullptr;
  void* pinned_out = nullptr;
  void* dev_in = nullptr;
  void* dev_out = nullptr;
  void* stream = nullptr;
  std::byte* host_out = nullptr;  // where the slot's pending result goes, if any
  std::size_t out_bytes = 0;
};

struct Staging {
  bool ready = false;
  int device = 0;
  Slot slots[2];
};

}  // namespace

// The backend's state for one CudaRuntime: the real one (process-wide, never destroyed) or a
// test's fake (ScopedCudaRuntimeOverride).
class CudaBackend {
 public:
  // `chunk_elements`: elements per staging chunk (tests shrink it to reach many chunks cheaply).
  CudaBackend(CudaRuntime* runtime, std::size_t chunk_elements)
      : rt_(runtime), chunk_elements_(chunk_elements) {}
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  CudaRuntime& rt() const { return *rt_; }

  // Throws std::runtime_error for a failed call `what`; see fail().
  void check(int error, const std::string& what) {
    if (error != kCudaSuccess) fail(error, what);
  }

  // Clears `error` out of the thread's CUDA error state (a failed call records it there, and
  // CUDA keeps it until someone reads it), remembers it when it is sticky, and throws it.
  [[noreturn]] void fail(int error, const std::string& what) {
    std::string message = "fp8 cuda: " + what + " failed: " + rt_->error_text(error);
    consume(error);
    if (is_sticky_cuda_error(error)) {
      message +=
          "; the error is sticky: the CUDA context is unusable and the cuda backend refuses "
          "all further work in this process (restart it)";
    }
    throw std::runtime_error(message);
  }

  // For calls whose failure cannot be thrown (destructors, clean-up after an earlier error).
  void ignore(int error) {
    if (error != kCudaSuccess) consume(error);
  }

  // Empty when the backend is usable; otherwise why not.
  std::string unavailable_reason() {
    {
      std::lock_guard<std::mutex> lock(sticky_mu_);
      if (!sticky_.empty()) return sticky_;
    }
    std::lock_guard<std::mutex> lock(availability_mu_);
    if (!availability_) availability_ = probe();
    return *availability_;
  }

  void require_available() {
    const std::string why = unavailable_reason();
    if (!why.empty()) throw std::runtime_error("fp8 cuda backend: " + why);
  }

  template <class Launch>
  void pipeline(const std::byte* src, std::size_t in_elem, std::size_t count, std::byte* dst,
                std::size_t out_elem, const Launch& launch);

  // Frees the staging (ScopedCudaRuntimeOverride's teardown; the real backend never does).
  void release_staging() {
    std::lock_guard<std::mutex> lock(staging_mu_);
    release(staging_);
  }

 private:
  class DeviceGuard;

  void consume(int error) {
    rt_->get_last_error();
    if (is_sticky_cuda_error(error)) {
      std::lock_guard<std::mutex> lock(sticky_mu_);
      if (sticky_.empty()) {
        sticky_ = "an earlier sticky CUDA error made the CUDA context unusable: " +
                  rt_->error_text(error) + " (restart the process)";
      }
    }
  }

  std::string probe();
  void allocate(Staging& s);
  void release(Staging& s) noexcept;
  void drain(Slot& slot);
  void abandon(Staging& s) noexcept;

  CudaRuntime* const rt_;  // nullptr: a build without CUDA
  const std::size_t chunk_elements_;
  std::mutex sticky_mu_;
  std::string sticky_;  // set once, by the first sticky error
  std::mutex availability_mu_;
  std::optional<std::string> availability_;
  std::mutex staging_mu_;  // held for a whole pipeline run
  Staging staging_;
};

namespace {

std::atomic<CudaBackend*> g_override{nullptr};

CudaBackend& backend() {
  if (CudaBackend* b = g_override.load(std::memory_order_acquire)) return *b;
  static CudaBackend* real =
      new CudaBackend(real_cuda_runtime(), kStagingChunkElements);  // never destroyed
  return *real;
}

// backend(), once it is known to be usable.
CudaBackend& usable_backend() {
  CudaBackend& b = backend();
  b.require_available();
  return b;
}

}  // namespace

std::string CudaBackend::probe() {
  if (rt_ == nullptr) {
    return "this build has no CUDA kernels (nvcc was not found at configure time, or "
           "LMCACHE_ENABLE_CUDA=OFF)";
  }
  auto failed = [&](int error, const std::string& what) {
    const std::string text = what + " failed: " + rt_->error_text(error);
    consume(error);
    return text;
  };
  int count = 0;
  if (const int e = rt_->get_device_count(&count); e != kCudaSuccess) {
    // Typically cudaErrorNoDevice, or cudaErrorInsufficientDriver without a driver.
    return "no usable CUDA GPU: " + failed(e, "cudaGetDeviceCount");
  }
  if (count <= 0) return "no usable CUDA GPU: the CUDA runtime sees none";
  int device = 0;
  if (const int e = rt_->get_device(&device); e != kCudaSuccess) {
    return "no usable CUDA GPU: " + failed(e, "cudaGetDevice");
  }
  if (const int e = rt_->kernel_image_status(); e != kCudaSuccess) {
    std::string gpu = "GPU " + std::to_string(device);
    int major = 0;
    int minor = 0;
    if (const int ce = rt_->compute_capability(device, &major, &minor); ce == kCudaSuccess) {
      gpu += " (compute capability " + std::to_string(major) + "." + std::to_string(minor) + ")";
    } else {
      ignore(ce);
    }
    return "the fp8 kernels have no image that loads on " + gpu + ": " +
           failed(e, "cudaFuncGetAttributes") + "; this build covers CUDA architectures " +
           rt_->kernel_architectures() +
           " (configure with -DCMAKE_CUDA_ARCHITECTURES naming this GPU's)";
  }
  return "";
}

void CudaBackend::allocate(Staging& s) {
  if (s.ready) return;
  // Built aside and committed only when complete: a failure frees what was made so far, so
  // nothing leaks and the next call starts from nothing again.
  Staging fresh;
  try {
    check(rt_->get_device(&fresh.device), "cudaGetDevice");
    const std::size_t bytes = chunk_elements_ * kMaxElemBytes;
    const std::string size = "(" + std::to_string(bytes) + " bytes)";
    for (Slot& slot : fresh.slots) {
      auto make = [&](void*& out, auto call, const std::string& what) {
        void* p = nullptr;
        check(call(&p), what);
        out = p;
      };
      make(
          slot.pinned_in, [&](void** p) { return rt_->malloc_pinned(p, bytes); },
          "cudaHostAlloc" + size);
      make(
          slot.pinned_out, [&](void** p) { return rt_->malloc_pinned(p, bytes); },
          "cudaHostAlloc" + size);
      make(
          slot.dev_in, [&](void** p) { return rt_->malloc_device(p, bytes); }, "cudaMalloc" + size);
      make(
          slot.dev_out, [&](void** p) { return rt_->malloc_device(p, bytes); },
          "cudaMalloc" + size);
      make(
          slot.stream, [&](void** p) { return rt_->stream_create(p); },
          "cudaStreamCreateWithFlags");
    }
  } catch (...) {
    release(fresh);
    throw;
  }
  fresh.ready = true;
  s = fresh;
}

void CudaBackend::release(Staging& s) noexcept {
  for (Slot& slot : s.slots) {
    if (slot.stream != nullptr) {
      ignore(rt_->stream_synchronize(slot.stream));
      ignore(rt_->stream_destroy(slot.stream));
    }
    if (slot.dev_out != nullptr) ignore(rt_->free_device(slot.dev_out));
    if (slot.dev_in != nullptr) ignore(rt_->free_device(slot.dev_in));
    if (slot.pinned_out != nullptr) ignore(rt_->free_pinned(slot.pinned_out));
    if (slot.pinned_in != nullptr) ignore(rt_->free_pinned(slot.pinned_in));
  }
  s = Staging{};
}

// Waits for the slot's work and delivers its pending result.
void CudaBackend::drain(Slot& slot) {
  if (slot.host_out == nullptr) return;
  std::byte* out = std::exchange(slot.host_out, nullptr);
  check(rt_->stream_synchronize(slot.stream), "cudaStreamSynchronize (staging slot)");
  std::memcpy(out, slot.pinned_out, slot.out_bytes);
}

// After a failure: waits for whatever the failed call queued (on both slots, pending result or
// not: a chunk whose launch failed may still have its input copy in flight) and drops the
// pending results, so nothing writes into the caller's buffers or the staging after the throw.
void CudaBackend::abandon(Staging& s) noexcept {
  for (Slot& slot : s.slots) {
    if (slot.stream != nullptr) ignore(rt_->stream_synchronize(slot.stream));
    slot.host_out = nullptr;
  }
}

// Makes the staging device current for the duration of a call.
class CudaBackend::DeviceGuard {
 public:
  DeviceGuard(CudaBackend& b, int device) : b_(b) {
    b_.check(b_.rt().get_device(&previous_), "cudaGetDevice");
    if (previous_ != device) {
      b_.check(b_.rt().set_device(device), "cudaSetDevice");
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) b_.ignore(b_.rt().set_device(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  CudaBackend& b_;
  int previous_ = 0;
  bool changed_ = false;
};

// Runs launch(dev_in, n, dev_out, stream) over `count` elements chunk by chunk.
template <class Launch>
void CudaBackend::pipeline(const std::byte* src, std::size_t in_elem, std::size_t count,
                           std::byte* dst, std::size_t out_elem, const Launch& launch) {
  require_available();
  std::lock_guard<std::mutex> lock(staging_mu_);
  allocate(staging_);
  DeviceGuard guard(*this, staging_.device);
  try {
    for (std::size_t begin = 0, c = 0; begin < count; begin += chunk_elements_, ++c) {
      Slot& slot = staging_.slots[c % 2];
      drain(slot);
      const std::size_t n = std::min(chunk_elements_, count - begin);
      std::memcpy(slot.pinned_in, src + begin * in_elem, n * in_elem);
      check(rt_->memcpy_async(slot.dev_in, slot.pinned_in, n * in_elem, CopyKind::kHostToDevice,
                              slot.stream),
            "cudaMemcpyAsync (host to device, staging)");
      check(launch(slot.dev_in, n, slot.dev_out, slot.stream), "fp8 kernel launch (staging)");
      check(rt_->memcpy_async(slot.pinned_out, slot.dev_out, n * out_elem, CopyKind::kDeviceToHost,
                              slot.stream),
            "cudaMemcpyAsync (device to host, staging)");
      slot.host_out = dst + begin * out_elem;
      slot.out_bytes = n * out_elem;
    }
    drain(staging_.slots[0]);
    drain(staging_.slots[1]);
  } catch (...) {
    abandon(staging_);
    throw;
  }
}

void encode_host(const std::byte* src, DType src_dtype, std::size_t count, std::uint8_t* dst,
                 Fp8Format format, Fp8Overflow overflow) {
  CudaBackend& b = backend();
  const WideKind kind = wide_kind(src_dtype);
  b.pipeline(src, element_size(src_dtype), count, reinterpret_cast<std::byte*>(dst), 1,
             [&](void* in, std::size_t n, void* out, void* stream) {
               // Staging buffers are cudaMalloc'ed (256-byte aligned): always vectorised.
               return b.rt().launch_encode(in, kind, n, static_cast<std::uint8_t*>(out), format,
                                           overflow, true, stream);
             });
}

void decode_host(const std::uint8_t* src, std::size_t count, std::byte* dst, DType dst_dtype,
                 Fp8Format format) {
  CudaBackend& b = backend();
  const WideKind kind = wide_kind(dst_dtype);
  b.pipeline(reinterpret_cast<const std::byte*>(src), 1, count, dst, element_size(dst_dtype),
             [&](void* in, std::size_t n, void* out, void* stream) {
               return b.rt().launch_decode(static_cast<const std::uint8_t*>(in), n, out, kind,
                                           format, true, stream);
             });
}

ScopedCudaRuntimeOverride::ScopedCudaRuntimeOverride(CudaRuntime& runtime,
                                                     std::size_t staging_chunk_elements) {
  if (staging_chunk_elements == 0) {
    throw std::invalid_argument("ScopedCudaRuntimeOverride: staging_chunk_elements must be >= 1");
  }
  backend_ = new CudaBackend(&runtime, staging_chunk_elements);
  previous_ = g_override.exchange(backend_, std::memory_order_acq_rel);
}

ScopedCudaRuntimeOverride::~ScopedCudaRuntimeOverride() {
  g_override.store(previous_, std::memory_order_release);
  backend_->release_staging();
  delete backend_;
}

}  // namespace lmcache::fp8_internal

namespace lmcache::fp8 {
namespace {

using fp8_internal::backend;
using fp8_internal::CopyKind;
using fp8_internal::usable_backend;
using fp8_internal::wide_kind;

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// count * elem, or SIZE_MAX when that overflows (the reference's checks then report it).
std::size_t saturated_bytes(std::size_t count, std::size_t elem) {
  if (elem != 0 && count > std::numeric_limits<std::size_t>::max() / elem) {
    return std::numeric_limits<std::size_t>::max();
  }
  return count * elem;
}

// The device-pointer checks the reference codec cannot make (it validates formats, dtypes and
// sizes, given spans of exactly the needed sizes).
void check_device_ranges(const void* src, std::size_t src_elem, const void* dst,
                         std::size_t dst_elem, std::size_t count, DType wide_dtype,
                         bool wide_is_src) {
  if (count == 0) return;
  if (src == nullptr || dst == nullptr) {
    throw std::invalid_argument(std::string("fp8 cuda: the ") +
                                (src == nullptr ? "source" : "destination") +
                                " device pointer is null (count " + std::to_string(count) + ")");
  }
  const void* wide = wide_is_src ? src : dst;
  const std::size_t elem = wide_is_src ? src_elem : dst_elem;
  if (!aligned(wide, elem)) {
    throw std::invalid_argument(std::string("fp8 cuda: the ") +
                                (wide_is_src ? "source" : "destination") + " device pointer (" +
                                std::string(dtype_name(wide_dtype)) +
                                ") is not aligned to its element size " + std::to_string(elem));
  }
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const std::size_t src_bytes = count * src_elem;  // no overflow: checked by the reference
  const std::size_t dst_bytes = count * dst_elem;
  if (s < d + dst_bytes && d < s + src_bytes) {
    throw std::invalid_argument(
        "fp8 cuda: the source and destination device ranges overlap (the kernels read and "
        "write through __restrict__ pointers)");
  }
}

}  // namespace

bool fp8_cuda_built() { return fp8_internal::real_cuda_runtime() != nullptr; }

bool fp8_cuda_available() { return backend().unavailable_reason().empty(); }

std::string fp8_cuda_unavailable_reason() { return backend().unavailable_reason(); }

void fp8_encode_cuda_device(const void* d_src, DType src_dtype, std::size_t count,
                            std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                            void* stream) {
  const std::size_t elem = element_size(src_dtype);
  if (count > 0 && (d_src == nullptr || d_dst == nullptr)) {
    check_device_ranges(d_src, elem, d_dst, 1, count, src_dtype, true);  // throws
  }
  fp8_check_encode_args({static_cast<const std::byte*>(d_src), saturated_bytes(count, elem)},
                        src_dtype, count, {d_dst, count}, format, overflow);
  check_device_ranges(d_src, elem, d_dst, 1, count, src_dtype, true);
  auto& b = usable_backend();
  if (count == 0) return;
  const bool vec = aligned(d_src, 4 * elem) && aligned(d_dst, 4);
  b.check(b.rt().launch_encode(d_src, wide_kind(src_dtype), count, d_dst, format, overflow, vec,
                               stream),
          "fp8 encode kernel launch");
}

void fp8_decode_cuda_device(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                            DType dst_dtype, Fp8Format format, void* stream) {
  const std::size_t elem = element_size(dst_dtype);
  if (count > 0 && (d_src == nullptr || d_dst == nullptr)) {
    check_device_ranges(d_src, 1, d_dst, elem, count, dst_dtype, false);  // throws
  }
  fp8_check_decode_args({d_src, count}, count,
                        {static_cast<const std::byte*>(d_dst), saturated_bytes(count, elem)},
                        dst_dtype, format);
  check_device_ranges(d_src, 1, d_dst, elem, count, dst_dtype, false);
  auto& b = usable_backend();
  if (count == 0) return;
  const bool vec = aligned(d_src, 4) && aligned(d_dst, 4 * elem);
  b.check(b.rt().launch_decode(d_src, count, d_dst, wide_kind(dst_dtype), format, vec, stream),
          "fp8 decode kernel launch");
}

namespace cuda {

DeviceBuffer::DeviceBuffer(std::size_t size) {
  auto& b = usable_backend();
  if (size == 0) return;
  void* p = nullptr;
  b.check(b.rt().malloc_device(&p, size), "cudaMalloc(" + std::to_string(size) + " bytes)");
  data_ = p;
  size_ = size;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) backend().ignore(backend().rt().free_device(data_));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) backend().ignore(backend().rt().free_device(data_));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Stream::Stream() {
  auto& b = usable_backend();
  void* s = nullptr;
  b.check(b.rt().stream_create(&s), "cudaStreamCreateWithFlags");
  stream_ = s;
}

Stream::~Stream() { backend().ignore(backend().rt().stream_destroy(stream_)); }

MemoryInfo memory_info() {
  auto& b = usable_backend();
  MemoryInfo info;
  b.check(b.rt().mem_get_info(&info.free_bytes, &info.total_bytes), "cudaMemGetInfo");
  return info;
}

void copy_to_device(void* d_dst, const void* h_src, std::size_t bytes) {
  auto& b = usable_backend();
  b.check(b.rt().device_synchronize(), "cudaDeviceSynchronize (before a copy to the device)");
  b.check(b.rt().memcpy(d_dst, h_src, bytes, CopyKind::kHostToDevice),
          "cudaMemcpy (host to device, " + std::to_string(bytes) + " bytes)");
}

void copy_to_host(void* h_dst, const void* d_src, std::size_t bytes) {
  auto& b = usable_backend();
  b.check(b.rt().device_synchronize(), "cudaDeviceSynchronize (before a copy to the host)");
  b.check(b.rt().memcpy(h_dst, d_src, bytes, CopyKind::kDeviceToHost),
          "cudaMemcpy (device to host, " + std::to_string(bytes) + " bytes)");
}

void copy_device_to_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream) {
  auto& b = usable_backend();
  b.check(b.rt().memcpy_async(d_dst, d_src, bytes, CopyKind::kDeviceToDevice, stream),
          "cudaMemcpyAsync (device to device, " + std::to_string(bytes) + " bytes)");
}

void synchronize(void* stream) {
  auto& b = usable_backend();
  if (stream == nullptr) {
    b.check(b.rt().device_synchronize(), "cudaDeviceSynchronize");
  } else {
    b.check(b.rt().stream_synchronize(stream), "cudaStreamSynchronize");
  }
}

LaunchTimer::LaunchTimer() {
  // stream_ is made first (its constructor checks that a GPU is usable); a failure below
  // destroys it again, so a timer is made whole or not at all.
  auto& b = backend();
  b.check(b.rt().event_create(&start_), "cudaEventCreate");
  try {
    b.check(b.rt().event_create(&stop_), "cudaEventCreate");
  } catch (...) {
    b.ignore(b.rt().event_destroy(start_));
    throw;
  }
}

LaunchTimer::~LaunchTimer() {
  auto& b = backend();
  b.ignore(b.rt().event_destroy(stop_));
  b.ignore(b.rt().event_destroy(start_));
}

double LaunchTimer::ms_per_launch(int launches, const std::function<void(void* stream)>& launch) {
  if (launches < 1) {
    throw std::invalid_argument("LaunchTimer: launches must be >= 1 (got " +
                                std::to_string(launches) + ")");
  }
  auto& b = usable_backend();
  b.check(b.rt().event_record(start_, stream()), "cudaEventRecord (start)");
  for (int i = 0; i < launches; ++i) launch(stream());
  b.check(b.rt().event_record(stop_, stream()), "cudaEventRecord (stop)");
  b.check(b.rt().event_synchronize(stop_), "cudaEventSynchronize");
  float ms = 0;
  b.check(b.rt().event_elapsed_ms(&ms, start_, stop_), "cudaEventElapsedTime");
  return static_cast<double>(ms) / launches;
}

int LaunchTimer::launches_for(double window_ms, const std::function<void(void* stream)>& launch) {
  const double once = std::max(ms_per_launch(1, launch), 1e-4);
  const double n = std::ceil(window_ms / once);
  return static_cast<int>(std::clamp(n, 1.0, 65536.0));
}

}  // namespace cuda
}  // namespace lmcache::fp8
