// File: lmcache/bridge/connector_error.h
//
// ConnectorError: what the connector bridge (native_connector_adapter.h) records about one thing
// that went wrong at its connector, and the one-line description the conformance kit, the fault
// campaigns and report_status() print.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lmcache::bridge {

// ConnectorError
//
// One thing the bridge saw go wrong at its connector, for diagnosis: a completion that is not ok
// or carries an error text, a completion of the wrong shape, a submit that threw, or a task
// whose batches did not complete within the task deadline.
struct ConnectorError {
  std::string op;                    // "get", "set", "exists", "delete" (a batch), or "store",
                                     // "lookup", "load" (a task past its deadline)
  std::uint64_t future_id = 0;       // the connector's id; 0 when the submit threw or for a task
  std::size_t key_count = 0;         // keys in the batch or task
  std::vector<std::string> keys;     // the first kMaxKeys connector keys
  std::vector<std::uint64_t> sizes;  // get, set, store, load: bytes of each key in `keys`
  std::string error;                 // the connector's own text, or what the bridge found

  static constexpr std::size_t kMaxKeys = 4;

  // One line: `get (future 7) of 2 keys ["ns+..." 4096 B, ...]: GET: size header mismatch`.
  std::string describe() const;
  // describe() without the error: `get (future 7) of 2 keys ["ns+..." 4096 B, ...]`.
  std::string where() const;
};

}  // namespace lmcache::bridge
