// File: connector_interface.h
//
// LMCache's native connector interface, IStorageConnector, in LMCache's namespace and with
// LMCache's member signatures (the kit's lmcache/bridge/native_connector.h restates the
// contract): submits queue a batch and return its future id; completions are announced on one
// eventfd and collected with drain_completions(); close() is idempotent and drops what is still
// queued.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "connector_types.h"

namespace lmcache::connector {

class IStorageConnector {
 public:
  virtual ~IStorageConnector() = default;

  virtual int event_fd() const = 0;
  virtual std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                         const std::vector<void*>& bufs,
                                         const std::vector<std::size_t>& lens,
                                         std::size_t batch_chunk_num_bytes) = 0;
  virtual std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                         const std::vector<void*>& bufs,
                                         const std::vector<std::size_t>& lens,
                                         std::size_t batch_chunk_num_bytes) = 0;
  virtual std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) = 0;
  virtual std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) = 0;
  virtual std::vector<Completion> drain_completions() = 0;
  virtual void close() = 0;
};

}  // namespace lmcache::connector
