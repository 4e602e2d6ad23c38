// File: lmcache/conformance/generators.h
//
// RapidCheck generators for the conformance properties: layouts of 1-4 groups whose shapes mix
// zero-element, one-element and odd dimensions (0-d scalars included), over the dtypes an
// implementation declares; and serde cases that pair such a layout with a data seed. Values are
// filled from the seed (buffers.h FillValues) rather than generated element by element: a case
// stays cheap to generate and print, and shrinking still minimises the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

#include <rapidcheck.h>

#include "lmcache/conformance/buffers.h"
#include "lmcache/conformance/descriptors.h"

namespace lmcache::conformance {

// LayoutLimits
//
// Bounds of generated layouts; the element cap keeps each case small and fast.
struct LayoutLimits {
  int min_groups = 1;
  int max_groups = 4;
  std::size_t max_group_elements = 300;
};

// GenShape()
//
// A shape of rank 0-3 whose dims are 0, 1, odd or small even numbers, with at most
// `max_elements` elements.
rc::Gen<Shape> GenShape(std::size_t max_elements);

// GenLayout()
//
// A layout of limits.min_groups..limits.max_groups groups, each with a dtype drawn from `dtypes`
// (which must not be empty).
rc::Gen<MemoryLayoutDesc> GenLayout(std::vector<DType> dtypes, LayoutLimits limits = {});

// SerdeCase
//
// One generated serde input: a layout and the seed its values are filled from.
struct SerdeCase {
  MemoryLayoutDesc layout;
  std::uint64_t data_seed = 0;
};
std::ostream& operator<<(std::ostream& os, const SerdeCase& c);

rc::Gen<SerdeCase> GenSerdeCase(std::vector<DType> dtypes, LayoutLimits limits = {});

// ValueSpecFor()
//
// The values a serde accepts, from its declarations (max_abs_input, preserves_nan / _inf).
ValueSpec ValueSpecFor(const SerdeUnderTest& serde);

// MakeSource()
//
// A fresh object of `c.layout` filled from `c.data_seed` within `spec`.
MemoryObjPtr MakeSource(const SerdeCase& c, const ValueSpec& spec);

}  // namespace lmcache::conformance

namespace lmcache {
// showValue()
//
// How RapidCheck prints a generated layout in a counterexample (found by argument-dependent
// lookup, hence in the layout's namespace): its to_string().
void showValue(const MemoryLayoutDesc& layout, std::ostream& os);
}  // namespace lmcache
