#include "lmcache/conformance/process_stats.h"

#include <dirent.h>
#include <fcntl.h>

#include <thread>

namespace lmcache::conformance {

namespace {

// Entries of a /proc directory, "." and ".." excluded; `minus_own_fd` drops the descriptor
// opendir() itself holds while listing /proc/self/fd.
std::size_t count_entries(const char* path, bool minus_own_fd) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return 0;
  std::size_t n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    ++n;
  }
  closedir(dir);
  return minus_own_fd && n > 0 ? n - 1 : n;
}

}  // namespace

std::size_t count_open_fds() { return count_entries("/proc/self/fd", true); }

std::size_t count_threads() { return count_entries("/proc/self/task", false); }

ResourceSnapshot ResourceSnapshot::Take() { return {count_open_fds(), count_threads()}; }

std::string wait_for_resources(const ResourceSnapshot& baseline,
                               std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  ResourceSnapshot now = ResourceSnapshot::Take();
  while ((now.fds > baseline.fds || now.threads > baseline.threads) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    now = ResourceSnapshot::Take();
  }
  if (now.fds <= baseline.fds && now.threads <= baseline.threads) return {};
  auto extra = [](std::size_t a, std::size_t b) { return a > b ? a - b : 0; };
  return std::to_string(extra(now.fds, baseline.fds)) + " fd(s) and " +
         std::to_string(extra(now.threads, baseline.threads)) +
         " thread(s) more than before creation";
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
