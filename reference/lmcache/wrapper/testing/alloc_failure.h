// File: lmcache/wrapper/testing/alloc_failure.h
//
// Allocation-failure injection for the wrapper's tests. A test binary that links
// alloc_failure.cc replaces the global operator new / delete with malloc-based ones that
// throw std::bad_alloc on a chosen allocation of one thread; in binaries that do not, arming
// has no effect. Test-only (not installed).
#pragma once

#include <atomic>

namespace lmcache::wrapper_internal {

// Allocations left on this thread before the injected failure (-1: none armed).
inline thread_local int t_allocations_before_failure = -1;
// Injected failures fired in the process so far.
inline std::atomic<int> g_injected_allocation_failures{0};

// fail_allocation_on_this_thread()
//
// n >= 0: the n-th operator new on this thread from now (0 = the next) throws std::bad_alloc,
// once. n < 0 disarms.
inline void fail_allocation_on_this_thread(int n) noexcept { t_allocations_before_failure = n; }

inline int injected_allocation_failures() noexcept {
  return g_injected_allocation_failures.load(std::memory_order_relaxed);
}

}  // namespace lmcache::wrapper_internal
