// File: lmcache/fp8/testing/fake_cuda_runtime.cc
#include "lmcache/fp8/testing/fake_cuda_runtime.h"

#include <cstring>
#include <span>
#include <utility>

#include "lmcache/fp8/fp8_codec.h"

namespace lmcache::fp8::cuda_testing {
namespace {

using fp8_internal::CopyKind;
using fp8_internal::is_sticky_cuda_error;
using fp8_internal::kCudaErrorIllegalAddress;
using fp8_internal::kCudaErrorInvalidValue;
using fp8_internal::kCudaErrorMemoryAllocation;
using fp8_internal::kCudaErrorMisalignedAddress;
using fp8_internal::kCudaErrorNoDevice;
using fp8_internal::kCudaErrorNotReady;
using fp8_internal::kCudaSuccess;
using fp8_internal::WideKind;

constexpr int kCudaErrorInvalidResourceHandle = 400;
constexpr std::size_t kAlignment = 256;  // cudaMalloc's

DType dtype_of(WideKind kind) {
  switch (kind) {
    case fp8_internal::kWideF16:
      return DType::kFloat16;
    case fp8_internal::kWideBF16:
      return DType::kBFloat16;
    default:
      return DType::kFloat32;
  }
}

bool aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

}  // namespace

void FakeCudaRuntime::set_device_count(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  device_count_ = count;
}

void FakeCudaRuntime::set_device_memory(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  device_capacity_ = bytes;
}

void FakeCudaRuntime::set_kernel_image_error(int error) {
  std::lock_guard<std::mutex> lock(mu_);
  kernel_image_error_ = error;
}

void FakeCudaRuntime::set_compute_capability(int major, int minor) {
  std::lock_guard<std::mutex> lock(mu_);
  cc_major_ = major;
  cc_minor_ = minor;
}

void FakeCudaRuntime::set_op_ms(double ms) {
  std::lock_guard<std::mutex> lock(mu_);
  op_ms_ = ms;
}

void FakeCudaRuntime::fail_call(CudaCall call, int nth, int error) {
  std::lock_guard<std::mutex> lock(mu_);
  injections_.push_back({call, nth, error});
}

void FakeCudaRuntime::fault_next_kernel(int error) {
  std::lock_guard<std::mutex> lock(mu_);
  next_kernel_fault_ = error;
}

int FakeCudaRuntime::pending_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = last_error_.find(std::this_thread::get_id());
  return it == last_error_.end() ? kCudaSuccess : it->second;
}

std::size_t FakeCudaRuntime::device_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [start, block] : blocks_) n += block.pinned ? 0 : 1;
  return n;
}

std::size_t FakeCudaRuntime::pinned_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [start, block] : blocks_) n += block.pinned ? 1 : 0;
  return n;
}

std::size_t FakeCudaRuntime::device_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return device_bytes_;
}

std::size_t FakeCudaRuntime::streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_.size();
}

std::size_t FakeCudaRuntime::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

std::size_t FakeCudaRuntime::calls(CudaCall call) const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_[static_cast<int>(call)];
}

std::size_t FakeCudaRuntime::queued_ops() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = legacy_.ops.size();
  for (const auto& [handle, s] : streams_) n += s->ops.size();
  return n;
}

int FakeCudaRuntime::sticky_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sticky_;
}

// ---------------------------------------------------------------------------------------------
// Internals (mu_ held).

int FakeCudaRuntime::fail_with(int error) {
  last_error_[std::this_thread::get_id()] = error;
  if (is_sticky_cuda_error(error) && sticky_ == 0) {
    sticky_ = error;
    // The context is gone: nothing queued will ever run.
    legacy_.ops.clear();
    for (auto& [handle, s] : streams_) s->ops.clear();
  }
  return error;
}

int FakeCudaRuntime::enter(CudaCall call) {
  ++calls_[static_cast<int>(call)];
  if (sticky_ != 0) return fail_with(sticky_);
  int error = kCudaSuccess;
  for (auto it = injections_.begin(); it != injections_.end();) {
    if (it->call == call && --it->remaining == 0) {
      if (error == kCudaSuccess) error = it->error;
      it = injections_.erase(it);
    } else {
      ++it;
    }
  }
  return error == kCudaSuccess ? kCudaSuccess : fail_with(error);
}

bool FakeCudaRuntime::in_block(const void* p, std::size_t bytes, bool pinned) const {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  auto it = blocks_.upper_bound(addr);
  if (it == blocks_.begin()) return false;
  --it;
  const Block& b = it->second;
  return b.pinned == pinned && addr - it->first <= b.size && bytes <= b.size - (addr - it->first);
}

