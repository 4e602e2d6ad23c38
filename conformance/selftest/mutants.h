// File: conformance/selftest/mutants.h
//
// The mutation suite: single-bug implementations of the four kinds, written the way a vendor
// really gets things wrong (a serde sized from the physical buffer, scratch shared between
// threads, an estimate cached under the wrong key, ids that race under concurrent submitters,
// a lock leaked on a key twice in a batch, an fd leaked every 64 tasks, a wrapper that forgets
// its temps when the first pair fails, ...), plus one deliberately broken implementation per
// property. Each mutant
//   - belongs to one of the bug classes below (the ways a kit can look in too few places);
//   - names the property that must catch it at `standard` depth, on any seed;
//   - carries a witness: a small deterministic scenario, written against the interfaces
//     directly and independent of the kit's properties, that shows the bug on the mutant and
//     shows nothing on its conformant base;
//   - has a conformant base (same family, no bug), which must pass every property.
// The families:
//   serdes      a lossless copy serde with switches;
//   processors  a thread-and-queue SerdeProcessor over fp8 (or checksum) with switches (1 or 2
//               workers);
//   adapters    decorators of the mock adapter;
//   connectors  a connector below the reference bridge, held to a second bridge over its store;
//   wrappers    decorators and compositions of SerdeL2AdapterWrapper, and a second,
//               independent wrapper (one worker thread, one task at a time) with switches.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance::selftest {

// The bug classes of the mutation suite (conformance/README.md, "Mutation suite").
enum class BugClass {
  kSizes = 1,       // inputs too small and too tidy: large groups, bitmaps past a byte, narrowed
                    // objects, slack, keys differing in one field
  kConcurrency,     // concurrent submitters, threads sharing an instance
  kState,           // state kept across calls on one instance, leaks every N tasks
  kData,            // outcomes not compared with the data they stand for
  kFailureOrder,    // failure positions, one-shot failures, close, two tasks on one key
  kWrapperSurface,  // the wrapper's pass-through surface, its inner's failures, its close
  kLuck,            // bugs a fixed seed or a lost message would hide
};

// "1 sizes", "2 concurrency", ...
std::string bug_class_name(BugClass c);

// The descriptors of one implementation; the field of its kind is filled.
struct Impl {
  SerdeUnderTest serde;
  ProcessorUnderTest processor;
  AdapterUnderTest adapter;
  WrapperUnderTest wrapper;
};

// Mutant
//
// One broken implementation (the Impl fields it inherits) and where it must be caught:
// running `property` of `suite`'s catalogue must end with `expected` (Fail, or QualityWarning
// for a serde only worse than its declared soft bound). `suite` is `kind`, except for wrappers
// caught by the adapter suite run over them (adapter_of_wrapper).
struct Mutant : Impl {
  std::string name;  // also its implementation name
  ImplementationKind kind = ImplementationKind::kSerde;
  ImplementationKind suite = ImplementationKind::kSerde;
  std::string property;
  Status expected = Status::kFail;
  BugClass bug_class = BugClass::kData;
  // What the implementation gets wrong, in one sentence.
  std::string bug;
  // The conformant implementation it was derived from (same kind).
  Impl base;
  // The witness scenario: "" when the implementation behaves, else what went wrong.
  std::function<std::string(const Impl&)> witness;
};

// all_mutants()
//
// Every mutant, serdes first.
std::vector<Mutant> all_mutants();

// The conformant bases of the mutant families.
SerdeUnderTest copy_serde();
ProcessorUnderTest queue_processor();
// The queue processor over the checksum serde, which binds frames to keys: the base of the
// mutants that pass keys wrongly.
ProcessorUnderTest queue_processor_over_checksum();
AdapterUnderTest decorated_mock_adapter();
// The reference bridge over the in-memory connector, with a second bridge over the same store
// as its reference (AdapterUnderTest::reference).
AdapterUnderTest bridge_over_memory_adapter();
WrapperUnderTest decorated_wrapper();
WrapperUnderTest sequential_wrapper();

// register_mutant()
//
// Adds the mutant's descriptor to `registry` (for the broken plugin).
void register_mutant(const Mutant& mutant, Registry& registry);

}  // namespace lmcache::conformance::selftest
