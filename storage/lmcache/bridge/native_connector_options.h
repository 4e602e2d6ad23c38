// File: lmcache/bridge/native_connector_options.h
//
// NativeConnectorAdapterOptions: the connector bridge's settings (native_connector_adapter.h)
// and the config keys every reference connector type reads them from.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lmcache/bridge/circuit_breaker.h"
#include "lmcache/bridge/connector_error.h"
#include "lmcache/core/config.h"

namespace lmcache::bridge {

// NativeConnectorAdapterOptions
//
// The bridge's settings. Every reference connector type ("resp", "fs") reads them from its
// config with from_config().
struct NativeConnectorAdapterOptions {
  // Reported by report_status()["connector_type"] and in messages.
  std::string type_name = "native";
  // How long a task may wait for its connector completions (> 0).
  std::chrono::milliseconds task_deadline{kDefaultTaskDeadlineMs};
  // KeyCodec namespace (empty: none).
  std::string key_namespace;
  // Client-side capacity in bytes; 0 = unbounded (supports_global_eviction() is then false).
  std::uint64_t max_capacity_bytes = 0;
  // Probe with exists before every get; nullopt: probe unless the connector declares per-key
  // get results.
  std::optional<bool> probe_before_get;
  // The circuit breaker; threshold 0 (the default here) turns it off.
  CircuitBreakerOptions breaker;
  // Called with every ConnectorError as it happens (from the bridge's threads, no lock held;
  // what it throws is dropped). The conformance kit names the first one in a Fail.
  std::function<void(const ConnectorError&)> on_connector_error;

  static constexpr std::int64_t kDefaultTaskDeadlineMs = 10000;

  // from_config()
  //
  // Reads the bridge's keys from `reader` (which keeps reading the connector's own keys):
  //   "task_deadline_ms"  integer >= 1, default 10000;
  //   "key_namespace"     string of [A-Za-z0-9_-], at most 64 bytes, default "";
  //   "max_capacity_gb"   number >= 0 (GiB, truncated to bytes as Python int()), default 0;
  //   "breaker_threshold" integer >= 0, connection failures in a row that open the breaker
  //                       (0 = no breaker), default `default_breaker_threshold`;
  //   "breaker_cooldown_ms"     integer >= 1, default 5000: the first wait once open;
  //   "breaker_max_cooldown_ms" integer >= breaker_cooldown_ms, default 300000: the most a
  //                       doubled wait grows to.
  // Throws std::invalid_argument naming the key for a wrong type or range.
  static NativeConnectorAdapterOptions from_config(ConfigReader& reader, std::string type_name,
                                                   std::uint32_t default_breaker_threshold = 0);

  // allow_config_keys()
  //
  // Marks the keys from_config() reads as known, for a parser that rejects unknown keys before
  // reading any.
  static void allow_config_keys(ConfigReader& reader);
};

}  // namespace lmcache::bridge
