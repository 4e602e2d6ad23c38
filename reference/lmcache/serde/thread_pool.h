// File: lmcache/serde/thread_pool.h
//
// ThreadPool is a fixed-size pool of worker threads that run queued jobs in FIFO order. It is
// the C++ counterpart of the `ThreadPoolExecutor(max_workers=N)` that AsyncSerdeProcessor
// wraps: jobs are fire-and-forget (results travel through the caller's own CompletionQueue),
// and shutdown() waits for every queued job, as `shutdown(wait=True)` does.
//
// Nothing here is serde-specific; it may move to core once a second component needs it.
//
// Thread safety: every member may be called from any thread, except that shutdown() must not
// be called from one of the pool's own workers (it would have to join itself).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lmcache {

class ThreadPool {
 public:
  using Job = std::function<void()>;

  // ThreadPool()
  //
  // Starts `num_threads` workers at once. Throws std::invalid_argument when num_threads is 0,
  // std::system_error when a thread cannot be started (the ones already started are joined).
  explicit ThreadPool(std::size_t num_threads);

  // Calls shutdown(); queued jobs still run.
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // submit()
  //
  // Queues `job` and returns at once; never blocks on running jobs. Throws std::logic_error
  // once shutdown() has begun and std::invalid_argument for an empty job. A job should not
  // throw: an escaping exception is swallowed and counted in failed_jobs(), so that one bad
  // job cannot take the process down.
  void submit(Job job);

  // shutdown()
  //
  // Stops accepting jobs, lets the workers finish every queued job, and joins them.
  // Idempotent; a concurrent second caller returns once the threads are joined. Throws
  // std::logic_error when called from one of this pool's workers.
  void shutdown();

  // num_threads()
  //
  // The number of workers the pool was created with.
  std::size_t num_threads() const { return num_threads_; }

  // failed_jobs()
  //
  // Jobs that ended with an exception (see submit()).
  std::size_t failed_jobs() const;

  // is_worker_thread()
  //
  // True when the calling thread is one of this pool's workers.
  bool is_worker_thread() const;

 private:
  void worker_loop();

  const std::size_t num_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;         // guarded by mu_
  bool stopping_ = false;        // guarded by mu_
  std::size_t failed_jobs_ = 0;  // guarded by mu_
  std::vector<std::thread> threads_;
  // Serialises shutdown() callers so that none returns before the threads are joined.
  std::mutex join_mu_;
  bool joined_ = false;  // guarded by join_mu_
};

}  // namespace lmcache
