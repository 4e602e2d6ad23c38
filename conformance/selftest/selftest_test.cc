// The mutation suite: every mutant is caught under the property it must be caught by, at the
// run's depth (standard unless LMCACHE_CONFORMANCE_DEPTH says otherwise), on each of the seeds
// of LMCACHE_SELFTEST_SEEDS (default "1,2": two different seeds); every mutant's witness shows
// its bug while its base runs the same scenario clean; and the catalogue (property table,
// mustpass list, README) has a mutant for every property and every bug class.
//
// The kill rate over more seeds: LMCACHE_SELFTEST_SEEDS="1,2,3,4,5,6,7,8,9,10"
//   conformance_selftest --gtest_filter='Selftest/MutantIsCaught.*'
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "knob_adapter.h"
#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/freed_memory.h"
#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/conformance/serde_conformance.h"
#include "lmcache/conformance/version.h"
#include "lmcache/conformance/wrapper_as_adapter.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "mutants.h"

namespace lmcache::conformance::selftest {

void PrintTo(const Mutant& m, std::ostream* os) {
  *os << m.name << " (" << kind_name(m.kind) << ", caught by " << suite_name(m.suite) << "."
      << m.property << ")";
}

namespace {

// The suites run in this process, as they do in lmcache-conform's children: keep what is freed
// (freed_memory.h). Before main(), so that every test finds it set.
[[maybe_unused]] const bool kKeepsFreedMemory = (keep_freed_memory(), true);

constexpr ImplementationKind kKinds[] = {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                                         ImplementationKind::kAdapter,
                                         ImplementationKind::kWrapper};

Verdict run_mutant(const Mutant& m) {
  switch (m.suite) {
    case ImplementationKind::kSerde:
      return run_serde_property(m.property, m.serde);
    case ImplementationKind::kProcessor:
      return run_processor_property(m.property, m.processor);
    case ImplementationKind::kAdapter:
      return run_adapter_property(m.property, m.kind == ImplementationKind::kWrapper
                                                  ? adapter_of_wrapper(m.wrapper)
                                                  : m.adapter);
    case ImplementationKind::kWrapper:
      return run_wrapper_property(m.property, m.wrapper);
  }
  return Verdict::fail("unknown kind");
}

std::vector<std::uint64_t> selftest_seeds() {
  const char* env = std::getenv("LMCACHE_SELFTEST_SEEDS");
  std::vector<std::uint64_t> seeds;
  std::stringstream in(env != nullptr && *env != '\0' ? env : "1,2");
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) seeds.push_back(std::stoull(item));
  }
  return seeds;
}

struct MutantRun {
  Mutant mutant;
  std::uint64_t seed;
};

// The concurrency mutants (class 2) are instantiated apart, as SelftestConcurrency/..., so that
// the TSan build runs them (cmake/concurrency_subset.sh picks cases by that name).
bool is_concurrency(const Mutant& m) { return m.bug_class == BugClass::kConcurrency; }

std::vector<Mutant> mutants_where(bool concurrency) {
  std::vector<Mutant> out;
  for (const Mutant& m : all_mutants()) {
    if (is_concurrency(m) == concurrency) out.push_back(m);
  }
  return out;
}

std::vector<MutantRun> runs_where(bool concurrency) {
  std::vector<MutantRun> runs;
  for (const Mutant& m : mutants_where(concurrency)) {
    for (std::uint64_t seed : selftest_seeds()) runs.push_back({m, seed});
  }
  return runs;
}

