#include "lmcache/conformance/rapidcheck_driver.h"

#include <cstdlib>
#include <random>
#include <sstream>

#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

namespace lmcache::conformance {

namespace {

// The kit reports through the Verdict; RapidCheck's own progress output would only be noise
// in the child processes' logs.
class SilentListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

std::uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Verdict CheckRcProperty(std::string_view id, const RcOptions& options,
                        const rc::detail::Property& property) {
  using namespace rc::detail;
  Configuration defaults;
  defaults.testParams.maxSuccess = options.max_success;
  defaults.testParams.maxSize = options.max_size;
  defaults.testParams.disableShrinking = !options.shrink;
  defaults.testParams.seed = RandomSeed();

  Configuration config;
  const char* env = std::getenv("RC_PARAMS");
  try {
    config = configFromString(env != nullptr ? env : "", defaults);
  } catch (const ConfigurationException& e) {
    return Verdict::Fail(std::string("invalid RC_PARAMS: ") + e.what());
  }

  TestMetadata metadata;
  metadata.id = std::string(id);
  metadata.description = metadata.id;
  SilentListener listener;
  TestResult result =
      checkProperty(property, metadata, config.testParams, listener, config.reproduce);

  Verdict verdict;
  verdict.rc_seed = config.testParams.seed;
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
    message << failure.description << "\n"
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

void FailCase(std::string message) {
  throw rc::detail::CaseResult(rc::detail::CaseResult::Type::Failure, std::move(message));
}

void RequireOk(const ::testing::AssertionResult& result) {
  if (!result) FailCase(result.message());
}

}  // namespace lmcache::conformance
