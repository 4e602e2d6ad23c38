#include "lmcache/conformance/serde_conformance.h"

#include <algorithm>
#include <string>

#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/report.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/conformance/verify.h"

namespace lmcache::conformance {

namespace {

std::string Id(std::string_view property, const SerdeUnderTest& serde) {
  return "SerdeConformance." + std::string(property) + "/" + serde.name;
}

// Runs `check(serde, src)` on generated sources.
template <class Check>
Verdict ForEachSource(std::string_view property, const SerdeUnderTest& serde, RcOptions options,
                      Check check) {
  const ValueSpec spec = ValueSpecFor(serde);
  return RunRcProperty(Id(property, serde), options, [&] {
    SerdeCase c = *GenSerdeCase(serde.input_dtypes);
    MemoryObjPtr src = MakeSource(c, spec);
    check(*src, c);
  });
}

Verdict DeterministicOutput(const SerdeUnderTest& serde) {
  return ForEachSource("DeterministicOutput", serde, {},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifySerializeDeterministic(serde, src));
                       });
}

Verdict DeterministicAcrossThreads(const SerdeUnderTest& serde) {
  // Fewer cases: each starts four threads.
  return ForEachSource("DeterministicAcrossThreads", serde, {.max_success = 15},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifySerializeThreadSafe(serde, src, 4));
                       });
}

Verdict EstimateIsUpperBound(const SerdeUnderTest& serde) {
  return ForEachSource("EstimateIsUpperBound", serde, {},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifyEstimateIsUpperBound(serde, src));
                       });
}

Verdict EstimateDependsOnLayoutOnly(const SerdeUnderTest& serde) {
  const ValueSpec spec = ValueSpecFor(serde);
  return ForEachSource("EstimateDependsOnLayoutOnly", serde, {},
                       [&](const MemoryObj& a, const SerdeCase& c) {
                         SerdeCase other = c;
                         other.data_seed = *rc::gen::arbitrary<std::uint64_t>();
                         MemoryObjPtr b = MakeSource(other, spec);
                         RequireOk(VerifyEstimateDependsOnLayoutOnly(serde, a, *b));
                       });
}

Verdict RoundTrip(const SerdeUnderTest& serde) {
  QualityReport worst;
  Verdict v = ForEachSource("RoundTrip", serde, {}, [&](const MemoryObj& src, const SerdeCase&) {
    QualityReport q;
    RequireOk(VerifySerdeRoundTrip(serde, src, &q));
    worst.Merge(q);
  });
  if (v.status == Status::kPass && worst.exceeded_soft) {
    v.status = Status::kQualityWarning;
    v.message = "round trip within the hard bound but above the soft bound: " + worst.worst;
  }
  return v;
}

Verdict BytesPastCountUntouched(const SerdeUnderTest& serde) {
  return ForEachSource("BytesPastCountUntouched", serde, {},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifyBytesPastCountUntouched(serde, src));
                       });
}

Verdict ShortBufferRejected(const SerdeUnderTest& serde) {
  return ForEachSource(
      "ShortBufferRejected", serde, {}, [&](const MemoryObj& src, const SerdeCase&) {
        auto shortfall = *rc::gen::weightedOneOf<std::size_t>(
            {{3, rc::gen::just<std::size_t>(1)}, {2, rc::gen::inRange<std::size_t>(2, 4096)}});
        RequireOk(VerifyShortBufferRejected(serde, src, shortfall));
      });
}

Verdict DeserializeWritesOnlyDestination(const SerdeUnderTest& serde) {
  return ForEachSource("DeserializeWritesOnlyDestination", serde, {},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifyDeserializeWritesOnlyDestination(serde, src));
                       });
}

