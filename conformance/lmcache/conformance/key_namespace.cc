#include "lmcache/conformance/key_namespace.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>

namespace lmcache::conformance {

std::string fresh_key_namespace(const std::string& user) {
  static const std::uint32_t run = std::random_device{}();
  static std::atomic<std::uint64_t> counter{0};
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "conform-%08x-%d-%llu", run, static_cast<int>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return user.empty() ? std::string(suffix) : user + "-" + suffix;
}

}  // namespace lmcache::conformance
