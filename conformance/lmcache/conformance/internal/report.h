// File: lmcache/conformance/internal/report.h
//
// How a suite's TEST_P turns a Verdict into gtest outcomes. Internal to the suites library; the
// runner reads these recorded properties back from gtest's JSON output:
//   "verdict"          Pass / NotSupported / QualityWarning / Fail
//   "verdict_message"  the reason or failure report
//   "rc_seed"          the RapidCheck seed the property ran with
//   "rc_params"        for a failure: the RC_PARAMS that replays the minimal failing case
//   "quality_warning"  for a QualityWarning: what exceeded the soft bound
//   "implementation_error"  for a Fail: the first error the implementation reported
//                      meanwhile, in its own words (error_notes.h)
// NotSupported is a GTEST_SKIP; Fail is a gtest failure carrying the whole report.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "lmcache/conformance/error_notes.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance_internal {
using namespace ::lmcache::conformance;  // the kit's public types

inline void report_verdict(const Verdict& v) {
  ::testing::Test::RecordProperty("verdict", std::string(status_name(v.status)));
  if (v.rc_seed) ::testing::Test::RecordProperty("rc_seed", std::to_string(*v.rc_seed));
  if (!v.rc_params.empty()) ::testing::Test::RecordProperty("rc_params", v.rc_params);
  if (!v.message.empty()) ::testing::Test::RecordProperty("verdict_message", v.message);
  switch (v.status) {
    case Status::kPass:
      return;
    case Status::kQualityWarning:
      ::testing::Test::RecordProperty("quality_warning", v.message);
      return;
    case Status::kNotSupported:
      GTEST_SKIP() << "NotSupported: " << v.message;
    case Status::kFail:
      ADD_FAILURE() << v.message
                    << (v.rc_params.empty() ? std::string()
                                            : "\nReproduce with RC_PARAMS=\"" + v.rc_params + "\"");
      return;
  }
}

// run_and_report()
//
// Runs one property (`run` returns its Verdict) with no implementation errors noted, then
// reports the verdict; a Fail's message starts with the first error the implementation reported
// meanwhile (error_notes.h).
template <class Run>
void run_and_report(Run&& run) {
  clear_implementation_errors();
  Verdict v = run();
  if (v.status == Status::kFail) {
    v.message = with_first_implementation_error(v.message);
    // The runner groups Fails by it: several properties failing after one error are one cause.
    if (auto e = first_implementation_error()) {
      ::testing::Test::RecordProperty("implementation_error", e->error);
    }
  }
  report_verdict(v);
}

// Defines TEST_P(Suite, Property) as the verdict of Runner("Property", GetParam()).
#define LMCACHE_CONFORMANCE_PROPERTY(Suite, Property, Runner) \
  TEST_P(Suite, Property) {                                   \
    ::lmcache::conformance_internal::run_and_report(          \
        [&] { return Runner(#Property, GetParam()); });       \
  }

}  // namespace lmcache::conformance_internal
