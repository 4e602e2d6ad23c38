// File: lmcache/conformance/status.h
//
// The verdict vocabulary of the conformance kit, after the Khronos CTS's allowed statuses: every
// property run against an implementation ends as exactly one of
//
//   Pass            the contract holds on every generated case;
//   NotSupported    the implementation declares (through its descriptor's capabilities) that the
//                   property does not apply to it; the reason says which capability;
//   QualityWarning  a lossy serde stayed within its declared hard error bound but exceeded its
//                   declared soft bound; the contract holds, the quality is worse than promised;
//   Fail            the contract is broken (or the implementation crashed or hung).
//
// Only Fail makes a run fail. A Verdict also carries the RapidCheck seed the property ran with
// and, for a failure, the RC_PARAMS string that reproduces the minimal failing case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lmcache::conformance {

enum class Status : std::uint8_t { kPass, kNotSupported, kQualityWarning, kFail };

// status_name()
//
// "Pass", "NotSupported", "QualityWarning" or "Fail": the spelling used in the matrix, the JSON
// report and the gtest property "verdict".
std::string_view status_name(Status status);

// parse_status()
//
// Inverse of status_name(); nullopt for any other text.
std::optional<Status> parse_status(std::string_view name);

struct Verdict {
  Status status = Status::kPass;
  // Why (Fail, NotSupported, QualityWarning); may be empty for Pass.
  std::string message;
  // The RapidCheck seed the property ran with (nullopt for scenario properties that draw no
  // random cases).
  std::optional<std::uint64_t> rc_seed;
  // For a RapidCheck failure: the RC_PARAMS value that replays the minimal failing case.
  std::string rc_params;

  static Verdict pass() { return {}; }
  static Verdict fail(std::string message) { return {Status::kFail, std::move(message), {}, {}}; }
  static Verdict not_supported(std::string reason) {
    return {Status::kNotSupported, std::move(reason), {}, {}};
  }
  static Verdict quality_warning(std::string message) {
    return {Status::kQualityWarning, std::move(message), {}, {}};
  }

  bool failed() const { return status == Status::kFail; }
};

// worse()
//
// The more severe of two statuses: Fail > QualityWarning > Pass > NotSupported. Used to fold the
// sub-checks of one property into a single status.
Status worse(Status a, Status b);

}  // namespace lmcache::conformance
