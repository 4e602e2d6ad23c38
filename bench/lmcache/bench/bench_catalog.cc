#include "lmcache/bench/bench_catalog.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace lmcache::bench {
namespace {

struct Catalog {
  std::mutex mu;
  std::unordered_map<std::string, BenchLabels> by_name;
};

Catalog& catalog() {
  static Catalog* c = new Catalog();  // never destroyed: benchmarks outlive main's locals
  return *c;
}

std::string count_or_none(std::uint64_t v) {
  return v == 0 ? std::string(kNotApplicable) : std::to_string(v);
}

bool applies(const std::string& v) { return !v.empty() && v != kNotApplicable; }

}  // namespace

std::map<std::string, std::string> BenchLabels::as_map() const {
  return {{"suite", suite},
          {"op", op},
          {"impl", impl},
          {"serde", serde},
          {"dtype", dtype},
          {"format", format},
          {"device", device},
          {"size_bytes", count_or_none(size_bytes)},
          {"threads", count_or_none(threads)},
          {"batch", count_or_none(batch)}};
}

const std::vector<std::string>& bench_label_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [k, v] : BenchLabels{}.as_map()) out.push_back(k);
    return out;
  }();
  return names;
}

std::string benchmark_name(const BenchLabels& l) {
  std::string name = l.suite + "/" + l.op + "/" + l.impl;
  for (const std::string* part : {&l.serde, &l.dtype, &l.format, &l.device}) {
    if (applies(*part)) name += "/" + *part;
  }
  if (l.size_bytes != 0) name += "/size:" + std::to_string(l.size_bytes);
  if (l.threads != 0) name += "/threads:" + std::to_string(l.threads);
  if (l.batch != 0) name += "/batch:" + std::to_string(l.batch);
  return name;
}

std::string base_benchmark_name(std::string_view name) {
  // Google Benchmark appends its own components after the registered name; none of ours
  // starts with these prefixes.
  static constexpr std::string_view kSuffixes[] = {
      "/real_time", "/manual_time", "/repeats:", "/iterations:", "/min_time:", "/min_warmup_time:"};
  std::size_t cut = name.size();
  for (std::string_view s : kSuffixes) {
    const std::size_t at = name.find(s);
    if (at != std::string_view::npos && at < cut) cut = at;
  }
  return std::string(name.substr(0, cut));
}

benchmark::internal::Benchmark* register_labeled(const BenchLabels& labels,
                                                 std::function<void(benchmark::State&)> fn) {
  const std::string name = benchmark_name(labels);
  {
    Catalog& c = catalog();
    std::lock_guard lock(c.mu);
    if (!c.by_name.emplace(name, labels).second) {
      throw std::logic_error("benchmark registered twice: " + name);
    }
  }
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [fn = std::move(fn)](benchmark::State& st) { fn(st); });
}

std::optional<BenchLabels> find_labels(std::string_view name) {
  Catalog& c = catalog();
  std::lock_guard lock(c.mu);
  auto it = c.by_name.find(base_benchmark_name(name));
  if (it == c.by_name.end()) return std::nullopt;
  return it->second;
}

std::size_t catalog_size() {
  Catalog& c = catalog();
  std::lock_guard lock(c.mu);
  return c.by_name.size();
}

}  // namespace lmcache::bench
