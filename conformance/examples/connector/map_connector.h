// File: map_connector.h
//
// lmcache::connector::MapConnector: a vendor's native storage connector written the way
// LMCache's own are: in LMCache's namespace, deriving from ConnectorBase (IStorageConnector),
// returning LMCache's Completion, with no lmcache-kit type anywhere. It keeps an in-memory map.
//
//   get            copies each stored value of exactly len bytes; result_bytes holds one hit
//                  flag per key (a miss, or a value of another length, leaves its buffer
//                  untouched and the batch ok), hence kPerKeyGetResults;
//   set            stores a copy of every buffer; result_bytes empty;
//   exists/delete  result_bytes: 1 present (deleted) / 0 absent, per key.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "connector_base.h"

namespace lmcache::connector {

class MapConnector final : public ConnectorBase {
 public:
  static constexpr bool kPerKeyGetResults = true;

  MapConnector() = default;
  // Stops the worker before the map goes.
  ~MapConnector() override { close(); }

 private:
  Completion run_batch(const Batch& batch) override;

  std::map<std::string, std::vector<unsigned char>> store_;  // touched by the worker only
};

}  // namespace lmcache::connector
