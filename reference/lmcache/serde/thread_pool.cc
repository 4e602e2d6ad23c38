#include "lmcache/serde/thread_pool.h"

#include <stdexcept>
#include <utility>

namespace lmcache {

namespace {

// The pool whose worker the current thread is, if any. A marker rather than a list of thread
// ids: ids are reused once a thread is joined, so a stale list would misidentify new threads.
thread_local const ThreadPool* current_pool = nullptr;

}  // namespace

ThreadPool::ThreadPool(std::size_t num_threads) : num_threads_(num_threads) {
  if (num_threads == 0) {
    throw std::invalid_argument("ThreadPool: num_threads must be >= 1, got 0");
  }
  threads_.reserve(num_threads);
  try {
    for (std::size_t i = 0; i < num_threads; ++i) {
      threads_.emplace_back([this] { worker_loop(); });
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::submit(Job job) {
  if (!job) throw std::invalid_argument("ThreadPool::submit: empty job");
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw std::logic_error("ThreadPool::submit: the pool is shut down");
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void ThreadPool::shutdown() {
  if (is_worker_thread()) {
    throw std::logic_error("ThreadPool::shutdown: called from one of the pool's own workers");
  }
  std::lock_guard join_lock(join_mu_);
  if (joined_) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  joined_ = true;
}

std::size_t ThreadPool::failed_jobs() const {
  std::lock_guard lock(mu_);
  return failed_jobs_;
}

bool ThreadPool::is_worker_thread() const { return current_pool == this; }

void ThreadPool::worker_loop() {
  current_pool = this;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      // Drain before exiting: shutdown() promises that queued jobs still run.
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    try {
      job();
    } catch (...) {
      std::lock_guard lock(mu_);
      ++failed_jobs_;
    }
  }
}

}  // namespace lmcache
