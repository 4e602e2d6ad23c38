#include "lmcache/conformance/serde_conformance.h"

#include <algorithm>
#include <string>

#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/internal/serde_properties.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance {}  // namespace lmcache::conformance

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

std::string rc_id(std::string_view property, const SerdeUnderTest& serde) {
  return "SerdeConformance." + std::string(property) + "/" + serde.name;
}

Verdict DeterministicOutput(const SerdeUnderTest& serde) {
  if (serde.integrity.randomized) {
    return Verdict::not_supported(
        "the serde declares integrity.randomized: its bytes differ per call");
  }
  return for_each_source("DeterministicOutput", serde, {},
                         [&](const MemoryObj& src, const SerdeCase& c) {
                           require_ok(verify_serialize_deterministic(serde, src, c.key));
                         });
}

Verdict EstimateIsUpperBound(const SerdeUnderTest& serde) {
  return for_each_source("EstimateIsUpperBound", serde, {},
                         [&](const MemoryObj& src, const SerdeCase& c) {
                           require_ok(verify_estimate_is_upper_bound(serde, src, c.key));
                         });
}

Verdict EstimateDependsOnLayoutOnly(const SerdeUnderTest& serde) {
  const ValueSpec spec = value_spec_for(serde);
  return for_each_source("EstimateDependsOnLayoutOnly", serde, {},
                         [&](const MemoryObj& a, const SerdeCase& c) {
                           SerdeCase other = c;
                           other.data_seed = *gen_seed();
                           MemoryObjPtr b = make_source(other, spec);
                           require_ok(verify_estimate_depends_on_layout_only(serde, a, *b, c.key));
                         });
}

Verdict RoundTrip(const SerdeUnderTest& serde) {
  QualityReport worst;
  Verdict v =
      for_each_source("RoundTrip", serde, {}, [&](const MemoryObj& src, const SerdeCase& c) {
        QualityReport q;
        require_ok(verify_serde_round_trip(serde, src, &q, c.key));
        worst.Merge(q);
      });
  if (v.status == Status::kPass && worst.exceeded_soft) {
    v.status = Status::kQualityWarning;
    v.message = "round trip within the hard bound but above the soft bound: " + worst.worst;
  }
  return v;
}

Verdict BytesPastCountUntouched(const SerdeUnderTest& serde) {
  return for_each_source("BytesPastCountUntouched", serde, {},
                         [&](const MemoryObj& src, const SerdeCase& c) {
                           require_ok(verify_bytes_past_count_untouched(serde, src, c.key));
                         });
}

Verdict ShortBufferRejected(const SerdeUnderTest& serde) {
  return for_each_source(
      "ShortBufferRejected", serde, {}, [&](const MemoryObj& src, const SerdeCase& c) {
        auto shortfall = *rc::gen::weightedOneOf<std::size_t>(
            {{3, rc::gen::just<std::size_t>(1)}, {2, uniform_in_range<std::size_t>(2, 4096)}});
        require_ok(verify_short_buffer_rejected(serde, src, shortfall, c.key));
      });
}

Verdict DeserializeWritesOnlyDestination(const SerdeUnderTest& serde) {
  return for_each_source(
      "DeserializeWritesOnlyDestination", serde, {}, [&](const MemoryObj& src, const SerdeCase& c) {
        require_ok(verify_deserialize_writes_only_destination(serde, src, c.key));
      });
}

Verdict ShortSourceRejected(const SerdeUnderTest& serde) {
  return for_each_source(
      "ShortSourceRejected", serde, {}, [&](const MemoryObj& src, const SerdeCase& c) {
        auto shortfall = *rc::gen::weightedOneOf<std::size_t>(
            {{3, rc::gen::just<std::size_t>(1)}, {2, uniform_in_range<std::size_t>(2, 4096)}});
        require_ok(verify_short_source_rejected(serde, src, shortfall, c.key));
      });
}

