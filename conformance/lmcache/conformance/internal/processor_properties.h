// File: lmcache/conformance/internal/processor_properties.h
//
// The functions behind ProcessorConformance's properties, one per line of property_list.h, and
// what the suite's files share: the two directions, owned processors, inputs every serde keeps
// exactly, temps, waiting for a result and comparing decoded values. Defined in
// processor_conformance.cc (single tasks and batches), processor_conformance_lifecycle.cc
// (close and resources) and processor_conformance_model.cc (the stateful model).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/generators.h"
#include "lmcache/conformance/internal/property_list.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal::processor_properties {
using namespace ::lmcache::conformance;  // the kit's public types

// The signature of every property of the suite.
using PropertyFunction = Verdict(const ProcessorUnderTest& processor);
LMCACHE_CONFORMANCE_PROCESSOR_PROPERTIES(LMCACHE_CONFORMANCE_DECLARE_PROPERTY)

enum class Dir { kSerialize, kDeserialize };

const char* dir_name(Dir d);
Dir other(Dir d);
int fd_of(const SerdeProcessor& p, Dir d);
std::optional<bool> query_of(SerdeProcessor& p, Dir d, TaskId id);
// Submits in direction `d`; pair i goes under keys[i] (probe_key(i) when `keys` is empty).
TaskId submit_of(SerdeProcessor& p, Dir d, std::vector<MemoryObjPtr> srcs,
                 std::vector<MemoryObjPtr> dsts, std::vector<ObjectKey> keys = {});

// `n` distinct keys over the key domain for the pairs of a batch: some drawn afresh, some
// differing from an earlier one in one field (the same chunk of another tenant, model or rank).
std::vector<ObjectKey> gen_pair_keys(std::size_t n);

// Empty when the serialized temps `a` and `b` (of one input under one key) are equal: byte for
// byte, or by size alone for a randomized processor; else how they differ.
std::string serialized_difference(const ProcessorUnderTest& put, const MemoryObj& a,
                                  const MemoryObj& b);

// A temp like temp_for() whose bytes start as junk from `seed`: bytes inside size() that a
// serialize leaves unwritten show up as a difference between two temps.
MemoryObjPtr junk_temp_for(SerdeProcessor& p, const MemoryLayoutDesc& layout, std::uint64_t seed,
                           std::size_t extra = 0);

// Owns a processor and closes it however the property ends.
struct OwnedProcessor {
  SerdeProcessorPtr p;
  explicit OwnedProcessor(const ProcessorUnderTest& put);
  ~OwnedProcessor();
  OwnedProcessor(const OwnedProcessor&) = delete;
  OwnedProcessor& operator=(const OwnedProcessor&) = delete;
  SerdeProcessor& operator*() { return *p; }
  SerdeProcessor* operator->() { return p.get(); }
};

// "ProcessorConformance.<property>/<processor>".
std::string rc_id(std::string_view property, const ProcessorUnderTest& put);

// An input every serde keeps exactly: small dyadic values (0, +-0.125 .. 3) from `seed`.
MemoryObjPtr safe_input(const MemoryLayoutDesc& layout, std::uint64_t seed);

// A temp for the serialized form of `layout`: estimate-sized, as the wrapper sizes it, plus
// `extra` bytes of capacity in its layout.
MemoryObjPtr temp_for(SerdeProcessor& p, const MemoryLayoutDesc& layout, std::size_t extra = 0);

// A generated layout for processor inputs within the depth's limits (at most `max_elements`
// elements in all, at least one).
MemoryLayoutDesc gen_processor_layout(const ProcessorUnderTest& put, std::size_t max_elements);

// The layout the scenario properties use.
MemoryLayoutDesc fixed_layout(const ProcessorUnderTest& put);

// Waits for the result of `id` (taking it) or fails the current case.
bool take_result(SerdeProcessor& p, Dir d, TaskId id, const std::string& what);

// Empty when `decoded` holds exactly `input`'s values; otherwise which element differs.
std::string decoded_mismatch(const MemoryObj& input, const MemoryObj& decoded);

}  // namespace lmcache::conformance_internal::processor_properties
