#include "map_connector.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace vendor {

MapConnector::MapConnector() {
  efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0) throw std::system_error(errno, std::generic_category(), "MapConnector: eventfd");
  try {
    worker_ = std::thread([this] { work(); });
  } catch (...) {
    ::close(efd_);
    throw;
  }
}

MapConnector::~MapConnector() { close(); }

std::uint64_t MapConnector::submit(Op op, const std::vector<std::string>& keys,
                                   const std::vector<void*>* bufs,
                                   const std::vector<std::size_t>* lens, std::size_t chunk) {
  if (keys.empty()) throw std::invalid_argument("MapConnector: empty batch");
  if (bufs != nullptr) {
    if (bufs->size() != keys.size() || lens->size() != keys.size()) {
      throw std::invalid_argument("MapConnector: keys, bufs and lens differ in length");
    }
    for (std::size_t len : *lens) {
      if (len != chunk) throw std::invalid_argument("MapConnector: a len != batch_chunk_num_bytes");
    }
  }
  std::lock_guard lock(mu_);
  if (closed_) throw std::logic_error("MapConnector: submit after close()");
  Batch b{op, next_id_++, keys, bufs ? *bufs : std::vector<void*>{},
          lens ? *lens : std::vector<std::size_t>{}};
  queue_.push_back(std::move(b));
  cv_.notify_one();
  return queue_.back().id;
}

std::uint64_t MapConnector::submit_batch_get(const std::vector<std::string>& keys,
                                             const std::vector<void*>& bufs,
                                             const std::vector<std::size_t>& lens,
                                             std::size_t batch_chunk_num_bytes) {
  return submit(Op::kGet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t MapConnector::submit_batch_set(const std::vector<std::string>& keys,
                                             const std::vector<void*>& bufs,
                                             const std::vector<std::size_t>& lens,
                                             std::size_t batch_chunk_num_bytes) {
  return submit(Op::kSet, keys, &bufs, &lens, batch_chunk_num_bytes);
}

std::uint64_t MapConnector::submit_batch_exists(const std::vector<std::string>& keys) {
  return submit(Op::kExists, keys, nullptr, nullptr, 0);
}

std::uint64_t MapConnector::submit_batch_delete(const std::vector<std::string>& keys) {
  return submit(Op::kDelete, keys, nullptr, nullptr, 0);
}

MapCompletion MapConnector::run(const Batch& b) {
  MapCompletion c;
  c.future_id = b.id;
  for (std::size_t i = 0; i < b.keys.size(); ++i) {
    auto it = store_.find(b.keys[i]);
    switch (b.op) {
      case Op::kGet: {
        const bool hit = it != store_.end() && it->second.size() == b.lens[i];
        if (hit && b.lens[i] > 0) std::memcpy(b.bufs[i], it->second.data(), b.lens[i]);
        c.result_bytes.push_back(hit ? 1 : 0);
        break;
      }
      case Op::kSet: {
        const auto* p = static_cast<const unsigned char*>(b.bufs[i]);
        store_[b.keys[i]].assign(p, p + b.lens[i]);
        break;
      }
      case Op::kExists:
        c.result_bytes.push_back(it != store_.end() ? 1 : 0);
        break;
      case Op::kDelete:
        c.result_bytes.push_back(it != store_.end() ? 1 : 0);
        if (it != store_.end()) store_.erase(it);
        break;
    }
  }
  return c;
}

void MapConnector::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return closed_ || !queue_.empty(); });
    if (closed_) return;
    Batch b = std::move(queue_.front());
    queue_.pop_front();
    // The map is the worker's alone; the buffers stay alive until the completion is drained.
    lock.unlock();
    MapCompletion c = run(b);
    lock.lock();
    if (closed_) return;
    done_.push_back(std::move(c));
    const std::uint64_t one = 1;
    // Under mu_, so close() cannot close the fd in between.
    [[maybe_unused]] ssize_t n = ::write(efd_, &one, sizeof one);
  }
}

std::vector<MapCompletion> MapConnector::drain_completions() {
  std::lock_guard lock(mu_);
  if (!closed_) {
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(efd_, &count, sizeof count);
  }
  return std::exchange(done_, {});
}

void MapConnector::close() {
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

}  // namespace vendor
