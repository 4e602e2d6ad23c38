// File: lmcache/serde/serde_utils.h
//
// Helpers the serde L2 wrapper uses around a serde: the layout of a temp buffer that holds a
// serialized object, and the L1 key of such a temp.
#pragma once

#include <cstddef>

#include "lmcache/core/memory_layout.h"
#include "lmcache/core/object_key.h"
#include "lmcache/serde/serde_processor.h"
#include "lmcache/serde/serializer.h"

namespace lmcache {

// Random bytes make_temp_key() appends to the original chunk hash.
inline constexpr std::size_t kTempKeyRandomBytes = 16;

// serialized_layout_desc()
//
// One 1-D uint8 group of estimate_serialized_size(layout) bytes: the temp buffer that can hold
// any serialized object of `layout`. No extra margin: the serde's estimate already has it.
MemoryLayoutDesc serialized_layout_desc(const MemoryLayoutDesc& layout, const Serializer& serde);
MemoryLayoutDesc serialized_layout_desc(const MemoryLayoutDesc& layout,
                                        const SerdeProcessor& serde);

// make_temp_key()
//
// A fresh key for a temp buffer: chunk_hash = original.chunk_hash() followed by
// kTempKeyRandomBytes bytes from the OS CSPRNG (getrandom(2)); model_name, kv_rank,
// object_group_id and cache_salt are copied. Two calls never collide in practice. Throws
// std::system_error when the kernel cannot supply randomness.
ObjectKey make_temp_key(const ObjectKey& original);

// os_random_bytes()
//
// Fills `out` with `n` bytes from getrandom(2), retrying on EINTR and short reads. Throws
// std::system_error on failure.
void os_random_bytes(void* out, std::size_t n);

}  // namespace lmcache
