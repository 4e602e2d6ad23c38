// File: lmcache/conformance/freed_memory.h
//
// keep_freed_memory(): makes this process keep the memory it frees for reuse instead of handing
// it back to the kernel. The suites allocate and free buffers of every size from bytes to
// chunk-sized MiB, case after case; glibc unmaps each freed block above a threshold that moves
// with what was freed, so the next case faults every page of it in again, and each unmap of a
// multi-threaded process interrupts every CPU that runs one of its threads. On a VM that was a
// fifth of a storage property's time. The suites' verdicts do not depend on it.
#pragma once

namespace lmcache::conformance {

// keep_freed_memory()
//
// Call once, early, in a process that runs the suites (lmcache-conform's children do; a vendor's
// own test binary may). With glibc's malloc: no block of up to 32 MiB gets a mapping of its
// own, and the heap is not trimmed until 1 GiB of it is free. Under another allocator (a
// sanitizer's) it does nothing. Never throws.
void keep_freed_memory() noexcept;

}  // namespace lmcache::conformance
