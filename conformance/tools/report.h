// File: conformance/tools/report.h
//
// The results of a lmcache-conform run and their three renderings: the matrix printed on the
// console (one table per suite, rows = properties, columns = implementations), a JSON report and
// a JUnit XML report (one <testsuite> per implementation, one <testcase> per property; Fail is a
// <failure>, NotSupported a <skipped>, QualityWarning a pass with the warning in <system-out>).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "lmcache/conformance/registry.h"
#include "lmcache/conformance/status.h"

namespace lmcache::conformance::tools {

struct PropertyResult {
  std::string suite;
  std::string property;
  Status status = Status::kFail;
  std::string message;
  double duration_s = 0.0;
  std::optional<std::uint64_t> rc_seed;
  std::string rc_params;  // replays the minimal failing case
  std::string reproduce;  // a command line that re-runs just this property
  // A Fail: the first error the implementation reported while the property ran, in its own
  // words (lmcache/conformance/error_notes.h); empty when it reported none.
  std::string implementation_error;
};

// One error the implementation reported first in several Fails of one implementation: a cascade
// from one broken state, reported once, before the Fails.
struct SharedCause {
  std::string implementation_error;
  std::vector<std::string> properties;  // "Suite.Property", in report order
};

// rule_of() / counterexample_of()
//
// A result message is the broken rule (one or more lines), then, for a generated case,
// "counterexample (after N passing cases):" and the generated values. The rule, or the
// counterexample (a note when the property ran a fixed scenario).
std::string rule_of(const std::string& message);
std::string counterexample_of(const std::string& message);

struct ImplementationReport {
  std::string name;
  ImplementationKind kind = ImplementationKind::kSerde;
  std::string source;  // "reference" or the plugin path
  std::vector<PropertyResult> results;

  // The implementation errors that came first in its Fails, each with the Fails it came first
  // in, in order of first appearance.
  std::vector<SharedCause> causes() const;
};

struct RunReport {
  std::string rc_params;  // what every child ran with
  std::string depth;      // quick, standard or exhaustive
  std::vector<ImplementationReport> implementations;
  std::vector<std::string> errors;  // sources that could not be loaded
  double duration_s = 0.0;

  // Counts per status over every result.
  std::map<Status, std::size_t> Summary() const;
  // 0 when nothing failed, 1 when a property failed, 2 when a source could not be loaded (and
  // nothing failed).
  int ExitCode() const;
};

// print_matrix()
//
// The console report: a table per suite, then the causes (each implementation error that came
// first in Fails, with those Fails), every Fail (message, seed, reproducing command),
// QualityWarning and NotSupported reason, then a summary line.
void print_matrix(const RunReport& report, std::ostream& os);

// write_json_report() / write_junit_report()
//
// Write the reports to `path` (lmcache/core/regular_file.h write_output_file(): only where a
// regular file or nothing is, whole or not at all); return an empty string or why writing
// failed.
std::string write_json_report(const RunReport& report, const std::string& path);
std::string write_junit_report(const RunReport& report, const std::string& path);

}  // namespace lmcache::conformance::tools
