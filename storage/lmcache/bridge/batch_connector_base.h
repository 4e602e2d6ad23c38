// File: lmcache/bridge/batch_connector_base.h
//
// BatchConnectorBase: the worker pool, batch tiling, completion queue and eventfd of a native
// connector (native_connector.h), so that a connector only writes how one worker runs one slice
// of a batch. The reference connectors (resp, fs) derive from it; it plays the part of LMCache's
// ConnectorBase, with per-key get results and submit_batch_delete.
//
// A submitted batch is cut into at most num_workers tiles (contiguous slices of ceil(n / tiles)
// keys) queued FIFO; any idle worker runs the next tile. When the last tile of a batch is done
// its Completion is queued and the eventfd notified (counter mode: many completions may fold
// into one wake-up; drain_completions() returns them all).
//
// Read pool (ReadPoolOptions, LMCache's read_io_depth / read_max_bytes_in_flight): with
// io_depth > 0, gets go to io_depth reader workers of their own (worker indices num_workers ..
// num_workers + io_depth - 1, each with its own per-worker state, e.g. a connection), cut into
// at most io_depth tiles, and a reader starts the next get tile only while the get bytes in
// flight plus the tile's stay within max_bytes_in_flight (0: 1536 MiB, LMCache's default); a
// tile larger than the budget runs alone. Other ops stay on the num_workers pool. io_depth 0
// (the default) runs gets on the shared pool, as LMCache's legacy mode does.
//
// Outcome of a batch (what run_tile() reports through its Tile):
//   get     ok stays true; result_bytes[i] = 1 hit, 0 miss. A per-key error is a miss, its
//           message kept in `error` (LMCache's connectors do the same).
//   set     result_bytes[i] = 1 when key i was stored; any failure fails the batch (ok = false).
//   exists  result_bytes[i] = 1 present, 0 absent; any failure fails the batch.
//   delete  result_bytes[i] = 1 deleted, 0 not found; any failure fails the batch (unlike
//           LMCache's base, so that a caller can tell a failed delete from an absent key).
// A failed batch keeps the flags its tiles wrote; consumers ignore them when ok is false.
//
// Thread safety: submits and drain_completions() may be called from any thread; close() is
// idempotent and may race with submits (which then throw std::logic_error).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "lmcache/bridge/native_connector.h"
#include "lmcache/core/config.h"
#include "lmcache/core/event_notifier.h"

namespace lmcache::bridge {

// ReadPoolOptions: the read pool above. io_depth 0 = none.
struct ReadPoolOptions {
  std::size_t io_depth = 0;
  std::uint64_t max_bytes_in_flight = 0;

  static constexpr std::uint64_t kDefaultMaxBytesInFlight = std::uint64_t{1536} << 20;
  static constexpr std::size_t kMaxIoDepth = 1024;

  // max_bytes_in_flight, with 0 read as the default.
  std::uint64_t budget() const {
    return max_bytes_in_flight == 0 ? kDefaultMaxBytesInFlight : max_bytes_in_flight;
  }

  // from_config()
  //
  // Reads LMCache's "read_io_depth" (integer in [0, 1024], default 0) and
  // "read_max_bytes_in_flight" (integer >= 0, default 0 = 1536 MiB) from `reader`; marks both
  // known first. Throws std::invalid_argument naming the key.
  static ReadPoolOptions from_config(ConfigReader& reader);
  static void allow_config_keys(ConfigReader& reader);
};

class BatchConnectorBase {
 public:
  // Get completions carry one hit flag per key (ConnectorTraits).
  static constexpr bool kPerKeyGetResults = true;

  enum class Op : std::uint8_t { kGet, kSet, kExists, kDelete };

  // Tile
  //
  // One worker's slice of a batch. `results` has one flag per key, zero-initialised; run_tile()
  // sets them. `error` (empty) takes the first problem's message: for a get it only explains
  // the misses; for the other ops a non-empty error fails the batch, as a throw does.
  struct Tile {
    Op op = Op::kGet;
    std::span<const std::string> keys;
    std::span<void* const> bufs;        // get, set
    std::span<const std::size_t> lens;  // get, set
    std::size_t chunk_bytes = 0;        // get, set
    std::span<std::uint8_t> results;
    std::string error;
  };

