// A native connector plugin whose server cannot be reached, as LMCache's own Redis connector
// behaves then: its workers gave up connecting, so it accepts every submit, hands out an id and
// never completes it. The kit must end in the bridge's task deadline and say so once, when the
// plugin is loaded (the runner exits 2 naming the deadline), instead of failing every property
// after its own wait.
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "lmcache/conformance/connector_plugin.h"

namespace {

class UnreachableConnector {
 public:
  static constexpr bool kPerKeyGetResults = true;

  UnreachableConnector() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~UnreachableConnector() { ::close(fd_); }
  UnreachableConnector(const UnreachableConnector&) = delete;
  UnreachableConnector& operator=(const UnreachableConnector&) = delete;

  int event_fd() const { return fd_; }
  std::uint64_t submit_batch_get(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t) {
    return ++next_id_;
  }
  std::uint64_t submit_batch_set(const std::vector<std::string>&, const std::vector<void*>&,
                                 const std::vector<std::size_t>&, std::size_t) {
    return ++next_id_;
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>&) { return ++next_id_; }
  std::uint64_t submit_batch_delete(const std::vector<std::string>&) { return ++next_id_; }
  std::vector<lmcache::bridge::Completion> drain_completions() { return {}; }
  void close() {}

 private:
  int fd_;
  std::atomic<std::uint64_t> next_id_{0};
};

}  // namespace

LMCACHE_CONFORMANCE_CONNECTOR(UnreachableConnector)
