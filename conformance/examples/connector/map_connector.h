// File: map_connector.h
//
// lmcache::connector::MapConnector: a vendor's native storage connector written the way
// LMCache's own are: in LMCache's namespace, deriving from ConnectorBase (IStorageConnector),
// returning LMCache's Completion, with no lmcache-kit type anywhere. It stands in for a client of
// a key-value server: every MapConnector of the process reads and writes one in-memory map, as
// connectors to one server share its store (so the kit also checks that a second connector reads
// what a first one stored).
//
//   get            copies each stored value of exactly len bytes; result_bytes holds one hit
//                  flag per key (a miss, or a value of another length, leaves its buffer
//                  untouched and the batch ok), hence kPerKeyGetResults;
//   set            stores a copy of every buffer; result_bytes empty;
//   exists/delete  result_bytes: 1 present (deleted) / 0 absent, per key.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "connector_base.h"

namespace lmcache::connector {

class MapConnector final : public ConnectorBase {
 public:
  static constexpr bool kPerKeyGetResults = true;

  using Values = std::map<std::string, std::vector<unsigned char>>;

  MapConnector() = default;
  // Stops the worker before the map goes.
  ~MapConnector() override { close(); }

  // run_on()
  //
  // Answers `batch` over `values` as described above (the caller serialises access to them).
  // Public so that test connectors built on this example's store share its semantics.
  static Completion run_on(Values& values, const Batch& batch);

 private:
  // The "server": one store for every MapConnector of the process.
  struct Store {
    std::mutex mu;  // guards values
    Values values;
  };
  static Store& store();

  Completion run_batch(const Batch& batch) override;
};

}  // namespace lmcache::connector
