// File: lmcache/core/tensor_view.h
//
// Zero-copy typed at::Tensor views of MemoryObj groups (at::from_blob). libtorch 1.13 has no
// float8 dtypes, so fp8 groups are viewed as uint8. Include this only where tensors are needed:
// ATen headers are expensive to compile.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstddef>

#include "lmcache/core/dtype.h"
#include "lmcache/core/memory_obj.h"

namespace lmcache {

// to_scalar_type()
//
// The c10 dtype used for views of `dtype` (fp8 maps to kByte).
c10::ScalarType to_scalar_type(DType dtype);

// group_tensor()
//
// A view of group i shaped and typed as the layout says. The view does not own the memory:
// keep the MemoryObj alive while it is used. Throws std::out_of_range for a bad i.
at::Tensor group_tensor(MemoryObj& obj, std::size_t i);

// byte_tensor()
//
// A flat uint8 view of the logical bytes (size() of them).
at::Tensor byte_tensor(MemoryObj& obj);

}  // namespace lmcache