  virtual ~BatchConnectorBase();
  BatchConnectorBase(const BatchConnectorBase&) = delete;
  BatchConnectorBase& operator=(const BatchConnectorBase&) = delete;

  // The native connector API (native_connector.h). Submits throw std::invalid_argument when
  // keys, bufs and lens differ in length, the batch is empty, or a length differs from
  // batch_chunk_num_bytes (naming the index); std::logic_error after close().
  int event_fd() const { return notifier_.fd(); }
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
  // Drains the eventfd, then returns every completion queued, in completion order.
  std::vector<Completion> drain_completions();
  // Idempotent: stops accepting work, interrupts and joins the workers, closes the eventfd and
  // drops queued tiles and completions. When it returns no buffer is touched again.
  void close();

  // {"workers", "queued_tiles", "batches_submitted", "batches_completed", "batches_failed",
  //  "closed", "read_io_depth"} plus, with a read pool, "read_max_bytes_in_flight",
  //  "read_bytes_in_flight", "read_bytes_in_flight_peak" and "read_tiles_held" (times a reader
  //  waited for the budget), plus whatever the derived class adds in status_extra().
  Json report_status() const;

  std::size_t num_workers() const { return num_workers_; }
  // num_workers() plus the read pool's readers: the number of per-worker states to keep.
  std::size_t total_workers() const { return num_workers_ + reads_.io_depth; }
  const ReadPoolOptions& read_pool() const { return reads_; }

 protected:
  // `num_workers` >= 1 and reads.io_depth <= ReadPoolOptions::kMaxIoDepth
  // (std::invalid_argument otherwise); `name` prefixes messages.
  BatchConnectorBase(std::size_t num_workers, std::string name, ReadPoolOptions reads = {});

  // Call at the end of the derived constructor, once run_tile() can run.
  void start_workers();

  // run_tile()
  //
  // Runs `tile` on worker `worker` (0 .. total_workers() - 1; one worker's calls never overlap, so
  // per-worker state such as a connection needs no lock). Throwing a std::exception fails the
  // batch with its message.
  virtual void run_tile(std::size_t worker, Tile& tile) = 0;

  // interrupt_workers()
  //
  // Called by close() before joining: make blocked workers return soon (the resp connector shuts
  // its sockets down). Default: nothing.
  virtual void interrupt_workers() {}

  // release_resources()
  //
  // Called by close() once every worker has stopped: release what the workers used (the resp
  // connector closes its connections), since close() must leave no fd behind. Default: nothing.
  virtual void release_resources() {}

  // status_extra()
  //
  // Fields the derived class adds to report_status().
  virtual Json status_extra() const { return Json::object(); }

  // True once close() has begun; long operations may poll it.
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  const std::string& name() const { return name_; }

 private:
  struct Batch;
  struct QueuedTile {
    std::shared_ptr<Batch> batch;
    std::size_t begin = 0;
    std::size_t end = 0;
  };

  std::uint64_t submit(Op op, const std::vector<std::string>& keys, const std::vector<void*>* bufs,
                       const std::vector<std::size_t>* lens, std::size_t chunk_bytes);
  void worker_loop(std::size_t worker);
  // Whether a reader may start the get tile at the front of read_queue_ now. mu_ held.
  bool read_fits_locked() const;
  static std::uint64_t tile_bytes(const QueuedTile& t);
  void finish_tile(const std::shared_ptr<Batch>& batch, bool failed, std::string error);

  const std::size_t num_workers_;
  const std::string name_;
  const ReadPoolOptions reads_;
  EventNotifier notifier_;

  mutable std::mutex mu_;  // guards the queue, the completions and the counters
  std::condition_variable cv_;
  std::deque<QueuedTile> queue_;
  std::deque<QueuedTile> read_queue_;  // gets, with a read pool
  std::uint64_t read_in_flight_ = 0;   // bytes of the get tiles the readers run now
  std::uint64_t read_in_flight_peak_ = 0;
  std::uint64_t read_tiles_held_ = 0;
  std::deque<Completion> completions_;
  std::uint64_t next_future_id_ = 1;
  std::uint64_t batches_submitted_ = 0;
  std::uint64_t batches_completed_ = 0;
  std::uint64_t batches_failed_ = 0;
  std::atomic<bool> stop_{false};

  std::mutex close_mu_;
  bool closed_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace lmcache::bridge
