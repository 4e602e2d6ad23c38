// File: lmcache/conformance/internal/scenario_checks.h
//
// Checks for scenario properties: fixed steps run once, outside a RapidCheck case (the lent
// buffer and load view properties). A failed check throws ScenarioFailure; run_scenario() turns
// it into a Fail verdict with its message, and anything else that escapes into a Fail naming it.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal {

struct ScenarioFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// scenario_check()
//
// Throws ScenarioFailure(`what`) unless `ok`.
inline void scenario_check(bool ok, const std::string& what) {
  if (!ok) throw ScenarioFailure(what);
}

// run_scenario()
//
// `body()`'s verdict; a ScenarioFailure becomes Fail(its message), another exception
// Fail("unexpected exception: ...").
template <class Body>
conformance::Verdict run_scenario(Body&& body) {
  try {
    return body();
  } catch (const ScenarioFailure& e) {
    return conformance::Verdict::fail(e.what());
  } catch (const std::exception& e) {
    return conformance::Verdict::fail(std::string("unexpected exception: ") + e.what());
  }
}

}  // namespace lmcache::conformance_internal
