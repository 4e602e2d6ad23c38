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
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "connector_base.h"
#include "lmcache/conformance/connector_plugin.h"

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
    Completion c;
    c.future_id = b.id;
    if (b.op == Op::kSet) {
      ++sets_in_flight_;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // "sending"
    }
    std::lock_guard lock(mu_);
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
    if (b.op == Op::kSet) --sets_in_flight_;
    return c;
  }

  int fds_[2] = {-1, -1};  // [0] the client's end, [1] the "server"'s
  std::atomic<int> sets_in_flight_{0};
  std::mutex mu_;  // guards store_
  std::map<std::string, std::vector<unsigned char>> store_;
};

}  // namespace lmcache::connector

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::connector::QuitOnCloseConnector)
