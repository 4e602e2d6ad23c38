// File: lmcache/serde/serde_config.h
//
// SerdeConfig is the parsed form of the `"serde"` sub-object of an L2 adapter's JSON config:
//   {"type": "fp8", "fp8_dtype": "float8_e5m2", "max_workers": 2}
// becomes type = "fp8", kwargs = {"fp8_dtype": "float8_e5m2", "max_workers": 2}. The kwargs
// are checked by the serde's own factory (see serde_registry.h), not here.
#pragma once

#include <string>

#include "lmcache/core/config.h"

namespace lmcache {

struct SerdeConfig {
  // The registered serde name.
  std::string type;
  // Every key of the config except "type"; always a JSON object.
  Json kwargs = Json::object();

  // from_json()
  //
  // Throws std::invalid_argument "'serde' must be a JSON object, got <type>" for a non-object,
  // and "'serde' config must include a string 'type' field" when "type" is missing or not a
  // string.
  static SerdeConfig from_json(const Json& config);

  // to_json()
  //
  // kwargs plus "type": the inverse of from_json().
  Json to_json() const;

  friend bool operator==(const SerdeConfig&, const SerdeConfig&) = default;
};

}  // namespace lmcache
