// File: lmcache/resp/resp_adapter.h
//
// The "resp" L2 adapter type (LMCache's name): a RespConnector behind the bridge
// (NativeConnectorL2Adapter). Built from its JSON config by create_l2_adapter() once the type is
// registered; with a "serde" object in the config the wrapper library wraps it as for any
// adapter type:
//
//   {"type": "resp", "host": "127.0.0.1", "port": 6379, "num_workers": 8,
//    "serde": {"type": "fp8"}}
//
// Config keys (unknown keys are errors naming the key):
//   host              string, required (LMCache's key)
//   port              integer in [1, 65535], required (LMCache's key)
//   num_workers       integer >= 1, default 8: connections and worker threads (LMCache's key)
//   username          string, default "": Redis 6 ACL user for AUTH (LMCache's key)
//   password          string, default "": AUTH is sent only when non-empty (LMCache's key)
//   max_capacity_gb   number >= 0, default 0 = unbounded: client-side capacity (bridge)
//   task_deadline_ms  integer >= 1, default 10000: per-task deadline (bridge)
//   key_namespace     string of [A-Za-z0-9_-], default "": key prefix (bridge)
//   read_io_depth     integer in [0, 1024], default 0: reader threads for loads, one connection
//                     each (0: loads share the num_workers connections) (LMCache's key)
//   read_max_bytes_in_flight integer >= 0, default 0 = 1536 MiB: get bytes the readers may
//                     have in flight (LMCache's key; lmcache/bridge/batch_connector_base.h)
//   breaker_threshold integer >= 0, default 3: connection failures in a row that open the
//                     circuit breaker, 0 = none (bridge; LMCache's S3 and Bigtable design)
//   breaker_cooldown_ms     integer >= 1, default 5000: the first wait once open (bridge)
//   breaker_max_cooldown_ms integer >= breaker_cooldown_ms, default 300000 (bridge)
//   connect_timeout_ms integer >= 1, default 2000: TCP connect limit per attempt
//   io_timeout_ms     integer >= 1, default 5000: the deadline of one request (a connect with
//                     its AUTH, or a worker's whole pipelined tile) from its start; every wait
//                     gets what is left of it; past it the connection is dropped and the tile
//                     fails
#pragma once

#include <memory>
#include <string_view>

#include "lmcache/bridge/bridged_adapter_type.h"
#include "lmcache/bridge/native_connector_adapter.h"
#include "lmcache/core/config.h"
#include "lmcache/resp/resp_connector.h"

namespace lmcache::resp {

inline constexpr std::string_view kRespAdapterType = "resp";

struct RespAdapterConfig : bridge::BridgedAdapterConfig<RespConnectorOptions> {
  // parse()
  //
  // Reads the keys above; a "type" key is accepted only when it is "resp". Throws
  // std::invalid_argument naming the key for an unknown key (checked first, so a typo is
  // reported as such), a missing required key, a wrong type or a value out of range.
  static RespAdapterConfig parse(const Json& config);
};

// create_resp_adapter()
//
// The bridge over a RespConnector built from `config` (RespAdapterConfig::parse). Does not
// connect: an unreachable server shows up as failed tasks, not as an exception here.
std::unique_ptr<bridge::NativeConnectorL2Adapter> create_resp_adapter(const Json& config);

// register_resp_adapter_type()
//
// Registers "resp" with the L2 adapter registry (lmcache/l2/adapter_registry.h). Idempotent and
// thread-safe; also run when the library is loaded, and by including this header.
void register_resp_adapter_type();

}  // namespace lmcache::resp

namespace lmcache::resp_internal {
int RespAdapterLinkAnchor();
[[maybe_unused]] static const int kRespAdapterRegistered = RespAdapterLinkAnchor();
}  // namespace lmcache::resp_internal
