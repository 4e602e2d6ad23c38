#include "lmcache/core/host_buffer_pool.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace lmcache {
namespace {

constexpr std::size_t kPage = 4096;

std::size_t ReadPoolBytesFromEnv() {
  const char* v = std::getenv("LMCACHE_HOST_POOL_BYTES");
  if (v == nullptr || *v == '\0') return HostBufferPool::kDefaultProcessPoolBytes;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || v[0] == '-') {
    throw std::invalid_argument(std::string("LMCACHE_HOST_POOL_BYTES must be a byte count, got '") +
                                v + "'");
  }
  return static_cast<std::size_t>(n);
}

}  // namespace

struct HostBufferPool::State {
  struct FreeBuffer {
    std::size_t bytes;
    std::byte* data;
  };

  explicit State(std::size_t cap) : max_cached(cap) {}
  ~State() {
    for (const FreeBuffer& b : lru) std::free(b.data);
  }

  // Takes a free buffer of exactly `bytes`, or returns nullptr.
  std::byte* take(std::size_t bytes) {
    std::lock_guard lock(mu);
    auto it = by_size.find(bytes);
    if (it == by_size.end() || it->second.empty()) {
      ++misses;
      return nullptr;
    }
    auto node = it->second.back();  // the most recently freed: likeliest still in cache
    it->second.pop_back();
    std::byte* data = node->data;
    lru.erase(node);
    cached -= bytes;
    ++hits;
    return data;
  }

  // Keeps `data` for reuse, dropping the oldest free buffers to stay within the bound. Runs in
  // a shared_ptr deleter, so it never throws: if the bookkeeping cannot grow, `data` is freed.
  void give(std::byte* data, std::size_t bytes) noexcept {
    // Evicted buffers are chained through their own first bytes (every buffer holds at least a
    // page) and freed after the lock is released: munmap can be slow, and a list needs no
    // allocation here.
    std::byte* evicted = nullptr;
    {
      std::lock_guard lock(mu);
      if (bytes > max_cached) {
        Chain(evicted, data);
      } else {
        while (cached + bytes > max_cached) {
          const FreeBuffer oldest = lru.back();
          auto same = by_size.find(oldest.bytes);
          same->second.pop_front();  // per size, free buffers are in release order
          if (same->second.empty()) by_size.erase(same);
          lru.pop_back();
          cached -= oldest.bytes;
          ++evictions;
          Chain(evicted, oldest.data);
        }
        try {
          lru.push_front({bytes, data});
          try {
            by_size[bytes].push_back(lru.begin());
            cached += bytes;
          } catch (...) {
            lru.pop_front();
            throw;
          }
        } catch (...) {
          Chain(evicted, data);
        }
      }
    }
    while (evicted != nullptr) {
      std::byte* next = nullptr;
      std::memcpy(&next, evicted, sizeof next);
      std::free(evicted);
      evicted = next;
    }
  }

  static void Chain(std::byte*& head, std::byte* buffer) noexcept {
    std::memcpy(buffer, &head, sizeof head);
    head = buffer;
  }

  void trim_cache() {
    std::list<FreeBuffer> all;
    {
      std::lock_guard lock(mu);
      all.swap(lru);
      by_size.clear();
      cached = 0;
    }
    for (const FreeBuffer& b : all) std::free(b.data);
  }

  const std::size_t max_cached;
  mutable std::mutex mu;
  std::list<FreeBuffer> lru;  // front: most recently freed
  std::unordered_map<std::size_t, std::deque<std::list<FreeBuffer>::iterator>> by_size;
  std::size_t cached = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t evictions = 0;
};

HostBufferPool::HostBufferPool(std::size_t max_cached_bytes)
    : state_(std::make_shared<State>(max_cached_bytes)) {}

HostBufferPool::~HostBufferPool() { trim(); }

std::size_t HostBufferPool::rounded_size(std::size_t bytes) {
  if (bytes > SIZE_MAX - kPage) throw std::bad_alloc();
  std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
  return rounded == 0 ? kPage : rounded;
}

std::shared_ptr<std::byte> HostBufferPool::acquire(std::size_t bytes, BufferFill fill) {
  const std::size_t rounded = rounded_size(bytes);
  std::byte* data = state_->take(rounded);
  if (data == nullptr) {
    data = static_cast<std::byte*>(std::aligned_alloc(kPage, rounded));
    if (data == nullptr) throw std::bad_alloc();
  }
  if (fill == BufferFill::kZeroed) std::memset(data, 0, rounded);
  // Should the control block fail to allocate, shared_ptr hands `data` to the deleter.
  return std::shared_ptr<std::byte>(
      data, [state = state_, rounded](std::byte* p) { state->give(p, rounded); });
}

void HostBufferPool::trim() { state_->trim_cache(); }

HostBufferPool::Stats HostBufferPool::stats() const {
  std::lock_guard lock(state_->mu);
  return Stats{state_->hits, state_->misses, state_->evictions, state_->cached, state_->lru.size()};
}

std::size_t HostBufferPool::max_cached_bytes() const { return state_->max_cached; }

HostBufferPool& HostBufferPool::process_default() {
  // Leaked on purpose: buffers may be released during static destruction.
  static HostBufferPool* pool = new HostBufferPool(ReadPoolBytesFromEnv());
  return *pool;
}

}  // namespace lmcache
