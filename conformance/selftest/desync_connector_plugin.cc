// A native connector plugin with the connection desync of a real RESP client bug: a GET whose
// requested length differs from the stored value's fails with the connector's own error text
// ("GET: size header mismatch") but leaves the value unread "on the socket", so the connection
// answers the next GET with that stale value: a later GET of another key of that length comes
// back as a hit carrying the first key's bytes. Written in LMCache's namespace over the example's
// ConnectorBase (conformance/examples/connector/), as a vendor's connector would be. Every
// connector of the process shares one store (a server); each has its own connection.
//
// The runner must fail it and name the connector's first error, its operation, keys and sizes,
// in the first line of the Fail (error_notes.h), in the console, the JSON and the JUnit report.
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connector_base.h"
#include "lmcache/conformance/connector_plugin.h"
#include "map_connector.h"

namespace lmcache::connector {

class DesyncConnector final : public ConnectorBase {
 public:
  static constexpr bool kPerKeyGetResults = true;
  ~DesyncConnector() override { close(); }

 private:
  // A GET reply: the stored value, or nullopt for a nil reply.
  using Reply = std::optional<std::vector<unsigned char>>;

  Completion run_batch(const Batch& b) override {
    static std::mutex server_mu;  // the "server": one store for every connector of the process
    static MapConnector::Values server;
    std::lock_guard lock(server_mu);
    if (b.op != Op::kGet) return MapConnector::run_on(server, b);  // as the example's
    Completion c;
    c.future_id = b.id;
    for (std::size_t i = 0; i < b.keys.size(); ++i) {
      // The server's reply joins whatever the connection has not read yet.
      auto it = server.find(b.keys[i]);
      unread_.push_back(it == server.end() ? Reply{} : Reply{it->second});
      const Reply& reply = unread_.front();
      if (!reply) {
        unread_.pop_front();
        c.result_bytes.push_back(0);
      } else if (reply->size() != b.lens[i]) {
        // The bug: the header is read, the value is left on the socket.
        c.ok = false;
        c.error = "GET: size header mismatch";
        c.result_bytes.push_back(0);
      } else {
        if (!reply->empty()) std::memcpy(b.bufs[i], reply->data(), reply->size());
        unread_.pop_front();
        c.result_bytes.push_back(1);
      }
    }
    return c;
  }

  std::deque<Reply> unread_;  // the connection; worker only
};

}  // namespace lmcache::connector

LMCACHE_CONFORMANCE_CONNECTOR(lmcache::connector::DesyncConnector)
