// File: map_connector.h
//
// vendor::MapConnector: a vendor's native storage connector, written against LMCache's
// IStorageConnector members only (lmcache/connector/native_connector.h restates them), with no
// lmcache type in its interface: an in-memory map served by one worker thread that completes
// each batch in submission order and signals one eventfd.
//
//   submit_batch_*()     queue the batch and return its future id; throw std::invalid_argument
//                        for an empty batch or lists of different lengths (or a len other
//                        than batch_chunk_num_bytes), std::logic_error after close();
//   get                  copies each stored value of exactly len bytes; result_bytes holds one
//                        hit flag per key (a miss leaves its buffer untouched, the batch stays
//                        ok), hence kPerKeyGetResults;
//   set                  stores a copy of every buffer; result_bytes empty;
//   exists / delete      result_bytes: 1 present (deleted) / 0 absent, per key;
//   drain_completions()  reads the eventfd and returns every completion waiting;
//   close()              idempotent: stops and joins the worker, drops the batches still
//                        queued (never completed), closes the eventfd.
//
// Thread safety: every member may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace vendor {

// The vendor's completion record: LMCache's four public fields.
struct MapCompletion {
  std::uint64_t future_id = 0;
  bool ok = true;
  std::vector<std::uint8_t> result_bytes;
  std::string error;
};

class MapConnector {
 public:
  static constexpr bool kPerKeyGetResults = true;

  // Creates the eventfd and starts the worker; throws std::system_error when either fails.
  MapConnector();
  // Calls close().
  ~MapConnector();
  MapConnector(const MapConnector&) = delete;
  MapConnector& operator=(const MapConnector&) = delete;

  int event_fd() const { return efd_; }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes);
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes);
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys);
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys);
  std::vector<MapCompletion> drain_completions();
  void close();

 private:
  enum class Op { kGet, kSet, kExists, kDelete };
  struct Batch {
    Op op;
    std::uint64_t id;
    std::vector<std::string> keys;
    std::vector<void*> bufs;
    std::vector<std::size_t> lens;
  };

  std::uint64_t submit(Op op, const std::vector<std::string>& keys, const std::vector<void*>* bufs,
                       const std::vector<std::size_t>* lens, std::size_t chunk);
  MapCompletion run(const Batch& b);
  void work();

  int efd_ = -1;   // set once, by the constructor
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::vector<MapCompletion> done_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
  std::map<std::string, std::vector<unsigned char>> store_;  // touched by the worker only
  std::thread worker_;
  std::mutex close_mu_;  // serialises close() callers
};

}  // namespace vendor
