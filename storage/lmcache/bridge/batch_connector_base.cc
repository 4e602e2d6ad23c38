#include "lmcache/bridge/batch_connector_base.h"

#include <algorithm>
#include <stdexcept>

namespace lmcache::bridge {

// The state shared by the tiles of one batch; the last tile to finish publishes it.
struct BatchConnectorBase::Batch {
  std::uint64_t future_id = 0;
  Op op = Op::kGet;
  std::vector<std::string> keys;
  std::vector<void*> bufs;
  std::vector<std::size_t> lens;
  std::size_t chunk_bytes = 0;
  std::vector<std::uint8_t> results;  // each tile writes only its own slice
  std::size_t remaining_tiles = 0;    // guarded by the connector's mu_
  bool failed = false;                // idem
  std::string error;                  // idem: the first message
};

ReadPoolOptions ReadPoolOptions::from_config(ConfigReader& reader) {
  allow_config_keys(reader);
  ReadPoolOptions o;
  o.io_depth = static_cast<std::size_t>(
      reader.get_int("read_io_depth", 0, 0, static_cast<std::int64_t>(kMaxIoDepth)));
  o.max_bytes_in_flight =
      static_cast<std::uint64_t>(reader.get_int("read_max_bytes_in_flight", 0, 0, INT64_MAX));
  return o;
}

void ReadPoolOptions::allow_config_keys(ConfigReader& reader) {
  reader.allow("read_io_depth");
  reader.allow("read_max_bytes_in_flight");
}

BatchConnectorBase::BatchConnectorBase(std::size_t num_workers, std::string name,
                                       ReadPoolOptions reads)
    : num_workers_(num_workers), name_(std::move(name)), reads_(reads) {
  if (num_workers_ == 0) throw std::invalid_argument(name_ + ": num_workers must be >= 1");
  if (reads_.io_depth > ReadPoolOptions::kMaxIoDepth) {
    throw std::invalid_argument(
        name_ + ": read_io_depth must be <= " + std::to_string(ReadPoolOptions::kMaxIoDepth) +
        ", got " + std::to_string(reads_.io_depth));
  }
}

BatchConnectorBase::~BatchConnectorBase() {
  // Derived classes close() in their own destructor (their run_tile() must not run on a
  // half-destroyed object); this one only catches a base used directly.
  close();
}

void BatchConnectorBase::start_workers() {
  workers_.reserve(total_workers());
  try {
    for (std::size_t w = 0; w < total_workers(); ++w) {
      workers_.emplace_back([this, w] { worker_loop(w); });
    }
  } catch (...) {
    close();
    throw;
  }
}

std::uint64_t BatchConnectorBase::submit(Op op, const std::vector<std::string>& keys,
                                         const std::vector<void*>* bufs,
                                         const std::vector<std::size_t>* lens,
                                         std::size_t chunk_bytes) {
  if (keys.empty()) throw std::invalid_argument(name_ + ": empty batch");
  if (bufs != nullptr) {
    if (bufs->size() != keys.size() || lens->size() != keys.size()) {
      throw std::invalid_argument(name_ + ": " + std::to_string(keys.size()) + " keys, " +
                                  std::to_string(bufs->size()) + " bufs and " +
                                  std::to_string(lens->size()) + " lens");
    }
    for (std::size_t i = 0; i < lens->size(); ++i) {
      if ((*lens)[i] != chunk_bytes) {
        throw std::invalid_argument(name_ + ": lens[" + std::to_string(i) + "] is " +
                                    std::to_string((*lens)[i]) + " but batch_chunk_num_bytes is " +
                                    std::to_string(chunk_bytes));
      }
      if ((*bufs)[i] == nullptr && chunk_bytes > 0) {
        throw std::invalid_argument(name_ + ": bufs[" + std::to_string(i) + "] is null");
      }
    }
  }
  auto batch = std::make_shared<Batch>();
  batch->op = op;
  batch->keys = keys;
  if (bufs != nullptr) {
    batch->bufs = *bufs;
    batch->lens = *lens;
  }
  batch->chunk_bytes = chunk_bytes;
  batch->results.assign(keys.size(), 0);
  const std::size_t n = keys.size();
  const bool to_readers = op == Op::kGet && reads_.io_depth > 0;
  const std::size_t tiles = std::min(to_readers ? reads_.io_depth : num_workers_, n);
  const std::size_t per_tile = (n + tiles - 1) / tiles;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (stop_.load(std::memory_order_relaxed)) {
      throw std::logic_error(name_ + ": submit after close()");
    }
    id = next_future_id_++;
    batch->future_id = id;
    ++batches_submitted_;
    std::size_t count = 0;
    for (std::size_t begin = 0; begin < n; begin += per_tile) ++count;
    batch->remaining_tiles = count;
    for (std::size_t begin = 0; begin < n; begin += per_tile) {
      (to_readers ? read_queue_ : queue_)
          .push_back(QueuedTile{batch, begin, std::min(n, begin + per_tile)});
    }
  }
  cv_.notify_all();
  return id;
}

