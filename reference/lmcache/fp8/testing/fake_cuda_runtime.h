// File: lmcache/fp8/testing/fake_cuda_runtime.h
//
// A fake CUDA runtime for testing the CUDA backend's host code on machines without a GPU
// (install it with fp8_internal::ScopedCudaRuntimeOverride). It keeps the CUDA runtime's
// semantics where the host code depends on them, so a host-code bug shows up here as it would
// on a GPU:
//   - "device" and pinned memory are host allocations it tracks; calls that name device memory
//     check the range lies inside one live allocation (cudaErrorInvalidValue otherwise, or, for
//     a kernel, an illegal-address fault), and device memory has a capacity (out of memory);
//   - every failed call records its error as the calling thread's last error, which
//     get_last_error() returns and clears; sticky errors corrupt the context for good;
//   - work queued on a stream does not run until something waits for it (stream / event /
//     device synchronisation, cudaFree, a synchronous copy for the legacy stream only), so a
//     missing wait leaves the destination unwritten; kernels run the scalar reference codec;
//   - each queued kernel or copy advances a fake GPU clock by op_ms(), which events record.
// Failures are injected per call kind (fail_call) or as device-side faults of the next kernel
// (fault_next_kernel). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/fp8/internal/cuda_runtime.h"

namespace lmcache::fp8::cuda_testing {

enum class CudaCall {
  kGetDeviceCount,
  kGetDevice,
  kSetDevice,
  kComputeCapability,
  kMemGetInfo,
  kDeviceSynchronize,
  kMallocDevice,
  kFreeDevice,
  kMallocPinned,
  kFreePinned,
  kMemcpy,
  kMemcpyAsync,
  kStreamCreate,
  kStreamDestroy,
  kStreamSynchronize,
  kEventCreate,
  kEventDestroy,
  kEventRecord,
  kEventSynchronize,
  kEventElapsed,
  kKernelImage,
  kLaunch,  // launch_encode and launch_decode
  kCount
};

class FakeCudaRuntime final : public fp8_internal::CudaRuntime {
 public:
  FakeCudaRuntime() = default;
  ~FakeCudaRuntime() override = default;
  FakeCudaRuntime(const FakeCudaRuntime&) = delete;
  FakeCudaRuntime& operator=(const FakeCudaRuntime&) = delete;

  // --- configuration (before use) ----------------------------------------------------------
  // GPUs reported; 0 makes get_device_count fail with cudaErrorNoDevice. Default 1.
  void set_device_count(int count);
  // Capacity of device memory; allocations beyond it fail with cudaErrorMemoryAllocation.
  // Default 1 GiB.
  void set_device_memory(std::size_t bytes);
  // Returned by kernel_image_status() and every launch (e.g. cudaErrorNoKernelImageForDevice).
  void set_kernel_image_error(int error);
  void set_compute_capability(int major, int minor);
  // Fake GPU milliseconds each queued kernel or copy takes. Default 1.
  void set_op_ms(double ms);

  // --- failure injection --------------------------------------------------------------------
  // fail_call(): the `nth` call of kind `call` from now (1 = the next) fails with `error`
  // without doing anything. A sticky error corrupts the context, as on a GPU.
  void fail_call(CudaCall call, int nth, int error);
  // fault_next_kernel(): the next kernel queued faults when it runs with `error` (a sticky
  // device-side error such as cudaErrorIllegalAddress), reported by the wait that ran it.
  void fault_next_kernel(int error);

  // --- observation --------------------------------------------------------------------------
  // The calling thread's last error, without clearing it.
  int pending_error() const;
  std::size_t device_allocations() const;  // live
  std::size_t pinned_allocations() const;
  std::size_t device_bytes() const;
  std::size_t streams() const;
  std::size_t events() const;
  std::size_t calls(CudaCall call) const;  // made so far, failed ones included
  std::size_t queued_ops() const;          // queued on any stream, not yet run
  // The sticky error the context is corrupted by, 0 if none.
  int sticky_error() const;

