#include "lmcache/bridge/native_connector_options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "lmcache/bridge/key_codec.h"

namespace lmcache::bridge {
namespace {

constexpr long double kBytesPerGb = 1024.0L * 1024.0L * 1024.0L;

}  // namespace

NativeConnectorAdapterOptions NativeConnectorAdapterOptions::from_config(
    ConfigReader& reader, std::string type_name, std::uint32_t default_breaker_threshold) {
  NativeConnectorAdapterOptions o;
  o.type_name = std::move(type_name);
  o.task_deadline = std::chrono::milliseconds(
      reader.get_int("task_deadline_ms", kDefaultTaskDeadlineMs, 1, INT32_MAX));
  o.key_namespace = reader.get_string("key_namespace", std::string());
  if (!KeyCodec::is_valid_namespace(o.key_namespace)) {
    reader.error("'key_namespace' must be at most " + std::to_string(KeyCodec::kMaxNamespaceBytes) +
                 " bytes of [A-Za-z0-9_-], got \"" + o.key_namespace + "\"");
  }
  const double gb = reader.get_number("max_capacity_gb", 0.0);
  if (!std::isfinite(gb) || gb < 0) {
    reader.error("'max_capacity_gb' must be a number >= 0, got " + Json(gb).dump());
  }
  const long double bytes = static_cast<long double>(gb) * kBytesPerGb;
  if (bytes >= 18446744073709551616.0L) {
    reader.error("'max_capacity_gb' is too large: " + Json(gb).dump() + " GB");
  }
  o.max_capacity_bytes = static_cast<std::uint64_t>(bytes);  // truncates, as Python int()
  o.breaker.threshold = static_cast<std::uint32_t>(
      reader.get_int("breaker_threshold", default_breaker_threshold, 0, 1000000));
  o.breaker.cooldown = std::chrono::milliseconds(reader.get_int(
      "breaker_cooldown_ms", o.breaker.cooldown.count(), 1, std::int64_t{24} * 3600 * 1000));
  o.breaker.max_cooldown = std::chrono::milliseconds(
      reader.get_int("breaker_max_cooldown_ms",
                     std::max(o.breaker.max_cooldown.count(), o.breaker.cooldown.count()), 1,
                     std::int64_t{24} * 3600 * 1000));
  if (o.breaker.max_cooldown < o.breaker.cooldown) {
    reader.error("'breaker_max_cooldown_ms' (" + std::to_string(o.breaker.max_cooldown.count()) +
                 ") must be >= 'breaker_cooldown_ms' (" +
                 std::to_string(o.breaker.cooldown.count()) + ")");
  }
  return o;
}

void NativeConnectorAdapterOptions::allow_config_keys(ConfigReader& reader) {
  for (const char* key : {"task_deadline_ms", "key_namespace", "max_capacity_gb",
                          "breaker_threshold", "breaker_cooldown_ms", "breaker_max_cooldown_ms"}) {
    reader.allow(key);
  }
}

}  // namespace lmcache::bridge