std::uint64_t BatchConnectorBase::submit_batch_get(const std::vector<std::string>& keys,
                                                   const std::vector<void*>& bufs,
                                                   const std::vector<std::size_t>& lens,
                                                   std::size_t batch_chunk_num_bytes) {
  return submit(Op::kGet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t BatchConnectorBase::submit_batch_set(const std::vector<std::string>& keys,
                                                   const std::vector<void*>& bufs,
                                                   const std::vector<std::size_t>& lens,
                                                   std::size_t batch_chunk_num_bytes) {
  return submit(Op::kSet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t BatchConnectorBase::submit_batch_exists(const std::vector<std::string>& keys) {
  return submit(Op::kExists, keys, nullptr, nullptr, 0);
}

std::uint64_t BatchConnectorBase::submit_batch_delete(const std::vector<std::string>& keys) {
  return submit(Op::kDelete, keys, nullptr, nullptr, 0);
}

std::uint64_t BatchConnectorBase::tile_bytes(const QueuedTile& t) {
  return static_cast<std::uint64_t>(t.end - t.begin) * t.batch->chunk_bytes;
}

bool BatchConnectorBase::read_fits_locked() const {
  if (read_queue_.empty()) return false;
  // A tile above the whole budget runs alone rather than never.
  return read_in_flight_ == 0 ||
         read_in_flight_ + tile_bytes(read_queue_.front()) <= reads_.budget();
}

void BatchConnectorBase::worker_loop(std::size_t worker) {
  const bool reader = worker >= num_workers_;
  for (;;) {
    QueuedTile queued;
    std::uint64_t read_bytes = 0;
    {
      std::unique_lock lock(mu_);
      if (reader) {
        bool held = false;
        cv_.wait(lock, [&] {
          if (stop_.load(std::memory_order_relaxed)) return true;
          const bool fits = read_fits_locked();
          if (!fits && !read_queue_.empty() && !held) {
            held = true;
            ++read_tiles_held_;
          }
          return fits;
        });
        if (stop_.load(std::memory_order_relaxed)) return;
        queued = std::move(read_queue_.front());
        read_queue_.pop_front();
        read_bytes = tile_bytes(queued);
        read_in_flight_ += read_bytes;
        read_in_flight_peak_ = std::max(read_in_flight_peak_, read_in_flight_);
      } else {
        cv_.wait(lock, [&] { return stop_.load(std::memory_order_relaxed) || !queue_.empty(); });
        if (stop_.load(std::memory_order_relaxed)) return;
        queued = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    Batch& b = *queued.batch;
    const std::size_t n = queued.end - queued.begin;
    Tile tile;
    tile.op = b.op;
    tile.keys = std::span<const std::string>(b.keys).subspan(queued.begin, n);
    if (!b.bufs.empty()) {
      tile.bufs = std::span<void* const>(b.bufs).subspan(queued.begin, n);
      tile.lens = std::span<const std::size_t>(b.lens).subspan(queued.begin, n);
    }
    tile.chunk_bytes = b.chunk_bytes;
    tile.results = std::span<std::uint8_t>(b.results).subspan(queued.begin, n);
    bool failed = false;
    try {
      run_tile(worker, tile);
      failed = b.op != Op::kGet && !tile.error.empty();
    } catch (const std::exception& e) {
      failed = true;
      tile.error = e.what();
    } catch (...) {
      failed = true;
      tile.error = "unknown error";
    }
    if (reader) {
      {
        std::lock_guard lock(mu_);
        read_in_flight_ -= read_bytes;
      }
      cv_.notify_all();  // the next get tile may fit now
    }
    finish_tile(queued.batch, failed, std::move(tile.error));
  }
}

void BatchConnectorBase::finish_tile(const std::shared_ptr<Batch>& batch, bool failed,
                                     std::string error) {
  {
    std::lock_guard lock(mu_);
    if (failed) batch->failed = true;
    if (batch->error.empty() && !error.empty()) batch->error = name_ + ": " + error;
    if (--batch->remaining_tiles != 0) return;
    if (stop_.load(std::memory_order_relaxed)) return;  // closing: dropped, never completed
    Completion c;
    c.future_id = batch->future_id;
    c.ok = !batch->failed;
    c.result_bytes = batch->results;
    c.error = batch->error;
    completions_.push_back(std::move(c));
    ++batches_completed_;
    if (batch->failed) ++batches_failed_;
  }
  notifier_.notify();
}

std::vector<Completion> BatchConnectorBase::drain_completions() {
  notifier_.consume();  // first: a completion queued after this point notifies again
  std::lock_guard lock(mu_);
  std::vector<Completion> out(std::make_move_iterator(completions_.begin()),
                              std::make_move_iterator(completions_.end()));
  completions_.clear();
  return out;
}

void BatchConnectorBase::close() {
  std::lock_guard close_lock(close_mu_);
  if (closed_) return;
  {
    std::lock_guard lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  interrupt_workers();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  release_resources();
  {
    std::lock_guard lock(mu_);
    queue_.clear();
    read_queue_.clear();
    completions_.clear();
  }
  notifier_.close();
  closed_ = true;
}

Json BatchConnectorBase::report_status() const {
  Json status;
  {
    std::lock_guard lock(mu_);
    status = Json{{"workers", num_workers_},
                  {"queued_tiles", queue_.size() + read_queue_.size()},
                  {"read_io_depth", reads_.io_depth},
                  {"batches_submitted", batches_submitted_},
                  {"batches_completed", batches_completed_},
                  {"batches_failed", batches_failed_},
                  {"closed", stop_.load(std::memory_order_relaxed)}};
    if (reads_.io_depth > 0) {
      status["read_max_bytes_in_flight"] = reads_.budget();
      status["read_bytes_in_flight"] = read_in_flight_;
      status["read_bytes_in_flight_peak"] = read_in_flight_peak_;
      status["read_tiles_held"] = read_tiles_held_;
    }
  }
  Json extra = status_extra();
  if (extra.is_object()) status.update(extra);
  return status;
}

}  // namespace lmcache::bridge