Verdict UnsupportedInputRejected(const SerdeUnderTest& serde) {
  std::vector<DType> unsupported;
  for (DType d : all_dtypes()) {
    if (std::find(serde.input_dtypes.begin(), serde.input_dtypes.end(), d) ==
        serde.input_dtypes.end()) {
      unsupported.push_back(d);
    }
  }
  if (unsupported.empty()) {
    return Verdict::not_supported("the serde declares every dtype as an input");
  }
  return run_rc_property(rc_id("UnsupportedInputRejected", serde), {}, [&] {
    // A layout of declared dtypes with one undeclared group inserted somewhere.
    std::vector<DType> declared = serde.input_dtypes;
    MemoryLayoutDesc base = declared.empty()
                                ? MemoryLayoutDesc()
                                : *gen_layout(declared, {.min_groups = 0,
                                                         .max_groups = 3,
                                                         .max_group_elements = 1u << 12,
                                                         .max_total_elements = 1u << 14});
    std::vector<Shape> shapes = base.shapes();
    std::vector<DType> dtypes = base.dtypes();
    auto at = *uniform_in_range<std::size_t>(0, shapes.size() + 1);
    // An empty group of a bad dtype carries nothing to reject, so at least one element.
    Shape bad_shape = *gen_shape_of(std::max<std::size_t>(1, *gen_element_count(1u << 12)));
    shapes.insert(shapes.begin() + static_cast<std::ptrdiff_t>(at), bad_shape);
    dtypes.insert(dtypes.begin() + static_cast<std::ptrdiff_t>(at),
                  *rc::gen::elementOf(unsupported));
    SerdeCase c{MemoryLayoutDesc(shapes, dtypes), *gen_seed()};
    MemoryObjPtr src = make_source(c, ValueSpec{});
    require_ok(verify_unsupported_input_rejected(serde, *src, *gen_object_key()));
  });
}

Verdict MultiNoneSlotRules(const SerdeUnderTest& serde) {
  return for_each_source("MultiNoneSlotRules", serde, {.max_success = 25},
                         [&](const MemoryObj& src, const SerdeCase& c) {
                           require_ok(verify_multi_none_slot_rules(serde, src, c.key));
                         });
}

Verdict BridgeEquivalence(const SerdeUnderTest& serde) {
  if (serde.integrity.randomized) {
    return Verdict::not_supported(
        "the serde declares integrity.randomized: its bytes differ per call");
  }
  if (make_multi_serializer(serde)->group_size() != 1) {
    return Verdict::not_supported("the multi serde has group_size() != 1, so it is not a bridge");
  }
  return for_each_source("BridgeEquivalence", serde, {.max_success = 25},
                         [&](const MemoryObj& src, const SerdeCase& c) {
                           require_ok(verify_bridge_equivalence(serde, src, c.key));
                         });
}

}  // namespace lmcache::conformance_internal::serde_properties

namespace lmcache::conformance {

Verdict run_serde_property(std::string_view property, const SerdeUnderTest& serde) {
  using Fn = Verdict (*)(const SerdeUnderTest&);
#define LMCACHE_SERDE_ENTRY(Name, Checks) {#Name, &conformance_internal::serde_properties::Name},
  static const std::pair<std::string_view, Fn> kTable[] = {
      LMCACHE_CONFORMANCE_SERDE_PROPERTIES(LMCACHE_SERDE_ENTRY)};
#undef LMCACHE_SERDE_ENTRY
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(serde);
      } catch (const std::exception& e) {
        return Verdict::fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::fail("unknown serde property '" + std::string(property) + "'");
}

}  // namespace lmcache::conformance

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types
int serde_conformance_link_anchor() { return 0; }
}  // namespace lmcache::conformance_internal

namespace lmcache::conformance {

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SerdeConformance);

#define LMCACHE_SERDE_TEST(Name, Checks) \
  LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, Name, run_serde_property)
LMCACHE_CONFORMANCE_SERDE_PROPERTIES(LMCACHE_SERDE_TEST)
#undef LMCACHE_SERDE_TEST

}  // namespace lmcache::conformance
