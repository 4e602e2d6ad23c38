#include "lmcache/serde/serde_config.h"

#include <stdexcept>

namespace lmcache {

SerdeConfig SerdeConfig::from_json(const Json& config) {
  if (!config.is_object()) {
    throw std::invalid_argument(std::string("'serde' must be a JSON object, got ") +
                                config.type_name());
  }
  auto it = config.find("type");
  if (it == config.end() || !it->is_string()) {
    throw std::invalid_argument("'serde' config must include a string 'type' field");
  }
  SerdeConfig out;
  out.type = it->get<std::string>();
  out.kwargs = config;
  out.kwargs.erase("type");
  return out;
}

Json SerdeConfig::to_json() const {
  Json out = kwargs.is_object() ? kwargs : Json::object();
  out["type"] = type;
  return out;
}

}  // namespace lmcache