FakeCudaRuntime::Stream* FakeCudaRuntime::stream_of(void* handle) {
  if (handle == nullptr) return &legacy_;
  const auto it = streams_.find(handle);
  return it == streams_.end() ? nullptr : it->second.get();
}

int FakeCudaRuntime::run(Stream& s) {
  while (!s.ops.empty()) {
    Op op = std::move(s.ops.front());
    s.ops.pop_front();
    if (const int error = op(); error != kCudaSuccess) return fail_with(error);
  }
  return kCudaSuccess;
}

int FakeCudaRuntime::run_all() {
  if (const int e = run(legacy_); e != kCudaSuccess) return e;
  for (auto& [handle, s] : streams_) {
    if (const int e = run(*s); e != kCudaSuccess) return e;
  }
  return kCudaSuccess;
}

int FakeCudaRuntime::allocate(void** ptr, std::size_t bytes, bool pinned) {
  if (ptr == nullptr) return fail_with(kCudaErrorInvalidValue);
  if (bytes == 0) {
    *ptr = nullptr;
    return kCudaSuccess;
  }
  if (!pinned && bytes > device_capacity_ - device_bytes_) {
    return fail_with(kCudaErrorMemoryAllocation);
  }
  Block b;
  b.size = bytes;
  b.pinned = pinned;
  // Not zeroed, like cudaMalloc's memory.
  b.storage = std::make_unique_for_overwrite<std::byte[]>(bytes + kAlignment);
  const auto raw = reinterpret_cast<std::uintptr_t>(b.storage.get());
  const std::uintptr_t start = (raw + kAlignment - 1) / kAlignment * kAlignment;
  blocks_.emplace(start, std::move(b));
  if (!pinned) device_bytes_ += bytes;
  *ptr = reinterpret_cast<void*>(start);
  return kCudaSuccess;
}

int FakeCudaRuntime::release(void* ptr, bool pinned) {
  if (ptr == nullptr) return kCudaSuccess;
  const auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == blocks_.end() || it->second.pinned != pinned) return fail_with(kCudaErrorInvalidValue);
  // cudaFree / cudaFreeHost wait for the device first.
  if (const int e = run_all(); e != kCudaSuccess) return e;
  if (!pinned) device_bytes_ -= it->second.size;
  blocks_.erase(it);
  return kCudaSuccess;
}

int FakeCudaRuntime::launch(const void* src, std::size_t src_bytes, std::size_t src_align,
                            void* dst, std::size_t dst_bytes, std::size_t dst_align, void* stream,
                            std::function<void()> body) {
  Stream* s = stream_of(stream);
  if (s == nullptr) return fail_with(kCudaErrorInvalidResourceHandle);
  if (kernel_image_error_ != kCudaSuccess) return fail_with(kernel_image_error_);
  const int fault = std::exchange(next_kernel_fault_, kCudaSuccess);
  s->ops.push_back([this, src, src_bytes, src_align, dst, dst_bytes, dst_align, fault,
                    body = std::move(body)]() -> int {
    if (fault != kCudaSuccess) return fault;
    if (!in_block(src, src_bytes, false) || !in_block(dst, dst_bytes, false)) {
      return kCudaErrorIllegalAddress;
    }
    if (!aligned(src, src_align) || !aligned(dst, dst_align)) return kCudaErrorMisalignedAddress;
    body();
    clock_ms_ += op_ms_;
    return kCudaSuccess;
  });
  return kCudaSuccess;
}

// ---------------------------------------------------------------------------------------------
// CudaRuntime

std::string FakeCudaRuntime::error_text(int error) {
  struct Text {
    int error;
    const char* text;
    const char* name;
  };
  // The CUDA runtime's wording, so tests can match the same substrings on a GPU.
  static constexpr Text kTexts[] = {
      {kCudaSuccess, "no error", "cudaSuccess"},
      {kCudaErrorInvalidValue, "invalid argument", "cudaErrorInvalidValue"},
      {kCudaErrorMemoryAllocation, "out of memory", "cudaErrorMemoryAllocation"},
      {fp8_internal::kCudaErrorInsufficientDriver,
       "CUDA driver version is insufficient for CUDA runtime version",
       "cudaErrorInsufficientDriver"},
      {kCudaErrorNoDevice, "no CUDA-capable device is detected", "cudaErrorNoDevice"},
      {fp8_internal::kCudaErrorNoKernelImageForDevice,
       "no kernel image is available for execution on the device",
       "cudaErrorNoKernelImageForDevice"},
      {kCudaErrorInvalidResourceHandle, "invalid resource handle",
       "cudaErrorInvalidResourceHandle"},
      {kCudaErrorNotReady, "device not ready", "cudaErrorNotReady"},
      {kCudaErrorIllegalAddress, "an illegal memory access was encountered",
       "cudaErrorIllegalAddress"},
      {fp8_internal::kCudaErrorLaunchOutOfResources, "too many resources requested for launch",
       "cudaErrorLaunchOutOfResources"},
      {kCudaErrorMisalignedAddress, "misaligned address", "cudaErrorMisalignedAddress"},
      {fp8_internal::kCudaErrorLaunchFailure, "unspecified launch failure",
       "cudaErrorLaunchFailure"},
  };
  for (const Text& t : kTexts) {
    if (t.error == error) {
      return std::string(t.text) + " (" + t.name + " = " + std::to_string(error) + ")";
    }
  }
  return "unknown error (fake) (" + std::to_string(error) + ")";
}

