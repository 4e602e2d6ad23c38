// File: lmcache/conformance/rapidcheck_driver.h
//
// Runs a RapidCheck property and turns the outcome into a Verdict, so that properties can be
// called on their own (self-tests, Verify helpers) as well as from the gtest suites.
//
// Configuration is layered: each property has kit defaults (RcOptions), scaled by the run's depth
// (depth.h: quick runs a third of the cases, exhaustive four times as many), and every key of
// the RC_PARAMS environment variable overrides them (seed, max_success, max_size, noshrink,
// reproduce, verbose_progress, ...). With
// no seed in RC_PARAMS a random one is drawn; the Verdict records the seed, and a failure carries
// the RC_PARAMS string (seed, sizes and a `reproduce=` token) that replays the minimal failing
// case of exactly that property.
//
// The reason is kept. RapidCheck re-runs the minimal case to describe it; when that replay
// passes (a failure that depends on timing or on state outside the case), the verdict still
// carries the message of the failing run, with a note saying the replay passed. Replay:
//
//   RC_PARAMS="seed=42 max_success=40 reproduce=..." ./my_conformance_test
//          --gtest_filter='*SerdeConformance.RoundTrip/my_serde'
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

// RcOptions
//
// A property's defaults; RC_PARAMS keys override each of them.
struct RcOptions {
  int max_success = 40;
  int max_size = 100;
  bool shrink = true;
  // Multiply max_success by the depth's case_factor (depth.h); off for properties whose case
  // count is part of their design (one scenario run once).
  bool scale_with_depth = true;
  // How long shrinking may take after the first failing case, in wall time. Past it, the Fail
  // reports that case's rule, unshrunk: a property that is slow over a slow implementation
  // (a Python serde) would otherwise spend its whole time limit shrinking and end as a hang.
  std::chrono::milliseconds shrink_budget{60'000};
};

// check_rc_property()
//
// Runs `property` (rc::detail::toProperty of a testable) under the layered configuration. `id`
// identifies the property in `reproduce=` tokens; use "<Suite>.<Property>/<implementation>".
// Pass on success; Fail with the first broken rule, then the minimal counterexample, otherwise,
// including when the generator gives up, RC_PARAMS cannot be parsed or the depth is invalid.
Verdict check_rc_property(std::string_view id, const RcOptions& options,
                          const rc::detail::Property& property);

// run_rc_property()
//
// check_rc_property() for any testable RapidCheck accepts (a lambda taking generated arguments).
template <class Testable>
Verdict run_rc_property(std::string_view id, const RcOptions& options, Testable&& testable) {
  return check_rc_property(id, options, rc::detail::toProperty(std::forward<Testable>(testable)));
}

// fail_case()
//
// Fails the current RapidCheck case with `message` (no file / line noise, unlike RC_FAIL).
[[noreturn]] void fail_case(std::string message);

// require_ok()
//
// Fails the current case with the result's message unless `result` is a success; the bridge
// from the Verify* helpers (verify.h) to RapidCheck.
void require_ok(const ::testing::AssertionResult& result);

// require()
//
// Fails the current case with `message` unless `condition` holds.
inline void require(bool condition, const std::string& message) {
  if (!condition) fail_case(message);
}

}  // namespace lmcache::conformance