// Sets RC_PARAMS to `seed=<seed>` (plus what RC_PARAMS said, minus its seed) for one scope,
// without shrinking unless RC_PARAMS asks for it: the suite checks that each bug is caught under
// its property, not how far RapidCheck shrinks the case (RapidCheck.AFailureCarriesAReplayable-
// Seed covers the replay), and shrinking two cases of 2 and 16 MiB took 68 s of the suite's 216.
class ScopedSeed {
 public:
  explicit ScopedSeed(std::uint64_t seed) {
    const char* old = std::getenv("RC_PARAMS");
    had_ = old != nullptr;
    if (had_) saved_ = old;
    std::string params;
    std::stringstream in(saved_);
    std::string token;
    while (in >> token) {
      if (token.rfind("seed=", 0) != 0) params += token + " ";
    }
    if (params.find("noshrink=") == std::string::npos) params += "noshrink=1 ";
    setenv("RC_PARAMS", (params + "seed=" + std::to_string(seed)).c_str(), 1);
  }
  ~ScopedSeed() {
    if (had_) {
      setenv("RC_PARAMS", saved_.c_str(), 1);
    } else {
      unsetenv("RC_PARAMS");
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

// ---------------------------------------------------------------------------------------------
// Every mutant is caught, under the right property, on every seed.

class MutantIsCaught : public ::testing::TestWithParam<MutantRun> {};

TEST_P(MutantIsCaught, UnderItsProperty) {
  const Mutant& m = GetParam().mutant;
  ScopedSeed seed(GetParam().seed);
  Verdict v = run_mutant(m);
  EXPECT_EQ(v.status, m.expected) << m.name << " (" << m.bug << ") under " << suite_name(m.suite)
                                  << "." << m.property << " with seed " << GetParam().seed
                                  << " ended " << status_name(v.status) << " instead of "
                                  << status_name(m.expected) << ":\n"
                                  << v.message;
  if (m.expected == Status::kFail && v.status == Status::kFail) {
    EXPECT_FALSE(v.message.empty()) << "a failure must say what broke";
    EXPECT_EQ(v.message.find("no exceptions thrown"), std::string::npos)
        << "the broken rule was lost:\n"
        << v.message;
  }
  // Show why, so that a reader of the log can check it is caught for its bug.
  const std::string& why = v.message;
  std::cout << "  [" << (v.status == m.expected ? "caught" : "MISSED") << "] "
            << bug_class_name(m.bug_class) << " " << m.name << " seed " << GetParam().seed << ": "
            << why.substr(0, why.find('\n')) << "\n";
}

std::string run_name(const ::testing::TestParamInfo<MutantRun>& info) {
  return "c" + std::to_string(static_cast<int>(info.param.mutant.bug_class)) + "_" +
         info.param.mutant.name + "_s" + std::to_string(info.param.seed);
}

INSTANTIATE_TEST_SUITE_P(Selftest, MutantIsCaught, ::testing::ValuesIn(runs_where(false)),
                         run_name);
INSTANTIATE_TEST_SUITE_P(SelftestConcurrency, MutantIsCaught, ::testing::ValuesIn(runs_where(true)),
                         run_name);

// ---------------------------------------------------------------------------------------------
// Every mutant's bug is real: its witness scenario shows it, and shows nothing on its base.

class MutantWitness : public ::testing::TestWithParam<Mutant> {};

TEST_P(MutantWitness, ShowsTheBugOnlyOnTheMutant) {
  const Mutant& m = GetParam();
  ASSERT_TRUE(m.witness) << m.name << " has no witness scenario";
  const std::string on_mutant = m.witness(m);
  EXPECT_NE(on_mutant, "") << m.name << " (" << m.bug << "): its witness saw nothing wrong";
  const std::string on_base = m.witness(m.base);
  EXPECT_EQ(on_base, "") << m.name << ": the witness fails on the conformant base too, so it "
                         << "does not show this bug";
  std::cout << "  [witness] " << m.name << ": " << on_mutant << "\n";
}

std::string mutant_name(const ::testing::TestParamInfo<Mutant>& info) {
  return "c" + std::to_string(static_cast<int>(info.param.bug_class)) + "_" + info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Selftest, MutantWitness, ::testing::ValuesIn(mutants_where(false)),
                         mutant_name);
INSTANTIATE_TEST_SUITE_P(SelftestConcurrency, MutantWitness,
                         ::testing::ValuesIn(mutants_where(true)), mutant_name);

// ---------------------------------------------------------------------------------------------
// The catalogue.

TEST(Catalogue, EveryPropertyHasAMutant) {
  std::set<std::pair<ImplementationKind, std::string>> covered;
  for (const Mutant& m : all_mutants()) covered.insert({m.suite, m.property});
  for (auto kind : kKinds) {
    for (const auto& p : properties_of(kind)) {
      EXPECT_TRUE(covered.count({kind, std::string(p.name)}))
          << suite_name(kind) << "." << p.name << " has no self-test mutant";
    }
  }
}

TEST(Catalogue, MutationSuiteCoversEveryClassAndKind) {
  std::map<BugClass, int> classes;
  std::map<ImplementationKind, int> kinds;
  const auto all = all_mutants();
  for (const Mutant& m : all) {
    ++classes[m.bug_class];
    ++kinds[m.kind];
  }
  EXPECT_GE(all.size(), 40u);
  for (int c = 1; c <= 7; ++c) {
    EXPECT_GT(classes[static_cast<BugClass>(c)], 0)
        << "no mutant of class " << bug_class_name(static_cast<BugClass>(c));
  }
  for (auto k : kKinds) EXPECT_GT(kinds[k], 0) << "no mutant of kind " << kind_name(k);
  std::cout << "  " << all.size() << " mutants:";
  for (auto& [c, n] : classes) std::cout << " [" << bug_class_name(c) << ": " << n << "]";
  std::cout << "\n";
}

TEST(Catalogue, MutantsNameExistingPropertiesAndAreUnique) {
  std::set<std::string> names;
  for (const Mutant& m : all_mutants()) {
    EXPECT_TRUE(names.insert(m.name).second) << "duplicate mutant " << m.name;
    EXPECT_TRUE(is_valid_implementation_name(m.name)) << m.name;
    EXPECT_FALSE(m.bug.empty()) << m.name << " does not say what it gets wrong";
    bool found = false;
    for (const auto& p : properties_of(m.suite)) found |= p.name == m.property;
    EXPECT_TRUE(found) << m.name << " names unknown property " << m.property;
    EXPECT_TRUE(m.suite == m.kind ||
                (m.kind == ImplementationKind::kWrapper && m.suite == ImplementationKind::kAdapter))
        << m.name;
  }
}

std::vector<std::string> lines_of(const char* path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

TEST(Catalogue, MustpassListMatchesTheSuites) {
  std::vector<std::string> listed;
  bool versioned = false;
  for (const std::string& line : lines_of(LMCACHE_CONFORMANCE_MUSTPASS_FILE)) {
    if (line.rfind("#", 0) == 0) {
      versioned |= line.find(std::string("version ") + LMCACHE_CONFORMANCE_MUSTPASS_VERSION) !=
                   std::string::npos;
      continue;
    }
    if (!line.empty()) listed.push_back(line);
  }
  EXPECT_TRUE(versioned) << "mustpass.txt must carry version " LMCACHE_CONFORMANCE_MUSTPASS_VERSION;
  std::vector<std::string> expected;
  for (auto kind : kKinds) {
    for (const auto& p : properties_of(kind)) {
      expected.push_back(std::string(p.suite) + "." + std::string(p.name));
    }
  }
  EXPECT_EQ(listed, expected);
}

TEST(Catalogue, ReadmeHasARowForEveryPropertyAndMutant) {
  std::string readme;
  for (const std::string& line : lines_of(LMCACHE_CONFORMANCE_README_FILE)) readme += line + "\n";
  ASSERT_FALSE(readme.empty()) << LMCACHE_CONFORMANCE_README_FILE;
  for (auto kind : kKinds) {
    for (const auto& p : properties_of(kind)) {
      EXPECT_NE(readme.find("| `" + std::string(p.name) + "` |"), std::string::npos)
          << "conformance/README.md has no row for " << suite_name(kind) << "." << p.name;
    }
  }
  for (const Mutant& m : all_mutants()) {
    EXPECT_NE(readme.find("`" + m.name + "`"), std::string::npos)
        << "conformance/README.md does not list mutant " << m.name;
  }
}

// A correct adapter whose pool reaches its bound late (one more fd at the last store before
// the property's confirming rounds, after its halfway count) is not a leak: the counts hold
// still over the rounds that confirm a growth. A leak (thread_per_load) still fails.
TEST(FalsePositives, PoolThatGrowsLateIsNotALeak) {
  const std::size_t rounds =
      std::max<std::size_t>(8, current_profile().resource_tasks / 4);  // as the property runs
  const Verdict late = run_adapter_property("ResourcesBoundedOverManyTasks",
                                            make_knob_adapter({.late_pool_fd_at_store = rounds}));
  EXPECT_EQ(late.status, Status::kPass) << late.message;
  const Verdict leak = run_adapter_property("ResourcesBoundedOverManyTasks",
                                            make_knob_adapter({.thread_per_load = true}));
  EXPECT_EQ(leak.status, Status::kFail) << leak.message;
}

TEST(Catalogue, UnknownPropertyIsAFail) {
  EXPECT_EQ(run_serde_property("NoSuchProperty", copy_serde()).status, Status::kFail);
  EXPECT_EQ(run_adapter_property("NoSuchProperty", decorated_mock_adapter()).status, Status::kFail);
}

}  // namespace
}  // namespace lmcache::conformance::selftest
