#include "mutants.h"

namespace lmcache::conformance::selftest {

void RegisterMutant(const Mutant& m, Registry& registry) {
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

}  // namespace lmcache::conformance::selftest
