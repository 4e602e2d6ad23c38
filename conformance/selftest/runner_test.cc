// lmcache-conform end to end: the reference and the example plugin pass and both reports are
// written; a broken plugin fails naming the property; a crashing and a hanging implementation
// become Fails of the running property while the run goes on; bad plugins are usage errors. A
// native connector plugin (the out-of-tree example's connector) passes under --connector-plugin,
// the same connector with a bug fails naming the property, and --connector-plugin refuses a
// plugin that registers no connector; a connector that goes out of step after its own error
// fails with that error named first.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string output;
  nlohmann::json json;
  bool json_written = false;
  bool junit_written = false;
  std::string junit;
};

// Runs the runner with `args` plus --json / --junit into a fresh directory.
RunResult run_conform(const std::string& args) {
  static int n = 0;
  fs::path dir = fs::temp_directory_path() /
                 ("lmcache_conform_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::create_directories(dir);
  std::string json = (dir / "report.json").string();
  std::string junit = (dir / "report.xml").string();
  std::string cmd =
      std::string(LMCONF_RUNNER) + " " + args + " --json " + json + " --junit " + junit + " 2>&1";
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t got;
  while ((got = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, got);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (std::ifstream in(json); in) {
    r.json = nlohmann::json::parse(in, nullptr, false);
    r.json_written = !r.json.is_discarded();
  }
  if (std::ifstream in(junit); in) {
    r.junit.assign(std::istreambuf_iterator<char>(in), {});
    r.junit_written = r.junit.find("<testsuites") != std::string::npos;
  }
  fs::remove_all(dir);
  return r;
}

// The result object of `impl`.`property`, or null.
nlohmann::json result(const RunResult& r, const std::string& impl, const std::string& property) {
  for (auto& i : r.json["implementations"]) {
    if (i["name"] != impl) continue;
    for (auto& res : i["properties"]) {
      if (res["property"] == property) return res;
    }
  }
  return nullptr;
}

std::string status_of(const RunResult& r, const std::string& impl, const std::string& property) {
  nlohmann::json res = result(r, impl, property);
  return res.is_null() ? "(missing)" : res["status"].get<std::string>();
}

// The run exited with `code` (0: conformant, 1: Fails) and wrote its JSON report.
::testing::AssertionResult EndedWithReport(const RunResult& r, int code) {
  if (r.exit_code != code) {
    return ::testing::AssertionFailure() << "exit code " << r.exit_code << ", want " << code << "\n"
                                         << r.output;
  }
  if (!r.json_written) return ::testing::AssertionFailure() << "no JSON report\n" << r.output;
  return ::testing::AssertionSuccess();
}

// Each (property, status) of `want` is what the run reported for `impl`.
::testing::AssertionResult StatusesAre(
    const RunResult& r, const std::string& impl,
    const std::vector<std::pair<std::string, std::string>>& want) {
  for (const auto& [property, status] : want) {
    if (status.empty()) continue;
    if (std::string got = status_of(r, impl, property); got != status) {
      return ::testing::AssertionFailure()
             << impl << "." << property << ": " << got << ", want " << status << "\n"
             << r.output;
    }
  }
  return ::testing::AssertionSuccess();
}

// The implementation errors in the JSON report's causes of `impl`.
std::vector<std::string> causes_of(const RunResult& r, const std::string& impl) {
  std::vector<std::string> out;
  for (auto& i : r.json["implementations"]) {
    if (i["name"] != impl || !i.contains("causes")) continue;
    for (auto& c : i["causes"]) out.push_back(c["implementation_error"].get<std::string>());
  }
  return out;
}

// Runs the runner over the connector of `plugin` (--connector-plugin) into `r`, only the
// properties `want` names of its implementation `impl`. Succeeds when the run ended with its
// report and a Fail (exit 1), each property with the status `want` gives it ("": any).
::testing::AssertionResult ConnectorRunFails(
    RunResult& r, const char* plugin, const std::string& impl,
    const std::vector<std::pair<std::string, std::string>>& want) {
  std::string filter;
  for (const auto& [p, status] : want) filter += (filter.empty() ? "" : ":") + impl + "." + p;
  r = run_conform(std::string("--connector-plugin ") + plugin + " --filter '" + filter + "'");
  if (::testing::AssertionResult ended = EndedWithReport(r, 1); !ended) return ended;
  return StatusesAre(r, impl, want);
}

std::size_t count_results(const RunResult& r) {
  std::size_t n = 0;
  for (auto& i : r.json["implementations"]) n += i["properties"].size();
  return n;
}

TEST(Runner, ReferencePassesEveryProperty) {
  RunResult r = run_conform("--reference --quiet");
  ASSERT_TRUE(EndedWithReport(r, 0));
  EXPECT_TRUE(r.junit_written);
  EXPECT_EQ(r.json["summary"]["Fail"], 0) << r.output;
  for (const char* suite :
       {"SerdeConformance", "ProcessorConformance", "AdapterConformance", "WrapperConformance"}) {
    EXPECT_NE(r.output.find(suite), std::string::npos) << "matrix lacks " << suite;
  }
  EXPECT_NE(r.output.find("CONFORMANT"), std::string::npos);
  // One row per reference implementation, the storage adapters --reference starts included.
  std::set<std::string> names;
  for (auto& i : r.json["implementations"]) names.insert(i["name"].get<std::string>());
  for (const char* impl :
       {"fp8_e4m3fn", "fp8_e4m3fn_scalar", "checksum", "aesgcm_256_bind_key",
        "chain_fp8_aesgcm_256", "async_checksum_w2", "registry_chain_fp8_checksum", "mock",
        "serde_l2_adapter_wrapper", "serde_l2_adapter_wrapper_every_step_submitted",
        "bridge_memory", "fs", "fs_crc32_odirect", "registry_aesgcm_128_bind_key_file",
        "registry_chain_fp8_checksum_aesgcm_file", "registry_chain_aesgcm_checksum_file",
        "registry_fp8_e4m3fn_saturating"}) {
    EXPECT_EQ(names.count(impl), 1u) << "no results for " << impl << "\n" << r.output;
  }
}

TEST(Runner, ExamplePluginPassesAndWritesBothReports) {
  RunResult r = run_conform(std::string("--plugin ") + LMCONF_EXAMPLE_PLUGIN);
  ASSERT_TRUE(EndedWithReport(r, 0));
  EXPECT_TRUE(r.junit_written);
  EXPECT_GT(count_results(r), 0u);
  EXPECT_EQ(r.json["summary"]["Fail"], 0) << r.output;
  EXPECT_NE(r.junit.find("<testcase"), std::string::npos);
  EXPECT_NE(r.output.find("Summary:"), std::string::npos);
}

TEST(Runner, BrokenPluginFailsNamingTheProperty) {
  RunResult r =
      run_conform(std::string("--plugin ") + LMCONF_BROKEN_PLUGIN +
                  " --filter 'copy_serde.*:under_estimate.EstimateIsUpperBound:"
                  "missing_notify.OneNotifyPerTask:load_ignores_bitmap.PartialLoadBitmap:"
                  "failed_store_succeeds.AllOrNothingStore:above_soft_error_bound.RoundTrip:"
                  "one_fd_for_both_directions.DistinctEventFds'");
  ASSERT_TRUE(EndedWithReport(r, 1));
  EXPECT_EQ(status_of(r, "under_estimate", "EstimateIsUpperBound"), "Fail");
  EXPECT_EQ(status_of(r, "missing_notify", "OneNotifyPerTask"), "Fail");
  EXPECT_EQ(status_of(r, "load_ignores_bitmap", "PartialLoadBitmap"), "Fail");
  EXPECT_EQ(status_of(r, "failed_store_succeeds", "AllOrNothingStore"), "Fail");
  EXPECT_EQ(status_of(r, "above_soft_error_bound", "RoundTrip"), "QualityWarning");
  EXPECT_EQ(status_of(r, "copy_serde", "RoundTrip"), "Pass");
  EXPECT_NE(r.output.find("FAIL under_estimate (serde) SerdeConformance.EstimateIsUpperBound"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("AdapterConformance.PartialLoadBitmap"), std::string::npos);
  // A failure names its seed and how to replay it.
  nlohmann::json f = result(r, "under_estimate", "EstimateIsUpperBound");
  EXPECT_FALSE(f["rc_seed"].is_null());
  EXPECT_NE(f["rc_params"].get<std::string>().find("reproduce="), std::string::npos);
  EXPECT_NE(f["reproduce"].get<std::string>().find("under_estimate.EstimateIsUpperBound"),
            std::string::npos);
  EXPECT_NE(r.junit.find("<failure"), std::string::npos);
  // Every Fail names the property, the rule, the seed and a minimal counterexample, in all
  // three reports.
  EXPECT_NE(f["rule"].get<std::string>().find("is not an upper bound"), std::string::npos) << f;
  EXPECT_NE(f["counterexample"].get<std::string>().find("SerdeCase"), std::string::npos) << f;
  // A scenario property (no generated input) still names the run's seed.
  nlohmann::json scenario = result(r, "one_fd_for_both_directions", "DistinctEventFds");
  EXPECT_EQ(scenario["status"], "Fail") << scenario;
  EXPECT_FALSE(scenario["rc_seed"].is_null()) << scenario;
  EXPECT_NE(scenario["counterexample"].get<std::string>().find("fixed scenario"), std::string::npos)
      << scenario;
  EXPECT_NE(r.output.find("rule: estimate_serialized_size()"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("      seed: "), std::string::npos) << r.output;
  EXPECT_NE(r.junit.find("property: under_estimate.SerdeConformance.EstimateIsUpperBound"),
            std::string::npos)
      << r.junit;
  EXPECT_NE(r.junit.find("seed: "), std::string::npos) << r.junit;
  const char* depth = std::getenv("LMCACHE_CONFORMANCE_DEPTH");
  EXPECT_EQ(r.json["depth"], depth != nullptr && *depth != '\0' ? depth : "standard");
}

TEST(Runner, QualityWarningAloneIsNotAFailure) {
  RunResult r = run_conform(std::string("--plugin ") + LMCONF_BROKEN_PLUGIN +
                            " --filter 'above_soft_error_bound.RoundTrip'");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(status_of(r, "above_soft_error_bound", "RoundTrip"), "QualityWarning");
}

TEST(Runner, CrashAndHangAreReportedNotFatal) {
  RunResult r =
      run_conform(std::string("--plugin ") + LMCONF_CRASHING_PLUGIN +
                  " --timeout 30 --filter 'copy_serde.DeterministicOutput:copy_serde.RoundTrip:"
                  "crashing_serde.DeterministicOutput:crashing_serde.RoundTrip:"
                  "hanging_processor.DistinctEventFds:hanging_processor.OneShotQueries'");
  ASSERT_TRUE(EndedWithReport(r, 1));
  EXPECT_EQ(count_results(r), 6u) << "the run must go on after a crash";
  EXPECT_EQ(status_of(r, "copy_serde", "DeterministicOutput"), "Pass");
  EXPECT_EQ(status_of(r, "copy_serde", "RoundTrip"), "Pass");
  EXPECT_EQ(status_of(r, "hanging_processor", "DistinctEventFds"), "Pass");
  for (const char* p : {"DeterministicOutput", "RoundTrip"}) {
    nlohmann::json res = result(r, "crashing_serde", p);
    ASSERT_FALSE(res.is_null());
    EXPECT_EQ(res["status"], "Fail");
    EXPECT_NE(res["message"].get<std::string>().find("crash"), std::string::npos) << res["message"];
  }
  nlohmann::json hang = result(r, "hanging_processor", "OneShotQueries");
  ASSERT_FALSE(hang.is_null());
  EXPECT_EQ(hang["status"], "Fail");
  EXPECT_NE(hang["message"].get<std::string>().find("hang (timeout after 30 s)"), std::string::npos)
      << hang["message"];
}

TEST(Runner, UnloadablePluginIsAUsageError) {
  RunResult r = run_conform(std::string("--plugin ") + LMCONF_NOT_A_PLUGIN);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("does not export lmcache_conformance_plugin_v2"), std::string::npos)
      << r.output;
  RunResult none = run_conform("");
  EXPECT_EQ(none.exit_code, 2) << none.output;
  RunResult deep = run_conform("--reference --depth deep");
  EXPECT_EQ(deep.exit_code, 2) << deep.output;
  EXPECT_NE(deep.output.find("'deep'"), std::string::npos) << deep.output;
}

TEST(Runner, ListShowsImplementationsAndProperties) {
  RunResult r = run_conform(std::string("--list --reference --plugin ") + LMCONF_EXAMPLE_PLUGIN);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("serde fp8_e4m3fn"), std::string::npos) << r.output;
  // The wrapper is listed as an adapter too (the adapter suite runs over wrappers).
  EXPECT_NE(r.output.find("adapter serde_l2_adapter_wrapper"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wrapper serde_l2_adapter_wrapper"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("BridgeEquivalence"), std::string::npos);
}

TEST(Runner, ConnectorPluginPasses) {
  RunResult r = run_conform(std::string("--connector-plugin ") + LMCONF_CONNECTOR_PLUGIN);
  ASSERT_TRUE(EndedWithReport(r, 0));
  EXPECT_EQ(r.json["summary"]["Fail"], 0) << r.output;
  // The bridge over the connector, bare and under the fp8 serde wrapper.
  EXPECT_EQ(status_of(r, "MapConnector", "PartialLoadBitmap"), "Pass") << r.output;
  EXPECT_EQ(status_of(r, "MapConnector_fp8", "StatefulModel"), "Pass") << r.output;
  // Its connectors share one store (a server): a second connector from the factory reads what
  // the first stored, at the stored length and at others.
  EXPECT_EQ(status_of(r, "MapConnector", "MatchesReference"), "Pass") << r.output;
  EXPECT_EQ(status_of(r, "MapConnector", "OtherLengthLoadsContained"), "Pass") << r.output;
  // The wrapper suite over the connector (the bridge below the kit's scripted inner double).
  EXPECT_EQ(status_of(r, "MapConnector_fp8_wrapper", "StoreLoadRoundTrip"), "Pass") << r.output;
  EXPECT_EQ(status_of(r, "MapConnector_fp8_wrapper", "CloseFailsInFlightTasks"), "Pass")
      << r.output;
  nlohmann::json f = result(r, "MapConnector", "LookupLocks");
  EXPECT_EQ(f["status"], "Pass") << r.output;
  EXPECT_NE(f["reproduce"].get<std::string>().find("--connector-plugin "), std::string::npos) << f;
  // A plugin written with LMCACHE_CONFORMANCE_CONNECTOR is an ordinary plugin too.
  RunResult listed = run_conform(std::string("--list --plugin ") + LMCONF_CONNECTOR_PLUGIN);
  EXPECT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_NE(listed.output.find("adapter MapConnector_fp8"), std::string::npos) << listed.output;
}

TEST(Runner, BrokenConnectorFailsNamingTheProperty) {
  RunResult r;
  ASSERT_TRUE(ConnectorRunFails(r, LMCONF_BROKEN_CONNECTOR_PLUGIN, "ForgetfulSetConnector",
                                {{"DistinctEventFds", "Pass"},
                                 {"LookupReportsPresence", "Fail"},
                                 {"PartialLoadBitmap", "Fail"}}));
  EXPECT_NE(r.output.find(
                "FAIL ForgetfulSetConnector (adapter) AdapterConformance.LookupReportsPresence"),
            std::string::npos)
      << r.output;
  // Its connector reports no error: no cause is named.
  EXPECT_TRUE(causes_of(r, "ForgetfulSetConnector").empty()) << r.output;
  EXPECT_EQ(r.output.find("first error the implementation reported"), std::string::npos)
      << r.output;
}

TEST(Runner, DesyncedConnectorFailsNamingItsFirstError) {
  // A connector whose connection goes out of step after a GET of another length: its Fails
  // must start with the connector's own first error, with the operation, keys and sizes.
  // OtherLengthLoadsContained: a second connector, with no record of the stored sizes, asks
  // for other lengths.
  RunResult r;
  ASSERT_TRUE(ConnectorRunFails(r, LMCONF_DESYNC_CONNECTOR_PLUGIN, "DesyncConnector",
                                {{"PartialLoadBitmap", "Fail"},
                                 {"OtherLengthLoadsContained", "Fail"},
                                 {"StatefulModel", ""}}));
  const std::string first_line = "first error the implementation reported (1 of ";
  std::size_t fails = 0;
  for (auto& i : r.json["implementations"]) {
    for (auto& p : i["properties"]) {
      if (p["status"] != "Fail") continue;
      ++fails;
      const std::string message = p["message"].get<std::string>();
      EXPECT_EQ(message.rfind(first_line, 0), 0u) << message;
      const std::string line = message.substr(0, message.find('\n'));
      EXPECT_NE(line.find("): GET: size header mismatch (in connector get (future "),
                std::string::npos)
          << line;
      EXPECT_NE(line.find(" B"), std::string::npos) << "no size in: " << line;
      EXPECT_EQ(p["implementation_error"], "GET: size header mismatch") << p.dump();
    }
  }
  EXPECT_GE(fails, 1u);
  EXPECT_EQ(causes_of(r, "DesyncConnector"), std::vector<std::string>{"GET: size header mismatch"})
      << r.output;
  EXPECT_NE(r.output.find("DesyncConnector: \"GET: size header mismatch\" came first in "),
            std::string::npos)
      << r.output;
  EXPECT_LT(r.output.find("Causes"), r.output.find("Failures:")) << r.output;
  ASSERT_TRUE(r.junit_written);
  EXPECT_NE(r.junit.find("GET: size header mismatch"), std::string::npos) << r.junit;
}

TEST(Runner, ConnectorKilledBySigpipeAtCloseFails) {
  // close() with a set in flight writes into a dead connection: the child dies of SIGPIPE, as
  // a C++ host would, and the runner reports it as the property's Fail, naming the signal.
  RunResult r;
  ASSERT_TRUE(ConnectorRunFails(r, LMCONF_SIGPIPE_CONNECTOR_PLUGIN, "QuitOnCloseConnector",
                                {{"CloseWithTasksInFlight", "Fail"}}));
  nlohmann::json res = result(r, "QuitOnCloseConnector", "CloseWithTasksInFlight");
  EXPECT_NE(res["message"].get<std::string>().find("SIGPIPE"), std::string::npos) << res;
}

TEST(Runner, RacyLazyInitFailsConcurrentFirstUse) {
  // Connectors whose process-wide pool is opened by a racy check-then-act on first use: the
  // property's child uses them first (no load-time store there), from several threads at once,
  // and its Fail names the connector's own error first. A property with one adapter at a time
  // passes: the bug needs first uses at once.
  RunResult r;
  ASSERT_TRUE(ConnectorRunFails(r, LMCONF_LAZY_INIT_CONNECTOR_PLUGIN, "LazyPoolConnector",
                                {{"ConcurrentFirstUse", "Fail"}, {"StoreReportsBytes", "Pass"}}));
  nlohmann::json res = result(r, "LazyPoolConnector", "ConcurrentFirstUse");
  EXPECT_EQ(res["implementation_error"], "connection closed") << res.dump();
}

TEST(Runner, ConnectorPluginUsageErrors) {
  // A plugin of other implementations: loaded, but it registers no connector.
  RunResult none = run_conform(std::string("--connector-plugin ") + LMCONF_EXAMPLE_PLUGIN);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("registers no native connector"), std::string::npos) << none.output;
  EXPECT_NE(none.output.find("LMCACHE_CONFORMANCE_CONNECTOR"), std::string::npos) << none.output;
  // Not a plugin at all.
  RunResult not_plugin = run_conform(std::string("--connector-plugin ") + LMCONF_NOT_A_PLUGIN);
  EXPECT_EQ(not_plugin.exit_code, 2) << not_plugin.output;
  EXPECT_NE(not_plugin.output.find("does not export lmcache_conformance_plugin_v2"),
            std::string::npos)
      << not_plugin.output;
  // No such file.
  RunResult missing = run_conform("--connector-plugin /nonexistent/libnothing.so");
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent/libnothing.so"), std::string::npos) << missing.output;
}

TEST(Runner, UnreachableConnectorEndsInTheDeadline) {
  // A connector whose server cannot be reached accepts submits and never completes them: the
  // store made when the plugin is loaded ends in the bridge's task deadline, and the runner says
  // so once, as a usage error, instead of running every property into the same deadline.
  RunResult r = run_conform(std::string("--connector-plugin ") +
                            LMCONF_UNREACHABLE_CONNECTOR_PLUGIN + " --depth quick");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("LMCACHE_CONFORMANCE_CONNECTOR(UnreachableConnector): the connector "
                          "cannot store, so no property can run"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the implementation reported: no completion within the task deadline"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(in connector store of 1 key ["), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" 64 B]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is its server reachable?"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("AdapterConformance"), std::string::npos) << r.output;
}

}  // namespace
