// File: lmcache/core/config.h
//
// JSON configuration reading with strict keys: every component reads its options through a
// ConfigReader and calls finish(), so a misspelt key is an error that names it instead of
// being silently ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lmcache {

using Json = nlohmann::json;

class ConfigReader {
 public:
  // ConfigReader()
  //
  // `context` prefixes every message ("mock adapter config"). Throws std::invalid_argument when
  // `config` is not a JSON object.
  ConfigReader(const Json& config, std::string context);

  bool has(std::string_view key) const;

  // The raw value, marking the key as known; nullptr when absent.
  const Json* raw(std::string_view key);

  // Typed getters. Each marks the key as known and throws std::invalid_argument naming the key
  // when the value has the wrong type or range.
  std::string get_string(std::string_view key, std::optional<std::string> fallback = {});
  // Accepts integers and integral floats (2.0); rejects booleans.
  std::int64_t get_int(std::string_view key, std::optional<std::int64_t> fallback = {},
                       std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX);
  // Accepts any number; rejects booleans.
  double get_number(std::string_view key, std::optional<double> fallback = {});
  bool get_bool(std::string_view key, std::optional<bool> fallback = {});

  // Marks a key as known without reading it.
  void allow(std::string_view key);

  // finish()
  //
  // Throws std::invalid_argument "<context>: unknown key 'k' (known keys: a, b)" for the first
  // key that was never read or allowed.
  void finish() const;

  const std::string& context() const { return context_; }

  // error()
  //
  // Throws std::invalid_argument "<context>: <message>".
  [[noreturn]] void error(const std::string& message) const;

 private:
  const Json& config_;
  std::string context_;
  std::set<std::string, std::less<>> known_;
};

}  // namespace lmcache
