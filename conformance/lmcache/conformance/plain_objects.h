// Plain objects and byte layouts (part of lmcache::conformance_api, which the reference
// descriptors and the self-test's plugins need without the suites).
#pragma once

#include <cstddef>
#include <vector>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/memory_obj.h"

namespace lmcache::conformance {

// make_object()
//
// A plain zero-filled MemoryObj of `layout` (physical size exactly the layout's bytes, at least
// `min_physical`).
MemoryObjPtr make_object(const MemoryLayoutDesc& layout, std::size_t min_physical = 0);

// zeroed_objects()
//
// `n` objects of make_object(layout): a batch's load destinations.
std::vector<MemoryObjPtr> zeroed_objects(const MemoryLayoutDesc& layout, std::size_t n);

// byte_layout()
//
// One 1-D uint8 group of `bytes` bytes: the layout of a serialized buffer.
MemoryLayoutDesc byte_layout(std::size_t bytes);

}  // namespace lmcache::conformance
