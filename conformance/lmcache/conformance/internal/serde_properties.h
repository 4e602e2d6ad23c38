// File: lmcache/conformance/internal/serde_properties.h
//
// The functions behind SerdeConformance's properties, one per line of property_list.h, and the
// helpers the suite's files share. Defined in serde_conformance.cc (single calls) and
// serde_conformance_state.cc (threads and sequences on one instance).
#pragma once

#include <string>
#include <string_view>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/property_list.h"
#include "lmcache/conformance/rapidcheck_driver.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal::serde_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// The signature of every property of the suite.
using PropertyFunction = Verdict(const SerdeUnderTest& serde);
LMCACHE_CONFORMANCE_SERDE_PROPERTIES(LMCACHE_CONFORMANCE_DECLARE_PROPERTY)

// "SerdeConformance.<property>/<serde>", the RapidCheck id of a property run.
std::string rc_id(std::string_view property, const SerdeUnderTest& serde);

// Runs `check(src, case)` on sources generated within the depth's size limits.
template <class Check>
Verdict for_each_source(std::string_view property, const SerdeUnderTest& serde, RcOptions options,
                        Check check) {
  const ValueSpec spec = value_spec_for(serde);
  return run_rc_property(rc_id(property, serde), options, [&] {
    SerdeCase c = *gen_serde_case(serde.input_dtypes, size_limits_with_chunks());
    MemoryObjPtr src = make_source(c, spec);
    check(*src, c);
  });
}

}  // namespace lmcache::conformance_internal::serde_properties
