#include "lmcache/core/process_resources.h"

#include <dirent.h>

#include <cstring>
#include <string>
#include <thread>

#include "lmcache/core/stall_tolerant_deadline.h"

namespace lmcache {
namespace {

// Entries of a /proc directory, "." and ".." excluded; with `skip_own_fd`, also the descriptor
// opendir() holds while listing (so that /proc/self/fd counts what the caller holds).
std::size_t count_entries(const char* path, bool skip_own_fd) {
  DIR* dir = ::opendir(path);
  if (dir == nullptr) return 0;
  const std::string own = skip_own_fd ? std::to_string(::dirfd(dir)) : std::string();
  std::size_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (skip_own_fd && own == e->d_name) continue;
    ++n;
  }
  ::closedir(dir);
  return n;
}

}  // namespace

std::size_t open_fd_count() { return count_entries("/proc/self/fd", true); }

std::size_t thread_count() { return count_entries("/proc/self/task", false); }

ProcessResources ProcessResources::take() { return {open_fd_count(), thread_count()}; }

ProcessResources wait_for_resources(const ProcessResources& baseline,
                                    std::chrono::milliseconds timeout,
                                    std::chrono::milliseconds max_stalls) {
  StallTolerantDeadline deadline(timeout, StallTolerantDeadline::kDefaultMaxGap, max_stalls);
  ProcessResources now = ProcessResources::take();
  while ((now.fds > baseline.fds || now.threads > baseline.threads) && !deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    now = ProcessResources::take();
  }
  return now;
}

std::string resources_problem(const ProcessResources& baseline, const ProcessResources& now) {
  if (now.fds <= baseline.fds && now.threads <= baseline.threads) return "";
  auto more = [](std::size_t a, std::size_t b) { return a > b ? a - b : 0; };
  return std::to_string(more(now.fds, baseline.fds)) + " fd(s) and " +
         std::to_string(more(now.threads, baseline.threads)) + " thread(s) more than before (fds " +
         std::to_string(baseline.fds) + " -> " + std::to_string(now.fds) + ", threads " +
         std::to_string(baseline.threads) + " -> " + std::to_string(now.threads) + ")";
}

}  // namespace lmcache
