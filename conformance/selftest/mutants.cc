#include "mutants.h"

#include "mutants_internal.h"

namespace lmcache::conformance::selftest {

std::string bug_class_name(BugClass c) {
  switch (c) {
    case BugClass::kSizes:
      return "1 sizes";
    case BugClass::kConcurrency:
      return "2 concurrency";
    case BugClass::kState:
      return "3 state";
    case BugClass::kData:
      return "4 data";
    case BugClass::kFailureOrder:
      return "5 failure orderings";
    case BugClass::kWrapperSurface:
      return "6 wrapper surface";
    case BugClass::kLuck:
      return "7 luck";
  }
  return "?";
}

void register_mutant(const Mutant& m, Registry& registry) {
  switch (m.kind) {
    case ImplementationKind::kSerde:
      registry.add_serde(m.serde);
      break;
    case ImplementationKind::kProcessor:
      registry.add_processor(m.processor);
      break;
    case ImplementationKind::kAdapter:
      registry.add_adapter(m.adapter);
      break;
    case ImplementationKind::kWrapper:
      registry.add_wrapper(m.wrapper);
      break;
  }
}

std::vector<Mutant> all_mutants() {
  std::vector<Mutant> all;
  add_serde_mutants(all);
  add_integrity_mutants(all);
  add_lmcr_mutants(all);
  add_processor_mutants(all);
  add_adapter_mutants(all);
  add_connector_mutants(all);
  add_wrapper_mutants(all);
  add_sequential_wrapper_mutants(all);
  return all;
}

}  // namespace lmcache::conformance::selftest