Verdict ShortSourceRejected(const SerdeUnderTest& serde) {
  return ForEachSource(
      "ShortSourceRejected", serde, {}, [&](const MemoryObj& src, const SerdeCase&) {
        auto shortfall = *rc::gen::weightedOneOf<std::size_t>(
            {{3, rc::gen::just<std::size_t>(1)}, {2, rc::gen::inRange<std::size_t>(2, 4096)}});
        RequireOk(VerifyShortSourceRejected(serde, src, shortfall));
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
    return Verdict::NotSupported("the serde declares every dtype as an input");
  }
  return RunRcProperty(Id("UnsupportedInputRejected", serde), {}, [&] {
    // A layout of declared dtypes with one undeclared group inserted somewhere.
    std::vector<DType> declared = serde.input_dtypes;
    MemoryLayoutDesc base = declared.empty()
                                ? MemoryLayoutDesc()
                                : *GenLayout(declared, {.min_groups = 0, .max_groups = 3});
    std::vector<Shape> shapes = base.shapes();
    std::vector<DType> dtypes = base.dtypes();
    auto at = *rc::gen::inRange<std::size_t>(0, shapes.size() + 1);
    Shape bad_shape = *GenShape(300);
    if (MemoryLayoutDesc::single(bad_shape, DType::kUInt8).total_elements() == 0) {
      bad_shape = {3};  // an empty group of a bad dtype carries nothing to reject
    }
    shapes.insert(shapes.begin() + static_cast<std::ptrdiff_t>(at), bad_shape);
    dtypes.insert(dtypes.begin() + static_cast<std::ptrdiff_t>(at),
                  *rc::gen::elementOf(unsupported));
    SerdeCase c{MemoryLayoutDesc(shapes, dtypes), *rc::gen::arbitrary<std::uint64_t>()};
    MemoryObjPtr src = MakeSource(c, ValueSpec{});
    RequireOk(VerifyUnsupportedInputRejected(serde, *src));
  });
}

Verdict MultiNoneSlotRules(const SerdeUnderTest& serde) {
  return ForEachSource("MultiNoneSlotRules", serde, {.max_success = 25},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifyMultiNoneSlotRules(serde, src));
                       });
}

Verdict BridgeEquivalence(const SerdeUnderTest& serde) {
  if (MakeMultiSerializer(serde)->group_size() != 1) {
    return Verdict::NotSupported("the multi serde has group_size() != 1, so it is not a bridge");
  }
  return ForEachSource("BridgeEquivalence", serde, {.max_success = 25},
                       [&](const MemoryObj& src, const SerdeCase&) {
                         RequireOk(VerifyBridgeEquivalence(serde, src));
                       });
}

}  // namespace

Verdict RunSerdeProperty(std::string_view property, const SerdeUnderTest& serde) {
  using Fn = Verdict (*)(const SerdeUnderTest&);
  static const std::pair<std::string_view, Fn> kTable[] = {
      {"DeterministicOutput", &DeterministicOutput},
      {"DeterministicAcrossThreads", &DeterministicAcrossThreads},
      {"EstimateIsUpperBound", &EstimateIsUpperBound},
      {"EstimateDependsOnLayoutOnly", &EstimateDependsOnLayoutOnly},
      {"RoundTrip", &RoundTrip},
      {"BytesPastCountUntouched", &BytesPastCountUntouched},
      {"ShortBufferRejected", &ShortBufferRejected},
      {"DeserializeWritesOnlyDestination", &DeserializeWritesOnlyDestination},
      {"ShortSourceRejected", &ShortSourceRejected},
      {"UnsupportedInputRejected", &UnsupportedInputRejected},
      {"MultiNoneSlotRules", &MultiNoneSlotRules},
      {"BridgeEquivalence", &BridgeEquivalence},
  };
  for (const auto& [name, fn] : kTable) {
    if (name == property) {
      try {
        return fn(serde);
      } catch (const std::exception& e) {
        return Verdict::Fail("property aborted by an exception: " + std::string(e.what()));
      }
    }
  }
  return Verdict::Fail("unknown serde property '" + std::string(property) + "'");
}

namespace internal {
int SerdeConformanceLinkAnchor() { return 0; }
}  // namespace internal

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SerdeConformance);

LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, DeterministicOutput, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, DeterministicAcrossThreads, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, EstimateIsUpperBound, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, EstimateDependsOnLayoutOnly, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, RoundTrip, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, BytesPastCountUntouched, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, ShortBufferRejected, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, DeserializeWritesOnlyDestination, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, ShortSourceRejected, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, UnsupportedInputRejected, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, MultiNoneSlotRules, RunSerdeProperty)
LMCACHE_CONFORMANCE_PROPERTY(SerdeConformance, BridgeEquivalence, RunSerdeProperty)

}  // namespace lmcache::conformance
