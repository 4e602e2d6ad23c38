// File: lmcache/testing/storage_descriptors.h
//
// Conformance descriptors (lmcache/conformance/descriptors.h) for adapters built on the bridge,
// shared by the storage components' *_conformance_test.cc. Header-only: only those tests, which
// link lmcache::conformance, include it.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/reference_impls.h"

namespace lmcache::storage_testing {

// bridge_descriptor()
//
// A NativeConnectorL2Adapter built by `make` (a fresh, empty key space on every call). The bridge
// reports its lookup locks, usage and listeners, and deletes.
inline conformance::AdapterUnderTest bridge_descriptor(std::string name,
                                                       std::function<L2AdapterPtr()> make) {
  conformance::AdapterUnderTest a;
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
inline conformance::AdapterUnderTest fp8_wrapped_descriptor(std::string name,
                                                            std::function<L2AdapterPtr()> make) {
  conformance::AdapterUnderTest a = conformance::ReferenceWrappedMockAdapter();
  a.name = std::move(name);
  a.make = std::move(make);
  return a;
}

}  // namespace lmcache::storage_testing
