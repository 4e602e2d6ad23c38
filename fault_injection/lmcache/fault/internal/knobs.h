// File: lmcache/fault/internal/knobs.h
//
// Readers for fault knobs in JSON configs (fault_inject adapter, hooks, plan). Internal: do not
// include from outside lmcache/fault. Every error is std::invalid_argument "<message> (got
// <value>)"; booleans never count as numbers (nlohmann's is_number() is false for them).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lmcache/core/config.h"

namespace lmcache::fault_internal {

[[noreturn]] inline void fail(const std::string& message, const Json& got) {
  throw std::invalid_argument(message + " (got " + got.dump() + ")");
}

// A number in [0, 1]; `message` replaces the default "'key' must be a number in [0, 1]".
inline double read_probability(ConfigReader& reader, std::string_view key, double fallback,
                               const std::string& message = {}) {
  const Json* v = reader.raw(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !(v->get<double>() >= 0.0 && v->get<double>() <= 1.0)) {
    fail(message.empty() ? "'" + std::string(key) + "' must be a number in [0, 1]" : message, *v);
  }
  return v->get<double>();
}

// A number in [0, max].
inline double read_non_negative(ConfigReader& reader, std::string_view key, double fallback,
                                double max) {
  const Json* v = reader.raw(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !(v->get<double>() >= 0.0 && v->get<double>() <= max)) {
    fail("'" + std::string(key) + "' must be a number in [0, " + Json(max).dump() + "]", *v);
  }
  return v->get<double>();
}

// A JSON integer (not a float) in [min, max].
inline std::int64_t read_integer(ConfigReader& reader, std::string_view key, std::int64_t fallback,
                                 std::int64_t min, std::int64_t max) {
  const Json* v = reader.raw(key);
  if (v == nullptr) return fallback;
  bool ok = v->is_number_integer() &&
            !(v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max));
  if (ok) {
    auto x = v->get<std::int64_t>();
    ok = x >= min && x <= max;
  }
  if (!ok) {
    fail("'" + std::string(key) + "' must be an integer in [" + std::to_string(min) + ", " +
             std::to_string(max) + "]",
         *v);
  }
  return v->get<std::int64_t>();
}

// A list of non-negative JSON integers.
inline std::vector<std::uint64_t> read_index_list(ConfigReader& reader, std::string_view key,
                                                  const std::string& message) {
  std::vector<std::uint64_t> out;
  const Json* v = reader.raw(key);
  if (v == nullptr) return out;
  if (!v->is_array()) fail(message, *v);
  for (const Json& e : *v) {
    if (!e.is_number_integer() || (!e.is_number_unsigned() && e.get<std::int64_t>() < 0)) {
      fail(message, *v);
    }
    out.push_back(e.get<std::uint64_t>());
  }
  return out;
}

// One of the given names.
template <class Enum>
Enum read_mode(ConfigReader& reader, std::string_view key, Enum fallback,
               std::initializer_list<std::pair<const char*, Enum>> names) {
  const Json* v = reader.raw(key);
  if (v == nullptr) return fallback;
  std::string all;
  for (const auto& [name, value] : names) {
    if (v->is_string() && v->get<std::string>() == name) return value;
    all += (all.empty() ? "" : ", ") + std::string("'") + name + "'";
  }
  fail("'" + std::string(key) + "' must be one of " + all, *v);
}

}  // namespace lmcache::fault_internal