int FakeCudaRuntime::get_last_error() {
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_ != 0) return sticky_;
  return std::exchange(last_error_[std::this_thread::get_id()], kCudaSuccess);
}

int FakeCudaRuntime::get_device_count(int* count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kGetDeviceCount); e != kCudaSuccess) return e;
  if (device_count_ <= 0) return fail_with(kCudaErrorNoDevice);
  *count = device_count_;
  return kCudaSuccess;
}

int FakeCudaRuntime::get_device(int* device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kGetDevice); e != kCudaSuccess) return e;
  *device = current_device_;
  return kCudaSuccess;
}

int FakeCudaRuntime::set_device(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kSetDevice); e != kCudaSuccess) return e;
  if (device < 0 || device >= device_count_) return fail_with(kCudaErrorInvalidValue);
  current_device_ = device;
  return kCudaSuccess;
}

int FakeCudaRuntime::compute_capability(int device, int* major, int* minor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kComputeCapability); e != kCudaSuccess) return e;
  if (device < 0 || device >= device_count_) return fail_with(kCudaErrorInvalidValue);
  *major = cc_major_;
  *minor = cc_minor_;
  return kCudaSuccess;
}

int FakeCudaRuntime::mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kMemGetInfo); e != kCudaSuccess) return e;
  *free_bytes = device_capacity_ - device_bytes_;
  *total_bytes = device_capacity_;
  return kCudaSuccess;
}

int FakeCudaRuntime::device_synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kDeviceSynchronize); e != kCudaSuccess) return e;
  return run_all();
}

int FakeCudaRuntime::malloc_device(void** ptr, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kMallocDevice); e != kCudaSuccess) return e;
  return allocate(ptr, bytes, false);
}

int FakeCudaRuntime::free_device(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kFreeDevice); e != kCudaSuccess) return e;
  return release(ptr, false);
}

int FakeCudaRuntime::malloc_pinned(void** ptr, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kMallocPinned); e != kCudaSuccess) return e;
  return allocate(ptr, bytes, true);
}

int FakeCudaRuntime::free_pinned(void* ptr) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kFreePinned); e != kCudaSuccess) return e;
  return release(ptr, true);
}

int FakeCudaRuntime::memcpy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kMemcpy); e != kCudaSuccess) return e;
  const bool dst_dev = kind != CopyKind::kDeviceToHost;
  const bool src_dev = kind != CopyKind::kHostToDevice;
  if ((dst_dev && !in_block(dst, bytes, false)) || (src_dev && !in_block(src, bytes, false))) {
    return fail_with(kCudaErrorInvalidValue);
  }
  // Synchronous with respect to the legacy default stream only: non-blocking streams' work is
  // not waited for.
  if (const int e = run(legacy_); e != kCudaSuccess) return e;
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return kCudaSuccess;
}

int FakeCudaRuntime::memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                                  void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kMemcpyAsync); e != kCudaSuccess) return e;
  Stream* s = stream_of(stream);
  if (s == nullptr) return fail_with(kCudaErrorInvalidResourceHandle);
  // Stricter than CUDA, which also accepts pageable host memory (and then copies
  // synchronously): the backend's async copies always use its pinned staging.
  const bool dst_dev = kind != CopyKind::kDeviceToHost;
  const bool src_dev = kind != CopyKind::kHostToDevice;
  if (!in_block(dst, bytes, !dst_dev) || !in_block(src, bytes, !src_dev)) {
    return fail_with(kCudaErrorInvalidValue);
  }
  s->ops.push_back([this, dst, src, bytes] {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    clock_ms_ += op_ms_;
    return kCudaSuccess;
  });
  return kCudaSuccess;
}

int FakeCudaRuntime::stream_create(void** stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kStreamCreate); e != kCudaSuccess) return e;
  auto s = std::make_unique<Stream>();
  *stream = s.get();
  streams_.emplace(s.get(), std::move(s));
  return kCudaSuccess;
}

