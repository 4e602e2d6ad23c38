#include "lmcache/core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace lmcache {

namespace {

// The pool whose worker the current thread is, if any. A marker rather than a list of thread
// ids: ids are reused once a thread is joined, so a stale list would misidentify new threads.
thread_local const ThreadPool* current_pool = nullptr;

// How long run_parts() polls for the parts that workers are still running before it sleeps:
// about one part's time, so the common case never pays a futex wake-up.
constexpr std::chrono::microseconds kJoinSpin{50};

// run_parts()'s back-off when workers held the caller up: how often the solo period doubles
// (128 times the first at most), the calls of that call's length the first period lasts at
// least, and the delay below which a worker did not hold the caller up whatever the parts'
// size (a futex wake-up and a cache miss or two).
constexpr unsigned kMaxSoloDoublings = 7;
constexpr int kSoloCalls = 4;
constexpr std::chrono::microseconds kJoinSlack{20};

// One polling step: tells the CPU (and a hypervisor watching for spin loops) that this thread
// is waiting, and gives the sibling hyper-thread the core.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

// Polls `done()` for up to `budget`, reading the clock every 64 polls (a clock read costs
// ~20-50 ns, a pause ~10-40). Returns done()'s last value.
template <class Done>
bool poll_for(std::chrono::nanoseconds budget, const Done& done) {
  if (done()) return true;
  if (budget.count() <= 0) return false;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + budget;
  for (unsigned i = 1;; ++i) {
    cpu_relax();
    if (done()) return true;
    if ((i & 63U) == 0 && Clock::now() >= deadline) return false;
  }
}

}  // namespace

// The shared bookkeeping of one run_parts() call. Held by shared_ptr: a helper job may be
// dequeued long after the call returned (the caller ran every part itself), and must find the
// claim counter still there to learn that nothing is left.
struct ThreadPool::PartsState {
  PartsState(std::size_t n, InvokePart f, const void* p) : parts(n), invoke(f), part(p) {}

  // Claims and runs parts until none is left; returns how many it ran. A worker notes when it
  // runs a part on the caller's CPU (then the two cannot have run in parallel).
  std::size_t work(bool is_caller) {
    for (std::size_t ran = 0;; ++ran) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= parts) return ran;
      if (!is_caller && ran == 0 && caller_cpu >= 0 && sched_getcpu() == caller_cpu) {
        on_caller_cpu.store(true, std::memory_order_relaxed);
      }
      try {
        invoke(part, i);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
      // Release: the part's writes happen before the caller's acquire load that sees the count.
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == parts) done.notify_all();
    }
  }

  const std::size_t parts;
  const InvokePart invoke;
  const void* const part;  // dereferenced only for a claimed index: alive until all are done
  const int caller_cpu = sched_getcpu();  // -1 when unknown
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint32_t> done{0};  // 32-bit: std::atomic::wait is a plain futex for it
  std::atomic<bool> on_caller_cpu{false};
  std::mutex error_mu;
  std::exception_ptr error;  // guarded by error_mu
};

