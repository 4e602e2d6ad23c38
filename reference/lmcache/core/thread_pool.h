// File: lmcache/core/thread_pool.h
//
// ThreadPool: the stack's one pool of worker threads, used two ways.
//
//  - Fire-and-forget jobs in FIFO order (submit()): AsyncSerdeProcessor's workers, the C++
//    counterpart of Python's `ThreadPoolExecutor(max_workers=N)`. Results travel through the
//    caller's own CompletionQueue; shutdown() waits for every queued job, as
//    `shutdown(wait=True)` does.
//  - Fork-join over parts (run_parts()): the fp8 kernels' `threads > 1`, through the
//    process-wide compute_pool(). The calling thread works too, and runs every part that no
//    worker has started, so a call never waits for a worker to wake up (tens of µs for an idle
//    vCPU of a virtual machine; longer than a 256 KiB kernel) and never deadlocks, even when
//    every worker is busy, when the caller is one of them, or after shutdown().
//
// Idle workers may spin for a bounded time (ThreadPoolOptions::idle_spin) before they sleep, so
// a job submitted right after the previous one finished starts without a wake-up. The cost is
// CPU time: at most idle_spin per worker after each job, measured in bench/RESULTS.md.
//
// Thread safety: every member may be called from any thread, except that shutdown() must not
// be called from one of the pool's own workers (it would have to join itself).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lmcache {

struct ThreadPoolOptions {
  // How long an idle worker polls for a new job before it sleeps on a condition variable.
  // 0 (the default): it sleeps at once. A worker that is polling picks a job up within
  // ~100 ns, a sleeping one only after the kernel has woken it (1-100 µs).
  std::chrono::nanoseconds idle_spin{0};
  // run_parts()' first solo period after workers held a caller up (see there); it doubles with
  // each consecutive such call, up to 128 times this. 0 turns the back-off off.
  std::chrono::nanoseconds held_up_backoff{std::chrono::milliseconds(1)};
};

class ThreadPool {
 public:
  using Job = std::function<void()>;

  // ThreadPool()
  //
  // Starts `num_threads` workers at once. Throws std::invalid_argument when num_threads is 0 or
  // a duration of `options` is negative, std::system_error when a thread cannot be started (the
  // ones already started are joined).
  explicit ThreadPool(std::size_t num_threads, ThreadPoolOptions options = {});

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

  // run_parts()
  //
  // Calls part(i) exactly once for every i in [0, parts) and returns when every call has
  // returned. The calling thread and up to min(parts - 1, num_threads()) workers claim parts
  // in index order, each taking the next unclaimed one when it is free; the caller runs every
  // part that no worker has claimed, so the call waits only for parts that are already running.
  // Parts may run concurrently and in any order: they must be independent.
  //
  // Back-off: workers held the caller up when one ran a part on the caller's CPU (the
  // scheduler made them take turns), or when the call took longer (+20 µs) than the caller's
  // own parts say it would have taken alone (a worker was descheduled mid-part): on a machine
  // with no CPU to spare. The pool then runs every part of every run_parts() call on its
  // caller for a while -- options.held_up_backoff (1 ms) or four times that call's length,
  // whichever is longer, doubling with each consecutive such call up to 128 times -- before
  // it offers parts to workers again. So parallelism is used where it pays and costs one
  // probe call per period where it does not. `part`
  // must be callable as part(std::size_t) from any thread; it is not copied, and is not used after
  // run_parts() returns. When parts throw, every part still runs and the first exception
  // caught is rethrown on the calling thread. Throws std::invalid_argument when parts exceeds
  // 2^32 - 1. Usable from a worker of this pool (it then takes part like any caller) and after
  // shutdown() (the caller runs every part).
  template <class Part>
  void run_parts(std::size_t parts, const Part& part) {
    run_parts_erased(
        parts, [](const void* p, std::size_t i) { (*static_cast<const Part*>(p))(i); }, &part);
  }

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
  using Clock = std::chrono::steady_clock;
  using InvokePart = void (*)(const void* part, std::size_t index);
  struct PartsState;

  void run_parts_erased(std::size_t parts, InvokePart invoke, const void* part);
  // After a run_parts() call of `parts` parts that shared some with workers: a worker ran a
  // part on the caller's CPU (`shared_cpu`); the caller worked `working` on `parts_run` parts,
  // then waited `waiting` for the workers. Starts or extends the solo period when the workers
  // held it up, ends the streak when they did not.
  void judge_helpers(bool shared_cpu, std::size_t parts, std::size_t parts_run,
                     Clock::duration working, Clock::duration waiting);
  // Queues `count` copies of `job` under one lock and wakes as many sleeping workers as the
  // spinning ones cannot cover. Returns false, queueing nothing, once shutdown() has begun.
  bool enqueue(Job job, std::size_t count);
  // Polls for a queued job for up to options_.idle_spin; returns without the lock held.
  void spin_for_work() const;
  void worker_loop();

  const std::size_t num_threads_;
  const ThreadPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;         // guarded by mu_
  bool stopping_ = false;        // guarded by mu_
  std::size_t failed_jobs_ = 0;  // guarded by mu_
  std::size_t sleepers_ = 0;     // guarded by mu_: workers waiting on cv_
  std::size_t spinners_ = 0;     // guarded by mu_: workers polling, bound to re-check jobs_
  // Mirrors jobs_.size() and stopping_ for spinning workers, which poll without the lock.
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> stop_polling_{false};
  // run_parts() runs every part on the caller until this time (Clock ticks since its epoch).
  std::atomic<Clock::rep> solo_until_{0};
  std::atomic<unsigned> solo_streak_{0};  // consecutive calls that workers held up
  std::vector<std::thread> threads_;
  // Serialises shutdown() callers so that none returns before the threads are joined.
  std::mutex join_mu_;
  bool joined_ = false;  // guarded by join_mu_
};

// compute_pool()
//
// The process-wide pool for data-parallel work (the fp8 kernels' KernelOptions::threads > 1;
// see ThreadPool::run_parts()): one worker per CPU this process may run on at its first use
// (sched_getaffinity), less one for the calling thread, with a 50 µs idle spin. nullptr when
// the process may run on one CPU only (a pool could not make anything faster there). Created
// at the first call, never destroyed (kernels called from static destructors still work); its
// threads are idle until a call with threads > 1 uses them. In a child made by fork() the
// first call makes a fresh pool (the parent's threads do not exist there). Thread-safe.
ThreadPool* compute_pool();

}  // namespace lmcache
