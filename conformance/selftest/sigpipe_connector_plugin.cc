// A native connector plugin that says goodbye into a dead connection: its close() shuts its
// (socketpair) connection down and, when a set is still being sent, writes a last "QUIT" into
// it with write() rather than send(..., MSG_NOSIGNAL). In a C++ host, where SIGPIPE keeps its
// default action, that kills the process; Python hosts ignore SIGPIPE, which is how such a bug
// ships. The runner must report the crash, naming the signal, as a Fail of the property that
// closed with work in flight (AdapterConformance.CloseWithTasksInFlight).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "connector_base.h"
#include "lmcache/conformance/connector_plugin.h"
#include "map_connector.h"

namespace lmcache::connector {

class QuitOnCloseConnector final : public ConnectorBase {
 public:
  static constexpr bool kPerKeyGetResults = true;

  QuitOnCloseConnector() {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_) != 0) {
      throw std::system_error(errno, std::generic_category(), "QuitOnCloseConnector: socketpair");
    }
  }
  ~QuitOnCloseConnector() override {
    close();
    ::close(fds_[0]);
  }

  // A set counts as in flight from its submit (not from when a worker picks it up): under load
  // close() can come while the set is still queued, and the goodbye must be written then too.
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens,
                                 std::size_t batch_chunk_num_bytes) override {
    ++sets_in_flight_;
    try {
      return ConnectorBase::submit_batch_set(keys, bufs, lens, batch_chunk_num_bytes);
    } catch (...) {
      --sets_in_flight_;
      throw;
    }
  }

  void close() override {
    if (sets_in_flight_.load() > 0 && fds_[1] >= 0) {
      // The "server" side goes first, then the goodbye: write() into a closed peer.
      ::close(fds_[1]);
      fds_[1] = -1;
      [[maybe_unused]] ssize_t n = ::write(fds_[0], "QUIT\r\n", 6);
    }
    ConnectorBase::close();
    if (fds_[1] >= 0) {
      ::close(fds_[1]);
      fds_[1] = -1;
    }
  }

 private:
  Completion run_batch(const Batch& b) override {
    if (b.op == Op::kSet) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // "sending"
    }
    Completion c;
    {
      std::lock_guard lock(mu_);
      c = MapConnector::run_on(store_, b);
    }
    if (b.op == Op::kSet) --sets_in_flight_;
    return c;
  }

  int fds_[2] = {-1, -1};  // [0] the client's end, [1] the "server"'s
  std::atomic<int> sets_in_flight_{0};
  std::mutex mu_;  // guards store_
  MapConnector::Values store_;
};

}  // namespace lmcache::connector

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::connector::QuitOnCloseConnector)
