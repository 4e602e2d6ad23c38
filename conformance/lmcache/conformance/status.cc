#include "lmcache/conformance/status.h"

namespace lmcache::conformance {

std::string_view status_name(Status status) {
  switch (status) {
    case Status::kPass:
      return "Pass";
    case Status::kNotSupported:
      return "NotSupported";
    case Status::kQualityWarning:
      return "QualityWarning";
    case Status::kFail:
      return "Fail";
  }
  return "Fail";
}

std::optional<Status> parse_status(std::string_view name) {
  for (Status s : {Status::kPass, Status::kNotSupported, Status::kQualityWarning, Status::kFail}) {
    if (status_name(s) == name) return s;
  }
  return std::nullopt;
}

Status worse(Status a, Status b) {
  // Severity order; NotSupported is the mildest, so a mix of NotSupported and Pass is Pass.
  auto rank = [](Status s) {
    switch (s) {
      case Status::kNotSupported:
        return 0;
      case Status::kPass:
        return 1;
      case Status::kQualityWarning:
        return 2;
      case Status::kFail:
        return 3;
    }
    return 3;
  };
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace lmcache::conformance