int FakeCudaRuntime::stream_destroy(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kStreamDestroy); e != kCudaSuccess) return e;
  const auto it = streams_.find(stream);
  if (it == streams_.end()) return fail_with(kCudaErrorInvalidResourceHandle);
  // cudaStreamDestroy returns at once and lets queued work complete; run it now.
  const int e = run(*it->second);
  for (auto& [handle, ev] : events_) {
    if (ev->stream == it->second.get()) ev->stream = nullptr;
  }
  streams_.erase(it);
  return e;
}

int FakeCudaRuntime::stream_synchronize(void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kStreamSynchronize); e != kCudaSuccess) return e;
  Stream* s = stream_of(stream);
  if (s == nullptr) return fail_with(kCudaErrorInvalidResourceHandle);
  return run(*s);
}

int FakeCudaRuntime::event_create(void** event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kEventCreate); e != kCudaSuccess) return e;
  auto ev = std::make_unique<Event>();
  *event = ev.get();
  events_.emplace(ev.get(), std::move(ev));
  return kCudaSuccess;
}

int FakeCudaRuntime::event_destroy(void* event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kEventDestroy); e != kCudaSuccess) return e;
  const auto it = events_.find(event);
  if (it == events_.end()) return fail_with(kCudaErrorInvalidResourceHandle);
  // A queued record of this event must not outlive it.
  if (it->second->stream != nullptr && !it->second->complete) {
    if (const int e = run(*it->second->stream); e != kCudaSuccess) return e;
  }
  events_.erase(it);
  return kCudaSuccess;
}

int FakeCudaRuntime::event_record(void* event, void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kEventRecord); e != kCudaSuccess) return e;
  const auto it = events_.find(event);
  Stream* s = stream_of(stream);
  if (it == events_.end() || s == nullptr) return fail_with(kCudaErrorInvalidResourceHandle);
  Event* ev = it->second.get();
  ev->stream = s;
  ev->recorded = true;
  ev->complete = false;
  s->ops.push_back([this, ev] {
    ev->complete = true;
    ev->time_ms = clock_ms_;
    return kCudaSuccess;
  });
  return kCudaSuccess;
}

int FakeCudaRuntime::event_synchronize(void* event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kEventSynchronize); e != kCudaSuccess) return e;
  const auto it = events_.find(event);
  if (it == events_.end()) return fail_with(kCudaErrorInvalidResourceHandle);
  if (it->second->stream == nullptr || it->second->complete) return kCudaSuccess;
  return run(*it->second->stream);
}

int FakeCudaRuntime::event_elapsed_ms(float* ms, void* start, void* stop) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kEventElapsed); e != kCudaSuccess) return e;
  const auto a = events_.find(start);
  const auto b = events_.find(stop);
  if (a == events_.end() || b == events_.end() || !a->second->recorded || !b->second->recorded) {
    return fail_with(kCudaErrorInvalidResourceHandle);
  }
  if (!a->second->complete || !b->second->complete) return fail_with(kCudaErrorNotReady);
  *ms = static_cast<float>(b->second->time_ms - a->second->time_ms);
  return kCudaSuccess;
}

int FakeCudaRuntime::kernel_image_status() {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kKernelImage); e != kCudaSuccess) return e;
  return kernel_image_error_ == kCudaSuccess ? kCudaSuccess : fail_with(kernel_image_error_);
}

int FakeCudaRuntime::launch_encode(const void* d_src, WideKind src_kind, std::size_t count,
                                   std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow,
                                   bool vectorized, void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kLaunch); e != kCudaSuccess) return e;
  const DType dtype = dtype_of(src_kind);
  const std::size_t elem = element_size(dtype);
  // The element-wise kernel needs the wide side aligned to its element; the vectorised one
  // needs it aligned to 4 elements and the codes to 4 bytes.
  return launch(d_src, count * elem, vectorized ? 4 * elem : elem, d_dst, count, vectorized ? 4 : 1,
                stream, [=] {
                  fp8_encode({static_cast<const std::byte*>(d_src), count * elem}, dtype, count,
                             {d_dst, count}, format, overflow);
                });
}

int FakeCudaRuntime::launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                                   WideKind dst_kind, Fp8Format format, bool vectorized,
                                   void* stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (const int e = enter(CudaCall::kLaunch); e != kCudaSuccess) return e;
  const DType dtype = dtype_of(dst_kind);
  const std::size_t elem = element_size(dtype);
  return launch(d_src, count, vectorized ? 4 : 1, d_dst, count * elem, vectorized ? 4 * elem : elem,
                stream, [=] {
                  fp8_decode({d_src, count}, count, {static_cast<std::byte*>(d_dst), count * elem},
                             dtype, format);
                });
}

}  // namespace lmcache::fp8::cuda_testing
