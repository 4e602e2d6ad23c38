#include "lmcache/core/config.h"

#include <cmath>
#include <stdexcept>

namespace lmcache {

ConfigReader::ConfigReader(const Json& config, std::string context)
    : config_(config), context_(std::move(context)) {
  if (!config_.is_object()) {
    throw std::invalid_argument(context_ + ": expected a JSON object, got " +
                                std::string(config_.type_name()));
  }
}

void ConfigReader::error(const std::string& message) const {
  throw std::invalid_argument(context_ + ": " + message);
}

bool ConfigReader::has(std::string_view key) const { return config_.contains(key); }

const Json* ConfigReader::raw(std::string_view key) {
  known_.emplace(key);
  auto it = config_.find(key);
  return it == config_.end() ? nullptr : &*it;
}

void ConfigReader::allow(std::string_view key) { known_.emplace(key); }

std::string ConfigReader::get_string(std::string_view key, std::optional<std::string> fallback) {
  const Json* v = raw(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    error("missing required key '" + std::string(key) + "'");
  }
  if (!v->is_string()) {
    error("'" + std::string(key) + "' must be a string, got " + v->dump());
  }
  return v->get<std::string>();
}

std::int64_t ConfigReader::get_int(std::string_view key, std::optional<std::int64_t> fallback,
                                   std::int64_t min, std::int64_t max) {
  const Json* v = raw(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    error("missing required key '" + std::string(key) + "'");
  }
  std::int64_t out = 0;
  if (v->is_number_integer()) {
    out = v->get<std::int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
             std::trunc(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9.0e18) {
    out = static_cast<std::int64_t>(v->get<double>());
  } else {
    error("'" + std::string(key) + "' must be an integer, got " + v->dump());
  }
  if (out < min || out > max) {
    std::string range = "[" + (min == INT64_MIN ? std::string("-inf") : std::to_string(min)) +
                        ", " + (max == INT64_MAX ? std::string("inf") : std::to_string(max)) + "]";
    error("'" + std::string(key) + "' must be in " + range + ", got " + v->dump());
  }
  return out;
}

double ConfigReader::get_number(std::string_view key, std::optional<double> fallback) {
  const Json* v = raw(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    error("missing required key '" + std::string(key) + "'");
  }
  if (!v->is_number()) error("'" + std::string(key) + "' must be a number, got " + v->dump());
  return v->get<double>();
}

bool ConfigReader::get_bool(std::string_view key, std::optional<bool> fallback) {
  const Json* v = raw(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    error("missing required key '" + std::string(key) + "'");
  }
  if (!v->is_boolean()) error("'" + std::string(key) + "' must be a boolean, got " + v->dump());
  return v->get<bool>();
}

void ConfigReader::finish() const {
  for (auto it = config_.begin(); it != config_.end(); ++it) {
    if (known_.find(it.key()) == known_.end()) {
      std::string names;
      for (const auto& k : known_) names += (names.empty() ? "" : ", ") + k;
      error("unknown key '" + it.key() + "' (known keys: " + (names.empty() ? "none" : names) +
            ")");
    }
  }
}

}  // namespace lmcache
