#include "lmcache/conformance/depth.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace lmcache::conformance {

std::string_view depth_name(Depth depth) {
  switch (depth) {
    case Depth::kQuick:
      return "quick";
    case Depth::kStandard:
      return "standard";
    case Depth::kExhaustive:
      return "exhaustive";
  }
  return "standard";
}

std::optional<Depth> parse_depth(std::string_view text) {
  for (Depth d : {Depth::kQuick, Depth::kStandard, Depth::kExhaustive}) {
    if (depth_name(d) == text) return d;
  }
  return std::nullopt;
}

Depth current_depth() {
  const char* env = std::getenv("LMCACHE_CONFORMANCE_DEPTH");
  if (env == nullptr || *env == '\0') return Depth::kStandard;
  if (std::optional<Depth> d = parse_depth(env)) return *d;
  throw std::invalid_argument(std::string("LMCACHE_CONFORMANCE_DEPTH='") + env +
                              "' is not a depth (quick, standard or exhaustive)");
}

const DepthProfile& depth_profile(Depth depth) {
  // Groups: 2^14, 2^21 and 2^23 elements at most; KV chunks up to 2 MiB, 16 MiB and 72 MiB
  // (past 2^24 elements of every dtype but float32, and 2^24 + float32 elements). Batches: past
  // one bitmap byte at every depth, past 64 keys from standard on.
  static const DepthProfile kQuick{0.35, std::size_t{1} << 14, std::size_t{2} << 20, 16, 100, 25};
  static const DepthProfile kStandard{2.0, std::size_t{1} << 21, std::size_t{16} << 20, 80, 320,
                                      40};
  static const DepthProfile kExhaustive{6.0, std::size_t{1} << 23, std::size_t{72} << 20, 260, 1200,
                                        80};
  switch (depth) {
    case Depth::kQuick:
      return kQuick;
    case Depth::kStandard:
      return kStandard;
    case Depth::kExhaustive:
      return kExhaustive;
  }
  return kStandard;
}

const DepthProfile& current_profile() { return depth_profile(current_depth()); }

}  // namespace lmcache::conformance
