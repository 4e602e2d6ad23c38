#include "lmcache/conformance/rapidcheck_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include "lmcache/conformance/depth.h"

namespace lmcache::conformance {

namespace {

// Thrown out of RapidCheck's shrink loop (which has no stop of its own) when the budget is spent.
struct ShrinkBudgetSpent {
  int tried = 0;
};

// The kit reports through the Verdict, so the listener prints nothing (RapidCheck's progress
// output would only be noise in the child processes' logs); it ends shrinking once the budget
// since the first failing case is spent.
class BudgetListener final : public rc::detail::TestListener {
 public:
  explicit BudgetListener(std::chrono::milliseconds budget) : budget_(budget) {}
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type == rc::detail::CaseResult::Type::Failure) {
      failed_at_ = std::chrono::steady_clock::now();
    }
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {
    ++tried_;
    if (std::chrono::steady_clock::now() - failed_at_ > budget_) throw ShrinkBudgetSpent{tried_};
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  const std::chrono::milliseconds budget_;
  std::chrono::steady_clock::time_point failed_at_;
  int tried_ = 0;
};

// What the failing evaluations said. RapidCheck describes a failure by evaluating its minimal
// case once more; when that evaluation passes (timing), its description is a success text and
// the broken rule would be lost, so the messages of the failing evaluations are kept here.
class FailureRecorder {
 public:
  void Record(const rc::detail::CaseResult& r) {
    std::lock_guard lock(mu_);
    last_failed_ = r.type == rc::detail::CaseResult::Type::Failure;
    if (!last_failed_) return;
    if (first_.empty()) first_ = r.description;
    last_ = r.description;
  }

  // The first failing evaluation's message.
  std::string First() const {
    std::lock_guard lock(mu_);
    return first_;
  }

  // The rule to report for a failure RapidCheck describes as `described`.
  std::string Rule(const std::string& described) const {
    std::lock_guard lock(mu_);
    // RapidCheck's text for a case that passed (rapidcheck/detail/Property.hpp).
    const bool replay_passed =
        !last_failed_ || described.empty() || described == "no exceptions thrown";
    if (!replay_passed) return described;
    const std::string& kept = last_.empty() ? first_ : last_;
    if (kept.empty()) return described;
    std::string rule = kept;
    rule +=
        "\n(the minimal case passed when it was replayed: the failure depends on timing or "
        "on state outside the case";
    if (first_ != kept) rule += "; the first failing case said: " + first_;
    return rule + ")";
  }

 private:
  mutable std::mutex mu_;
  bool last_failed_ = false;
  std::string first_;
  std::string last_;
};

std::uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Verdict check_rc_property(std::string_view id, const RcOptions& options,
                          const rc::detail::Property& property) {
  using namespace rc::detail;
  Configuration defaults;
  int cases = options.max_success;
  if (options.scale_with_depth) {
    try {
      cases = std::max(1, static_cast<int>(std::lround(cases * current_profile().case_factor)));
    } catch (const std::invalid_argument& e) {
      return Verdict::fail(e.what());
    }
  }
  defaults.testParams.maxSuccess = cases;
  defaults.testParams.maxSize = options.max_size;
  defaults.testParams.disableShrinking = !options.shrink;
  defaults.testParams.seed = random_seed();

  Configuration config;
  const char* env = std::getenv("RC_PARAMS");
  try {
    config = configFromString(env != nullptr ? env : "", defaults);
  } catch (const ConfigurationException& e) {
    return Verdict::fail(std::string("invalid RC_PARAMS: ") + e.what());
  }

  TestMetadata metadata;
  metadata.id = std::string(id);
  metadata.description = metadata.id;
  BudgetListener listener(options.shrink_budget);
  // Every evaluation of a case passes through here, the replays of the shrunk case included.
  auto seen = std::make_shared<FailureRecorder>();
  const Property recorded = rc::gen::map(property, [seen](CaseDescription d) {
    seen->Record(d.result);
    return d;
  });
  Verdict verdict;
  verdict.rc_seed = config.testParams.seed;
  std::optional<TestResult> checked;
  try {
    checked.emplace(
        checkProperty(recorded, metadata, config.testParams, listener, config.reproduce));
  } catch (const ShrinkBudgetSpent& spent) {
    verdict.status = Status::kFail;
    verdict.message = seen->First() + "\n(shrinking stopped after " +
                      std::to_string(options.shrink_budget.count()) + " ms and " +
                      std::to_string(spent.tried) +
                      " tried cases: the case above is the first that failed, not a minimal one; "
                      "the seed reproduces it)";
    Configuration replay;
    replay.testParams = config.testParams;
    verdict.rc_params = configToMinimalString(replay);
    return verdict;
  }
  const TestResult& result = *checked;
  if (result.is<SuccessResult>()) return verdict;

  verdict.status = Status::kFail;
  FailureResult failure;
  if (!result.match(failure)) {
    std::ostringstream message;  // gave up, or an error of the testing itself
    printResultMessage(result, message);
    verdict.message = message.str();
    return verdict;
  }
  {
    // What broke first (the line a matrix or a JUnit <failure message> shows), then the
    // minimal counterexample.
    std::ostringstream message;
    message << seen->Rule(failure.description) << "\n"
            << "counterexample (after " << failure.numSuccess << " passing case"
            << (failure.numSuccess == 1 ? "" : "s") << "):";
    for (const auto& [type, value] : failure.counterExample) {
      message << "\n  " << type << ": " << value;
    }
    verdict.message = message.str();
    Configuration replay;
    replay.testParams = config.testParams;
    replay.reproduce[metadata.id] = failure.reproduce;
    verdict.rc_params = configToMinimalString(replay);
  }
  return verdict;
}

void fail_case(std::string message) {
  throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, std::move(message));
}

void require_ok(const ::testing::AssertionResult& result) {
  if (!result) fail_case(result.message());
}

}  // namespace lmcache::conformance