ThreadPool::ThreadPool(std::size_t num_threads, ThreadPoolOptions options)
    : num_threads_(num_threads), options_(options) {
  if (num_threads == 0) {
    throw std::invalid_argument("ThreadPool: num_threads must be >= 1, got 0");
  }
  if (options.idle_spin.count() < 0 || options.held_up_backoff.count() < 0) {
    throw std::invalid_argument(
        std::string("ThreadPool: ") +
        (options.idle_spin.count() < 0 ? "idle_spin" : "held_up_backoff") + " must be >= 0, got " +
        std::to_string(std::min(options.idle_spin, options.held_up_backoff).count()) + " ns");
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

bool ThreadPool::enqueue(Job job, std::size_t count) {
  std::size_t wake = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    for (std::size_t i = 1; i < count; ++i) jobs_.push_back(job);
    jobs_.push_back(std::move(job));
    queued_.store(jobs_.size(), std::memory_order_release);
    // Every spinning worker re-checks jobs_ under the lock before it sleeps, so it is bound to
    // take one job: wake sleepers only for the jobs the spinners cannot cover.
    if (jobs_.size() > spinners_) wake = std::min(sleepers_, jobs_.size() - spinners_);
  }
  if (wake == 1) {
    cv_.notify_one();
  } else if (wake > 1) {
    cv_.notify_all();
  }
  return true;
}

void ThreadPool::submit(Job job) {
  if (!job) throw std::invalid_argument("ThreadPool::submit: empty job");
  if (!enqueue(std::move(job), 1)) {
    throw std::logic_error("ThreadPool::submit: the pool is shut down");
  }
}

void ThreadPool::run_parts_erased(std::size_t parts, InvokePart invoke, const void* part) {
  if (parts > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("ThreadPool::run_parts: " + std::to_string(parts) +
                                " parts, more than 2^32 - 1");
  }
  if (parts == 0) return;
  if (parts == 1) {
    invoke(part, 0);
    return;
  }
  const Clock::time_point start = Clock::now();
  if (start.time_since_epoch().count() < solo_until_.load(std::memory_order_relaxed)) {
    // Workers held callers up recently: run every part here (see run_parts()).
    std::exception_ptr error;
    for (std::size_t i = 0; i < parts; ++i) {
      try {
        invoke(part, i);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
  auto state = std::make_shared<PartsState>(parts, invoke, part);
  // Helpers that find nothing left return at once; a refused enqueue (shutdown) leaves every
  // part to this thread.
  enqueue([state] { state->work(/*is_caller=*/false); }, std::min(parts - 1, num_threads_));
  const std::size_t mine = state->work(/*is_caller=*/true);
  // Every part is claimed now; wait for the ones workers are still running.
  const auto n = static_cast<std::uint32_t>(parts);
  auto finished = [&] { return state->done.load(std::memory_order_acquire) == n; };
  const Clock::time_point claimed = Clock::now();
  if (!poll_for(kJoinSpin, finished)) {
    for (std::uint32_t d = state->done.load(std::memory_order_acquire); d != n;
         d = state->done.load(std::memory_order_acquire)) {
      state->done.wait(d, std::memory_order_acquire);
    }
  }
  if (mine < parts) {
    judge_helpers(state->on_caller_cpu.load(std::memory_order_relaxed), parts, mine,
                  claimed - start, Clock::now() - claimed);
  }
  if (state->error) std::rethrow_exception(state->error);
}

void ThreadPool::judge_helpers(bool shared_cpu, std::size_t parts, std::size_t parts_run,
                               Clock::duration working, Clock::duration waiting) {
  // A worker on the caller's CPU only took turns with it. Otherwise the caller's own parts tell
  // how long the whole call would have taken alone; a call that took longer (a worker was
  // descheduled mid-part, with no CPU to spare) would have been faster without workers.
  bool held_up = shared_cpu;
  if (!held_up && parts_run > 0) {
    const Clock::duration alone =
        working / static_cast<Clock::rep>(parts_run) * static_cast<Clock::rep>(parts);
    held_up = working + waiting > alone + kJoinSlack;
  }
  if (!held_up) {
    solo_streak_.store(0, std::memory_order_relaxed);
    return;
  }
  if (options_.held_up_backoff.count() == 0) return;
  // At least a few calls' worth: a period shorter than one call would end before the next.
  const unsigned streak =
      std::min(solo_streak_.fetch_add(1, std::memory_order_relaxed), kMaxSoloDoublings);
  const Clock::duration base =
      std::max(std::chrono::duration_cast<Clock::duration>(options_.held_up_backoff),
               kSoloCalls * (working + waiting));
  const Clock::duration backoff = base * (Clock::rep{1} << streak);
  solo_until_.store((Clock::now() + backoff).time_since_epoch().count(), std::memory_order_relaxed);
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
    stop_polling_.store(true, std::memory_order_relaxed);
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

void ThreadPool::spin_for_work() const {
  poll_for(options_.idle_spin, [this] {
    return queued_.load(std::memory_order_acquire) != 0 ||
           stop_polling_.load(std::memory_order_relaxed);
  });
}

void ThreadPool::worker_loop() {
  current_pool = this;
  std::unique_lock lock(mu_);
  for (;;) {
    if (jobs_.empty() && !stopping_ && options_.idle_spin.count() > 0) {
      ++spinners_;
      lock.unlock();
      spin_for_work();
      lock.lock();
      --spinners_;
    }
    while (jobs_.empty() && !stopping_) {
      ++sleepers_;
      cv_.wait(lock);
      --sleepers_;
    }
    // Drain before exiting: shutdown() promises that queued jobs still run.
    if (jobs_.empty()) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    queued_.store(jobs_.size(), std::memory_order_release);
    lock.unlock();
    try {
      job();
    } catch (...) {
      lock.lock();
      ++failed_jobs_;
      lock.unlock();
    }
    job = nullptr;  // release what the job captured before taking the lock again
    lock.lock();
  }
}

// ---------------------------------------------------------------------------------------------
// compute_pool()

namespace {

// A pool and the chain of pools abandoned by fork() (a child's copy of the parent's pool has
// no threads). The chain keeps them reachable, so a leak checker in the child stays quiet.
struct ComputePoolHolder {
  ComputePoolHolder(std::size_t workers, ComputePoolHolder* before)
      : pool(workers, ThreadPoolOptions{std::chrono::microseconds(50)}), abandoned_before(before) {}
  ThreadPool pool;
  ComputePoolHolder* abandoned_before;
};

std::atomic<ComputePoolHolder*> g_compute_pool{nullptr};
std::atomic<bool> g_compute_pool_decided{false};  // true once made, or found useless
ComputePoolHolder* g_abandoned_pools = nullptr;   // guarded by g_compute_lock
// A spin lock rather than a mutex: the fork handler must be able to reset it in the child.
std::atomic_flag g_compute_lock = ATOMIC_FLAG_INIT;
bool g_fork_handler_installed = false;  // guarded by g_compute_lock

void forget_compute_pool_in_child() {
  // The child has one thread, and the parent's pool is a copy without its workers.
  if (ComputePoolHolder* parents = g_compute_pool.load(std::memory_order_relaxed)) {
    g_abandoned_pools = parents;  // its abandoned_before links the older ones
  }
  g_compute_pool.store(nullptr, std::memory_order_relaxed);
  g_compute_pool_decided.store(false, std::memory_order_relaxed);
  g_compute_lock.clear(std::memory_order_relaxed);
}

std::size_t usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<std::size_t>(n);
  }
  return std::max(1U, std::thread::hardware_concurrency());
}

}  // namespace

ThreadPool* compute_pool() {
  if (g_compute_pool_decided.load(std::memory_order_acquire)) {
    ComputePoolHolder* holder = g_compute_pool.load(std::memory_order_acquire);
    return holder == nullptr ? nullptr : &holder->pool;
  }
  while (g_compute_lock.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  if (!g_fork_handler_installed) {
    pthread_atfork(nullptr, nullptr, &forget_compute_pool_in_child);
    g_fork_handler_installed = true;
  }
  if (!g_compute_pool_decided.load(std::memory_order_relaxed)) {
    const std::size_t cpus = usable_cpus();
    if (cpus > 1) {
      try {
        auto* holder = new ComputePoolHolder(cpus - 1, g_abandoned_pools);
        g_compute_pool.store(holder, std::memory_order_release);
      } catch (...) {
        // No threads to be had: callers run their parts themselves.
      }
    }
    g_compute_pool_decided.store(true, std::memory_order_release);
  }
  g_compute_lock.clear(std::memory_order_release);
  ComputePoolHolder* holder = g_compute_pool.load(std::memory_order_acquire);
  return holder == nullptr ? nullptr : &holder->pool;
}

}  // namespace lmcache
