#include "map_connector.h"

#include <cstddef>
#include <cstring>

namespace lmcache::connector {

MapConnector::Store& MapConnector::store() {
  static Store s;
  return s;
}

Completion MapConnector::run_batch(const Batch& b) {
  Store& server = store();
  std::lock_guard lock(server.mu);
  return run_on(server.values, b);
}

Completion MapConnector::run_on(Values& values, const Batch& b) {
  Completion c;
  c.future_id = b.id;
  for (std::size_t i = 0; i < b.keys.size(); ++i) {
    auto it = values.find(b.keys[i]);
    switch (b.op) {
      case Op::kGet: {
        const bool hit = it != values.end() && it->second.size() == b.lens[i];
        if (hit && b.lens[i] > 0) std::memcpy(b.bufs[i], it->second.data(), b.lens[i]);
        c.result_bytes.push_back(hit ? 1 : 0);
        break;
      }
      case Op::kSet: {
        const auto* p = static_cast<const unsigned char*>(b.bufs[i]);
        values[b.keys[i]].assign(p, p + b.lens[i]);
        break;
      }
      case Op::kExists:
        c.result_bytes.push_back(it != values.end() ? 1 : 0);
        break;
      case Op::kDelete:
        c.result_bytes.push_back(it != values.end() ? 1 : 0);
        if (it != values.end()) values.erase(it);
        break;
    }
  }
  return c;
}

}  // namespace lmcache::connector
