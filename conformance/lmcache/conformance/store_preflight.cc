#include "lmcache/conformance/store_preflight.h"

#include <cstdlib>
#include <optional>

#include "lmcache/conformance/error_notes.h"
#include "lmcache/conformance/plain_objects.h"
#include "lmcache/conformance/probe_keys.h"
#include "lmcache/core/event_notifier.h"
#include "lmcache/core/stall_tolerant_deadline.h"

namespace lmcache::conformance {

std::string first_store_problem(L2AdapterInterface& adapter, std::chrono::milliseconds limit) {
  clear_implementation_errors();
  const ObjectKey key = probe_key(0);
  MemoryObjPtr object = make_object(byte_layout(64));
  const TaskId id = adapter.submit_store_task({key}, {object});
  std::optional<L2StoreResult> result;
  StallTolerantDeadline deadline(limit);
  while (!result) {
    for (auto& [done, r] : adapter.pop_completed_store_tasks()) {
      if (done == id) result = r;
    }
    if (result || deadline.expired()) break;
    wait_readable(adapter.get_store_event_fd(), std::chrono::milliseconds(50));
  }
  std::string problem;
  if (!result) {
    problem = "a store of one 64-byte object did not complete within " +
              std::to_string(limit.count()) + " ms";
  } else if (!result->is_successful()) {
    problem = "a store of one 64-byte object completed as failed";
  } else {
    adapter.delete_keys({key});
  }
  if (!problem.empty()) {
    if (const std::optional<ImplementationError> e = first_implementation_error()) {
      problem += "; the implementation reported: " + e->error;
      if (!e->context.empty()) problem += " (in " + e->context + ")";
    }
  }
  clear_implementation_errors();
  return problem;
}

bool store_preflight_wanted() { return std::getenv(kStorePreflightOffEnv) == nullptr; }

}  // namespace lmcache::conformance
