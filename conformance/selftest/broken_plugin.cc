// A plugin with broken implementations (self-test mutants) beside a conformant one: the runner
// must report each broken one as a Fail under its property, keep going, and exit non-zero.
#include <set>
#include <string>

#include "lmcache/conformance/plugin_abi.h"
#include "mutants.h"

LMCACHE_CONFORMANCE_PLUGIN(registry) {
  using namespace lmcache::conformance::selftest;
  registry.add_serde(copy_serde());
  const std::set<std::string> broken = {"under_estimate",         "missing_notify",
                                        "load_ignores_bitmap",    "failed_store_succeeds",
                                        "above_soft_error_bound", "one_fd_for_both_directions"};
  for (const Mutant& m : all_mutants()) {
    if (broken.count(m.name)) register_mutant(m, registry);
  }
}
