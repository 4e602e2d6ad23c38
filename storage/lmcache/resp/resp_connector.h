// File: lmcache/resp/resp_connector.h
//
// RespConnector: a native connector (lmcache/bridge/native_connector.h) storing each object as
// one Redis/Valkey string (SET / GET / EXISTS / DEL) over RESP2, LMCache's "resp" connector.
//
// num_workers workers each own one RespClient connection, opened on first use; a batch is cut
// into at most num_workers tiles (BatchConnectorBase) and each tile is pipelined on its worker's
// connection. With a read pool (options.reads, LMCache's read_io_depth), gets run on that many
// readers instead, each with a connection of its own. Behaviour on failures, chosen to be cleaner
// than LMCache's own connector (whose workers exit when the server is unreachable, so submitted
// work never completes):
//   - the constructor never connects, so an unreachable server does not throw; every batch
//     then completes promptly: gets as misses (error text set), other ops as failed batches;
//   - a connection that fails, sends a bad reply (garbage, a length over its bound, a negative
//     length, a reply cut short; resp_client.h) or does not finish its tile within io_timeout
//     is closed and the tile fails (gets: the keys not yet received are misses); the next tile
//     on that worker reconnects, so the connector recovers by itself after a server restart;
//   - a SET the server refuses (an OOM error under maxmemory) fails the batch; a GET of a value
//     whose length is not batch_chunk_num_bytes is a miss.
// close() shuts every connection down, so workers blocked on a paused server return at once.
//
// Thread safety: as BatchConnectorBase.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lmcache/bridge/batch_connector_base.h"
#include "lmcache/resp/resp_client.h"

namespace lmcache::resp {

struct RespConnectorOptions {
  RespEndpoint endpoint;
  std::size_t num_workers = 8;
  // LMCache's read pool (batch_connector_base.h): read_io_depth readers with a connection each,
  // and the bytes of gets they may have in flight.
  bridge::ReadPoolOptions reads;
};

class RespConnector final : public bridge::BatchConnectorBase {
 public:
  // Starts the workers (no connection yet). Throws std::invalid_argument for num_workers == 0,
  // an empty host or a port outside 1..65535.
  explicit RespConnector(RespConnectorOptions options);
  ~RespConnector() override;

  // Totals over the workers' connections (RespClient's counters).
  std::uint64_t connects() const;
  std::uint64_t connection_failures() const;
  std::uint64_t idle_drops() const;

  const RespConnectorOptions& options() const { return options_; }

 protected:
  void run_tile(std::size_t worker, Tile& tile) override;
  void interrupt_workers() override;
  // Closes every connection.
  void release_resources() override;
  // {"host", "port", "connects", "connection_failures", "idle_drops"}
  Json status_extra() const override;

 private:
  const RespConnectorOptions options_;
  std::vector<std::unique_ptr<RespClient>> clients_;  // one per worker, fixed size
};

}  // namespace lmcache::resp
