// Global operator new / delete replacements with a per-thread injected failure
// (alloc_failure.h). Every form allocates with malloc / aligned_alloc and frees with free, so
// any new pairs with any delete.
#include "lmcache/wrapper/testing/alloc_failure.h"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace lmcache::wrapper_internal {
namespace {

void maybe_fail() {
  int& left = t_allocations_before_failure;
  if (left < 0) return;
  if (left-- == 0) {
    g_injected_allocation_failures.fetch_add(1, std::memory_order_relaxed);
    throw std::bad_alloc();
  }
}

void* allocate(std::size_t n) {
  maybe_fail();
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned(std::size_t n, std::align_val_t align) {
  maybe_fail();
  const auto a = static_cast<std::size_t>(align);
  const std::size_t rounded = ((n == 0 ? 1 : n) + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, rounded)) return p;
  throw std::bad_alloc();
}

}  // namespace

}  // namespace lmcache::wrapper_internal

using lmcache::wrapper_internal::allocate;
using lmcache::wrapper_internal::allocate_aligned;

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_aligned(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
