// A native connector plugin whose connector is broken: its sets complete ok but store nothing
// under the keys asked (they go to other keys). Loaded with `lmcache-conform --connector-plugin`,
// the runner must fail the adapter properties that load back what was stored, naming them, and
// exit 1. The connector is the out-of-tree example's (conformance/examples/connector/), so the
// two plugins differ in this bug only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lmcache/conformance/connector_plugin.h"
#include "map_connector.h"

namespace {

class ForgetfulSetConnector {
 public:
  static constexpr bool kPerKeyGetResults = true;

  int event_fd() const { return inner_.event_fd(); }
  std::uint64_t submit_batch_get(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) {
    return inner_.submit_batch_get(keys, bufs, lens, chunk);
  }
  // The bug: every key is written as "forgotten/<key>", and the set still completes ok.
  std::uint64_t submit_batch_set(const std::vector<std::string>& keys,
                                 const std::vector<void*>& bufs,
                                 const std::vector<std::size_t>& lens, std::size_t chunk) {
    std::vector<std::string> elsewhere;
    for (const std::string& k : keys) elsewhere.push_back("forgotten/" + k);
    return inner_.submit_batch_set(elsewhere, bufs, lens, chunk);
  }
  std::uint64_t submit_batch_exists(const std::vector<std::string>& keys) {
    return inner_.submit_batch_exists(keys);
  }
  std::uint64_t submit_batch_delete(const std::vector<std::string>& keys) {
    return inner_.submit_batch_delete(keys);
  }
  std::vector<lmcache::connector::Completion> drain_completions() {
    return inner_.drain_completions();
  }
  void close() { inner_.close(); }

 private:
  lmcache::connector::MapConnector inner_;
};

}  // namespace

LMCACHE_CONFORMANCE_CONNECTOR(ForgetfulSetConnector)
