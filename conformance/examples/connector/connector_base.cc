#include "connector_base.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace lmcache::connector {

ConnectorBase::ConnectorBase() {
  efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0) throw std::system_error(errno, std::generic_category(), "ConnectorBase: eventfd");
  try {
    worker_ = std::thread([this] { work(); });
  } catch (...) {
    ::close(efd_);
    throw;
  }
}

ConnectorBase::~ConnectorBase() { close(); }

std::uint64_t ConnectorBase::submit(Op op, const std::vector<std::string>& keys,
                                    const std::vector<void*>* bufs,
                                    const std::vector<std::size_t>* lens, std::size_t chunk) {
  if (keys.empty()) throw std::invalid_argument("ConnectorBase: empty batch");
  if (bufs != nullptr) {
    if (bufs->size() != keys.size() || lens->size() != keys.size()) {
      throw std::invalid_argument("ConnectorBase: keys, bufs and lens differ in length");
    }
    for (std::size_t len : *lens) {
      if (len != chunk)
        throw std::invalid_argument("ConnectorBase: a len != batch_chunk_num_bytes");
    }
  }
  std::lock_guard lock(mu_);
  if (closed_) throw std::logic_error("ConnectorBase: submit after close()");
  queue_.push_back(Batch{op, next_id_++, keys, bufs ? *bufs : std::vector<void*>{},
                         lens ? *lens : std::vector<std::size_t>{}});
  cv_.notify_one();
  return queue_.back().id;
}

std::uint64_t ConnectorBase::submit_batch_get(const std::vector<std::string>& keys,
                                              const std::vector<void*>& bufs,
                                              const std::vector<std::size_t>& lens,
                                              std::size_t batch_chunk_num_bytes) {
  return submit(Op::kGet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t ConnectorBase::submit_batch_set(const std::vector<std::string>& keys,
                                              const std::vector<void*>& bufs,
                                              const std::vector<std::size_t>& lens,
                                              std::size_t batch_chunk_num_bytes) {
  return submit(Op::kSet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t ConnectorBase::submit_batch_exists(const std::vector<std::string>& keys) {
  return submit(Op::kExists, keys, nullptr, nullptr, 0);
}

std::uint64_t ConnectorBase::submit_batch_delete(const std::vector<std::string>& keys) {
  return submit(Op::kDelete, keys, nullptr, nullptr, 0);
}

void ConnectorBase::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
    if (closed_) return;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    // run_batch() owns the store; the buffers stay alive until the completion is drained.
    lock.unlock();
    Completion c = run_batch(b);
    lock.lock();
    if (closed_) return;
    done_.push_back(std::move(c));
    const std::uint64_t one = 1;
    // Under mu_, so close() cannot close the fd in between.
    [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof one);
  }
}

std::vector<Completion> ConnectorBase::drain_completions() {
  std::lock_guard lock(mu_);
  if (!closed_) {
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(efd_, &count, sizeof count);
  }
  return std::exchange(done_, {});
}

void ConnectorBase::close() {
  std::lock_guard close_lock(close_mu_);
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    queue_.clear();
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  ::close(efd_);  // efd_ keeps its value: event_fd() reads it without a lock
}

}  // namespace lmcache::connector