  // --- CudaRuntime ----------------------------------------------------------------------------
  std::string error_text(int error) override;
  int get_last_error() override;
  int get_device_count(int* count) override;
  int get_device(int* device) override;
  int set_device(int device) override;
  int compute_capability(int device, int* major, int* minor) override;
  int mem_get_info(std::size_t* free_bytes, std::size_t* total_bytes) override;
  int device_synchronize() override;
  int malloc_device(void** ptr, std::size_t bytes) override;
  int free_device(void* ptr) override;
  int malloc_pinned(void** ptr, std::size_t bytes) override;
  int free_pinned(void* ptr) override;
  int memcpy(void* dst, const void* src, std::size_t bytes, fp8_internal::CopyKind kind) override;
  int memcpy_async(void* dst, const void* src, std::size_t bytes, fp8_internal::CopyKind kind,
                   void* stream) override;
  int stream_create(void** stream) override;
  int stream_destroy(void* stream) override;
  int stream_synchronize(void* stream) override;
  int event_create(void** event) override;
  int event_destroy(void* event) override;
  int event_record(void* event, void* stream) override;
  int event_synchronize(void* event) override;
  int event_elapsed_ms(float* ms, void* start, void* stop) override;
  int kernel_image_status() override;
  int launch_encode(const void* d_src, fp8_internal::WideKind src_kind, std::size_t count,
                    std::uint8_t* d_dst, Fp8Format format, Fp8Overflow overflow, bool vectorized,
                    void* stream) override;
  int launch_decode(const std::uint8_t* d_src, std::size_t count, void* d_dst,
                    fp8_internal::WideKind dst_kind, Fp8Format format, bool vectorized,
                    void* stream) override;
  std::string kernel_architectures() override { return "fake"; }

 private:
  struct Block {
    std::size_t size = 0;
    bool pinned = false;
    std::unique_ptr<std::byte[]> storage;  // aligned to 256 inside
  };
  // A queued kernel or copy: returns 0 or the error it faults with.
  using Op = std::function<int()>;
  struct Stream {
    std::deque<Op> ops;
  };
  struct Event {
    Stream* stream = nullptr;  // where it was last recorded
    bool recorded = false;
    bool complete = false;
    double time_ms = 0;
  };
  struct Injection {
    CudaCall call;
    int remaining;
    int error;
  };

  // Counts the call and applies injections and stickiness: returns the error the call must
  // fail with (recorded as the thread's last error), or 0 to proceed. Caller holds mu_.
  int enter(CudaCall call);
  int fail_with(int error);  // records `error` (and stickiness); returns it
  bool in_block(const void* p, std::size_t bytes, bool pinned) const;
  Stream* stream_of(void* handle);
  int run(Stream& s);  // runs the stream's queued ops; the first fault, or 0
  int run_all();
  int allocate(void** ptr, std::size_t bytes, bool pinned);
  int release(void* ptr, bool pinned);
  // Queues a kernel that checks its ranges and alignments (a fault otherwise) and runs `body`.
  int launch(const void* src, std::size_t src_bytes, std::size_t src_align, void* dst,
             std::size_t dst_bytes, std::size_t dst_align, void* stream,
             std::function<void()> body);

  mutable std::mutex mu_;
  int device_count_ = 1;
  std::size_t device_capacity_ = std::size_t{1} << 30;
  int kernel_image_error_ = 0;
  int cc_major_ = 9;
  int cc_minor_ = 0;
  double op_ms_ = 1.0;
  int current_device_ = 0;
  std::vector<Injection> injections_;
  int next_kernel_fault_ = 0;
  int sticky_ = 0;
  std::map<std::thread::id, int> last_error_;
  std::map<std::uintptr_t, Block> blocks_;  // by aligned start address
  std::size_t device_bytes_ = 0;
  Stream legacy_;
  std::map<void*, std::unique_ptr<Stream>> streams_;
  std::map<void*, std::unique_ptr<Event>> events_;
  std::size_t calls_[static_cast<int>(CudaCall::kCount)] = {};
  double clock_ms_ = 0;
};

}  // namespace lmcache::fp8::cuda_testing
