#include "lmcache/conformance/freed_memory.h"

#include <malloc.h>

namespace lmcache::conformance {

void keep_freed_memory() noexcept {
  // Both are hints: an allocator that is not glibc's ignores them.
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest glibc accepts
  (void)::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace lmcache::conformance
