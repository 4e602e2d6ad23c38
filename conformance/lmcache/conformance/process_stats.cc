#include "lmcache/conformance/process_stats.h"

#include <fcntl.h>

#include <utility>

#include "lmcache/conformance/internal/waits.h"

namespace lmcache::conformance {

std::string resources_left_over(const ProcessResources& baseline,
                                std::chrono::milliseconds timeout) {
  return resources_problem(
      baseline, wait_for_resources(baseline, timeout,
                                   conformance_internal::scaled(std::chrono::seconds(30))));
}

std::string growth_past_halfway(const ProcessResources& halfway,
                                const std::function<std::string()>& more_rounds,
                                std::chrono::milliseconds timeout, std::string* round_error) {
  if (resources_left_over(halfway, timeout).empty()) return "";
  const ProcessResources before_more = ProcessResources::take();
  if (std::string e = more_rounds(); !e.empty()) {
    *round_error = std::move(e);
    return "";
  }
  if (resources_left_over(before_more, timeout).empty()) return "";
  return resources_problem(halfway, ProcessResources::take());
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
