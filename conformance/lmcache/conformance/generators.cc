#include "lmcache/conformance/generators.h"

#include <algorithm>
#include <stdexcept>

namespace lmcache::conformance {

rc::Gen<Shape> GenShape(std::size_t max_elements) {
  return rc::gen::exec([max_elements] {
    const int rank = *rc::gen::inRange(0, 4);
    Shape shape;
    for (int d = 0; d < rank; ++d) {
      // Zero, one and odd extents are where packing and indexing bugs live.
      std::int64_t dim = *rc::gen::weightedOneOf<std::int64_t>({
          {1, rc::gen::just<std::int64_t>(0)},
          {3, rc::gen::just<std::int64_t>(1)},
          {4, rc::gen::map(rc::gen::inRange<std::int64_t>(1, 9),
                           [](std::int64_t k) { return 2 * k + 1; })},
          {2, rc::gen::inRange<std::int64_t>(2, 17)},
      });
      shape.push_back(dim);
    }
    // Halve the largest extent until the shape fits the element cap.
    auto elements = [&] {
      std::size_t n = 1;
      for (auto d : shape) n *= static_cast<std::size_t>(d);
      return n;
    };
    while (elements() > max_elements) {
      auto it = std::max_element(shape.begin(), shape.end());
      *it = std::max<std::int64_t>(1, *it / 2);
    }
    return shape;
  });
}

rc::Gen<MemoryLayoutDesc> GenLayout(std::vector<DType> dtypes, LayoutLimits limits) {
  if (dtypes.empty()) throw std::invalid_argument("GenLayout: no dtypes to draw from");
  return rc::gen::exec([dtypes, limits] {
    const int groups = *rc::gen::inRange(limits.min_groups, limits.max_groups + 1);
    std::vector<Shape> shapes;
    std::vector<DType> types;
    for (int g = 0; g < groups; ++g) {
      shapes.push_back(*GenShape(limits.max_group_elements));
      types.push_back(*rc::gen::elementOf(dtypes));
    }
    return MemoryLayoutDesc(std::move(shapes), std::move(types));
  });
}

std::ostream& operator<<(std::ostream& os, const SerdeCase& c) {
  return os << "layout " << c.layout.to_string() << ", data seed " << c.data_seed;
}

rc::Gen<SerdeCase> GenSerdeCase(std::vector<DType> dtypes, LayoutLimits limits) {
  return rc::gen::exec([dtypes = std::move(dtypes), limits] {
    SerdeCase c;
    c.layout = *GenLayout(dtypes, limits);
    c.data_seed = *rc::gen::arbitrary<std::uint64_t>();
    return c;
  });
}

ValueSpec ValueSpecFor(const SerdeUnderTest& serde) {
  return ValueSpec{serde.max_abs_input, serde.preserves_nan, serde.preserves_inf};
}

MemoryObjPtr MakeSource(const SerdeCase& c, const ValueSpec& spec) {
  MemoryObjPtr obj = MakeObject(c.layout);
  FillValues(*obj, spec, c.data_seed);
  return obj;
}

}  // namespace lmcache::conformance

namespace lmcache {
void showValue(const MemoryLayoutDesc& layout, std::ostream& os) { os << layout.to_string(); }
}  // namespace lmcache
