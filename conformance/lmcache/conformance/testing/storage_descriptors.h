// File: lmcache/conformance/testing/storage_descriptors.h
//
// Conformance descriptors (lmcache/conformance/descriptors.h) for adapters built on the bridge,
// shared by the storage components' *_conformance_test.cc and lmcache-conform --reference. The
// kit's own test support, kept with the kit so that storage/ never includes it: header-only,
// never installed; its includers link lmcache::conformance and lmcache::storage_testing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "lmcache/testing/shadowed_adapter.h"

namespace lmcache::conformance {

// bridge_descriptor()
//
// A NativeConnectorL2Adapter built by `make` (a fresh, empty key space on every call). The bridge
// reports its lookup locks, usage and listeners, and deletes.
inline AdapterUnderTest bridge_descriptor(std::string name, std::function<L2AdapterPtr()> make) {
  AdapterUnderTest a;
  a.name = std::move(name);
  a.make = std::move(make);
  a.capabilities.reports_lock_count = true;
  a.object_dtypes = {DType::kUInt8, DType::kFloat32, DType::kBFloat16};
  return a;
}

// fp8_wrapped_descriptor()
//
// A SerdeL2AdapterWrapper with the fp8 (e4m3fn) serde over a bridge, built by `make` (for
// instance create_l2_adapter({..., "serde": {"type": "fp8"}})): it stores one byte per element
// and loads back the fp8 round trip, as the reference "wrapper_mock_fp8" declares.
inline AdapterUnderTest fp8_wrapped_descriptor(std::string name,
                                               std::function<L2AdapterPtr()> make) {
  AdapterUnderTest a = reference_wrapped_mock_adapter();
  a.name = std::move(name);
  a.make = std::move(make);
  return a;
}

// wrapper_property_names()
//
// The WrapperConformance properties, by name, for a parameterised test.
inline std::vector<std::string> wrapper_property_names() {
  std::vector<std::string> out;
  for (const auto& p : properties_of(ImplementationKind::kWrapper)) {
    out.emplace_back(p.name);
  }
  return out;
}

// run_wrapper_property_over()
//
// One WrapperConformance property of the reference SerdeL2AdapterWrapper (fp8 serde) with an
// adapter from `make_primary` below the kit's scripted inner adapter, the kit's mock as its
// shadow (ShadowedAdapter): every store, lookup and load the wrapper makes is answered by the
// primary. `rig_name` is appended to the RapidCheck id.
inline Verdict run_wrapper_property_over(std::string_view property, std::string rig_name,
                                         std::function<L2AdapterPtr()> make_primary) {
  WrapperRigOptions rig;
  rig.name = std::move(rig_name);
  rig.decorate_inner = [make_primary = std::move(make_primary)](L2AdapterPtr mock) -> L2AdapterPtr {
    return std::make_unique<storage_testing::ShadowedAdapter>(make_primary(), std::move(mock));
  };
  return run_wrapper_property(property, reference_serde_wrapper(), rig);
}

}  // namespace lmcache::conformance
