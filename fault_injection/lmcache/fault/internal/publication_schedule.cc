#include "lmcache/fault/internal/publication_schedule.h"

#include <algorithm>

namespace lmcache::fault_internal {

PublicationSchedule::Clock::time_point PublicationSchedule::next_deadline() const {
  auto next = Clock::time_point::max();
  if (!due_.empty()) next = due_.begin()->first;
  for (const auto& held : held_) {
    for (const Held& h : held) next = std::min(next, h.until);
  }
  return next;
}

void PublicationSchedule::clear() {
  due_.clear();
  for (auto& held : held_) held.clear();
}

}  // namespace lmcache::fault_internal
