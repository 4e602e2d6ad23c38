#include "lmcache/resp/resp_connector.h"

#include <stdexcept>

namespace lmcache::resp {

namespace {

RespConnectorOptions checked(RespConnectorOptions o) {
  if (o.endpoint.host.empty()) throw std::invalid_argument("RespConnector: host is empty");
  if (o.endpoint.port < 1 || o.endpoint.port > 65535) {
    throw std::invalid_argument("RespConnector: port must be in [1, 65535], got " +
                                std::to_string(o.endpoint.port));
  }
  return o;
}

}  // namespace

RespConnector::RespConnector(RespConnectorOptions options)
    : BatchConnectorBase(options.num_workers, "resp", options.reads),
      options_(checked(std::move(options))) {
  clients_.reserve(total_workers());
  for (std::size_t w = 0; w < total_workers(); ++w) {
    clients_.push_back(std::make_unique<RespClient>(options_.endpoint));
  }
  start_workers();
}

RespConnector::~RespConnector() { close(); }

void RespConnector::run_tile(std::size_t worker, Tile& tile) {
  RespClient& client = *clients_[worker];
  switch (tile.op) {
    case Op::kGet:
      try {
        std::vector<std::uint8_t> hits =
            client.get_many(tile.keys, tile.bufs, tile.lens, &tile.error);
        std::copy(hits.begin(), hits.end(), tile.results.begin());
      } catch (const RespError& e) {
        tile.error = e.what();  // every key of the tile is a miss; the batch stays ok
      }
      return;
    case Op::kSet: {
      std::vector<std::uint8_t> ok = client.set_many(tile.keys, tile.bufs, tile.lens, &tile.error);
      std::copy(ok.begin(), ok.end(), tile.results.begin());
      return;  // a refused SET left tile.error set: the batch fails
    }
    case Op::kExists: {
      std::vector<std::uint8_t> present = client.exists_many(tile.keys);
      std::copy(present.begin(), present.end(), tile.results.begin());
      return;
    }
    case Op::kDelete: {
      std::vector<std::uint8_t> deleted = client.del_many(tile.keys);
      std::copy(deleted.begin(), deleted.end(), tile.results.begin());
      return;
    }
  }
}

void RespConnector::interrupt_workers() {
  for (auto& client : clients_) client->shutdown();
}

void RespConnector::release_resources() {
  for (auto& client : clients_) client->disconnect();
}

std::uint64_t RespConnector::connects() const {
  std::uint64_t n = 0;
  for (const auto& client : clients_) n += client->connects();
  return n;
}

std::uint64_t RespConnector::idle_drops() const {
  std::uint64_t n = 0;
  for (const auto& client : clients_) n += client->idle_drops();
  return n;
}

std::uint64_t RespConnector::connection_failures() const {
  std::uint64_t n = 0;
  for (const auto& client : clients_) n += client->failures();
  return n;
}

Json RespConnector::status_extra() const {
  return Json{{"host", options_.endpoint.host},
              {"port", options_.endpoint.port},
              {"connects", connects()},
              {"connection_failures", connection_failures()},
              {"idle_drops", idle_drops()}};
}

}  // namespace lmcache::resp
