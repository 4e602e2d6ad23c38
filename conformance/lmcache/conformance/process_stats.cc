#include "lmcache/conformance/process_stats.h"

#include <fcntl.h>

#include "lmcache/conformance/internal/waits.h"

namespace lmcache::conformance {

std::string resources_left_over(const ProcessResources& baseline,
                                std::chrono::milliseconds timeout) {
  return resources_problem(
      baseline, wait_for_resources(baseline, timeout,
                                   conformance_internal::scaled(std::chrono::seconds(30))));
}

HalfwayGrowth growth_past_halfway(const ProcessResources& halfway, std::size_t rounds,
                                  const std::function<std::string(std::size_t)>& round,
                                  std::chrono::milliseconds timeout) {
  if (resources_left_over(halfway, timeout).empty()) return {};
  const ProcessResources before_more = ProcessResources::take();
  HalfwayGrowth growth;
  for (std::size_t r = rounds; r < 2 * rounds; ++r) {
    growth.round_error = round(r);
    if (!growth.round_error.empty()) return growth;
  }
  if (!resources_left_over(before_more, timeout).empty()) {
    growth.grew = resources_problem(halfway, ProcessResources::take());
  }
  return growth;
}

bool is_open_fd(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) != -1; }

std::string distinct_open_fds_problem(std::span<const int> fds,
                                      std::span<const char* const> names) {
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (!is_open_fd(fds[i])) {
      return std::string(names[i]) + " " + std::to_string(fds[i]) +
             " is not an open file descriptor";
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (fds[i] == fds[j]) {
        return std::string(names[j]) + " and " + names[i] + " are the same fd " +
               std::to_string(fds[i]);
      }
    }
  }
  return "";
}

}  // namespace lmcache::conformance
