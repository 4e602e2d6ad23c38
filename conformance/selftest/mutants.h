// File: conformance/selftest/mutants.h
//
// Deliberately broken implementations, at least one per conformance property, each known to
// break exactly one rule (the property it must be caught under), and their conformant bases
// (which must pass everything, so that a mutant is caught for its bug and not for its base):
//
//   serdes      a lossless copy serde with switches (nondeterministic output, an under-estimate,
//               a data-dependent estimate, a write past the returned count, an overrun of a
//               short buffer, ...);
//   processors  a small thread-and-queue SerdeProcessor over fp8 with switches (one fd for both
//               directions, a missing notify, a query that answers twice, a close that leaks an
//               fd or a thread, ...);
//   adapters    decorators of the mock adapter (a load that ignores its bitmap, a lookup that
//               does not lock, results that are not one-shot, usage that does not match, ...);
//   wrappers    decorators and compositions of SerdeL2AdapterWrapper (not all-or-nothing,
//               accepting heterogeneous batches, dropping in-flight tasks at close, ...).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance::selftest {

// Mutant
//
// One broken implementation and where it must be caught: running `property` of its kind's suite
// must end with `expected` (Fail, or QualityWarning for a serde that is only worse than its
// declared soft bound).
struct Mutant {
  std::string name;  // also its implementation name
  ImplementationKind kind;
  std::string property;
  Status expected = Status::kFail;
  SerdeUnderTest serde;  // the descriptor of its kind is filled; the others are empty
  ProcessorUnderTest processor;
  AdapterUnderTest adapter;
  WrapperUnderTest wrapper;
};

// AllMutants()
//
// Every mutant, serdes first.
std::vector<Mutant> AllMutants();

// The conformant bases of the mutants.
SerdeUnderTest CopySerde();
ProcessorUnderTest QueueProcessor();
AdapterUnderTest DecoratedMockAdapter();

// RegisterMutant()
//
// Adds the mutant's descriptor to `registry` (for the broken plugin).
void RegisterMutant(const Mutant& mutant, Registry& registry);

}  // namespace lmcache::conformance::selftest
