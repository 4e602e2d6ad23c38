// File: connector_base.h
//
// lmcache::connector::ConnectorBase: the machinery an LMCache native connector derives from,
// abridged to what this example needs: one worker thread that runs each queued batch in
// submission order, one eventfd, and the submit-side checks.
//
//   submit_batch_*()     queue the batch and return its future id; throw std::invalid_argument
//                        for an empty batch or lists of different lengths (or a len other
//                        than batch_chunk_num_bytes), std::logic_error after close();
//   drain_completions()  reads the eventfd and returns every completion waiting;
//   close()              idempotent: stops and joins the worker, drops the batches still
//                        queued (never completed), closes the eventfd.
// A derived class answers each batch in run_batch() (on the worker thread) and calls close() in
// its own destructor, before its members go.
//
// Thread safety: every public member may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connector_interface.h"

namespace lmcache::connector {

class ConnectorBase : public IStorageConnector {
 public:
  // Creates the eventfd and starts the worker; throws std::system_error when either fails.
  ConnectorBase();
  // Calls close().
  ~ConnectorBase() override;
  ConnectorBase(const ConnectorBase&) = delete;
  ConnectorBase& operator=(const ConnectorBase&) = delete;

  int event_fd() const override { return efd_; }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override;
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override;
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) override;
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) override;
  std::vector<Completion> drain_completions() override;
  void close() override;

  // One queued batch, as run_batch() gets it.
  enum class Op { kGet, kSet, kExists, kDelete };
  struct Batch {
    Op op;
    std::uint64_t id;
    std::vector<std::string> keys;
    std::vector<void*> bufs;  // get / set: one buffer of lens[i] bytes per key
    std::vector<std::size_t> lens;
  };

 protected:
  // Answers one batch; runs on the worker thread, one batch at a time.
  virtual Completion run_batch(const Batch& batch) = 0;

 private:
  std::uint64_t submit(Op op, const std::vector<std::string>& keys, const std::vector<void*>* bufs,
                       const std::vector<std::size_t>* lens, std::size_t chunk);
  void work();

  int efd_ = -1;   // set once, by the constructor
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::vector<Completion> done_;
  std::uint64_t next_id_ = 1;
  bool closed_ = false;
  std::thread worker_;
  std::mutex close_mu_;  // serialises close() callers
};

}  // namespace lmcache::connector
