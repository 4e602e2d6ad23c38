#include "lmcache/bridge/connector_error.h"

namespace lmcache::bridge {

std::string ConnectorError::describe() const { return where() + ": " + error; }

std::string ConnectorError::where() const {
  std::string out = op;
  if (future_id != 0) out += " (future " + std::to_string(future_id) + ")";
  out += " of " + std::to_string(key_count) + (key_count == 1 ? " key [" : " keys [");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += ", ";
    out += '"' + keys[i] + '"';
    if (i < sizes.size()) out += " " + std::to_string(sizes[i]) + " B";
  }
  if (key_count > keys.size()) out += keys.empty() ? "..." : ", ...";
  return out + "]";
}

}  // namespace lmcache::bridge
