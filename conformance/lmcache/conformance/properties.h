// File: lmcache/conformance/properties.h
//
// The property catalogue: every conformance property by suite, with a one-line statement of
// what it checks, in the order of internal/property_list.h (the one table every name comes
// from). The names are stable identifiers (they are gtest test names, matrix columns, report
// keys and the entries of conformance/mustpass.txt); renaming one is a breaking change of the
// mustpass list and bumps LMCACHE_CONFORMANCE_MUSTPASS_VERSION.
#pragma once

#include <span>
#include <string_view>

#include "lmcache/conformance/registry.h"

namespace lmcache::conformance {

struct PropertyInfo {
  std::string_view suite;   // "SerdeConformance"
  std::string_view name;    // "RoundTrip"
  std::string_view checks;  // what a Pass guarantees
};

// suite_name()
//
// "SerdeConformance", "ProcessorConformance", "AdapterConformance", "WrapperConformance".
std::string_view suite_name(ImplementationKind kind);

// properties_of()
//
// The properties of one kind's suite, in the order the suite defines them.
std::span<const PropertyInfo> properties_of(ImplementationKind kind);

}  // namespace lmcache::conformance
