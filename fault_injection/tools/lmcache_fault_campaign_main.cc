// File: fault_injection/tools/lmcache_fault_campaign_main.cc
//
// lmcache-fault-campaign: runs a seeded fault campaign (lmcache/fault/campaign.h) over the
// reference stack and exits non-zero on any violated invariant.
//
//   lmcache-fault-campaign --operations 20000                 # every fault kind, random seed
//   lmcache-fault-campaign --seed 7 --faults corrupt,hang --rate 0.05 --json out.json
//   lmcache-fault-campaign --seconds 600 --faults all         # a long campaign
//   lmcache-fault-campaign --mutant wrong_bytes --faults none # must fail (loaded_data_matches)
//   lmcache-fault-campaign --inner '{"type":"resp"}' --storage-faults all   # a private Redis,
//                                                     # killed, paused, ... (storage_campaign.h)
//   lmcache-fault-campaign --inner '{"type":"fs","checksum":"crc32"}' --storage-faults all
//   lmcache-fault-campaign --inner '{"type":"resp"}' --storage-faults all --expect-strikes
//                                                     # real and simulated (--faults all) faults
//   lmcache-fault-campaign --connector-plugin libmy_connector_plugin.so --faults all
//                                                     # a vendor's native connector (one
//                                                     # LMCACHE_CONFORMANCE_CONNECTOR line) as
//                                                     # the inner adapter, through the bridge
//
// Exit codes: 0 no violation, 1 violations, 2 bad command line or configuration (an option out
// of its range -- each range is in --help --, bad JSON, an unknown name, a --json path that is
// not a regular file or nothing in an existing directory), the campaign could not run, or its
// --json summary could not be written; 3 the watchdog found a stuck task or call (no_deadlock).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <new>
#include <random>
#include <string>

#include "cli_support.h"
#include "lmcache/core/regular_file.h"
#include "lmcache/fault/campaign.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/storage_fault/storage_campaign.h"
#include "tools/plugin_loader.h"

namespace {

namespace cli = lmcache::cli;

// The inner adapter type a --connector-plugin registers.
constexpr const char* kConnectorPluginType = "connector-plugin";

// The ranges of the numeric options (also in --help).
constexpr std::uint64_t kMaxOperations = 1'000'000'000;
constexpr double kMaxSeconds = 7 * 86400;
// Each key is encoded once up front and every operation scans its layout class's keys, and key
// indices are hashed as 32 bits: beyond this a campaign spends its time preparing, not testing.
constexpr std::uint64_t kMaxKeys = 65536;
constexpr std::uint64_t kMaxBatch = 1024;
constexpr std::uint64_t kMaxInFlight = 1024;
constexpr std::uint64_t kMaxTaskTimeoutMs = 3'600'000;
// The campaign's objects are about a KiB; 1 MiB holds every temp of the largest waves, and
// 0 would make every L1 allocation fail.
constexpr std::uint64_t kMaxL1Mb = 65536;

// The exit status with the summary written to `path` (if any): a summary that cannot be
// written is a failure of the run (status at least 2), said on stderr.
int write_json(const std::string& path, const lmcache::fault::CampaignSummary& s, int status) {
  if (path.empty()) return status;
  try {
    lmcache::write_output_file(path, s.to_json().dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << "lmcache-fault-campaign: --json: cannot write the summary: " << e.what() << "\n";
    return std::max(status, 2);
  }
  return status;
}

// `text` parsed as the JSON of `option`; std::invalid_argument naming the option otherwise.
lmcache::Json parse_json_option(const char* option, const std::string& text) {
  try {
    return lmcache::Json::parse(text);
  } catch (const lmcache::Json::parse_error& e) {
    throw std::invalid_argument(std::string(option) + " is not valid JSON: " + e.what());
  }
}

void list_everything() {
  std::cout << "fault kinds (--faults):\n";
  for (const auto& k : lmcache::fault::all_fault_kinds()) {
    std::cout << "  " << k.name << " [" << k.layer << ", "
              << lmcache::fault::fault_effect_name(k.effect) << "] " << k.detectability << "\n";
  }
  std::cout << "real storage faults (--storage-faults, with --inner of that type):\n";
  for (auto k : lmcache::fault::all_storage_fault_kinds()) {
    std::cout << "  " << lmcache::fault::storage_fault_name(k) << " ["
              << lmcache::fault::storage_fault_adapter_type(k) << "]\n";
  }
  std::cout << "mutants (--mutant):\n";
  for (const auto& m : lmcache::fault::all_mutants()) {
    std::cout << "  " << m.name << ": " << m.description;
    if (!m.invariant.empty())
      std::cout << " (expect " << m.invariant << ", --faults " << m.faults << ")";
    std::cout << "\n";
  }
}

int run(int argc, char** argv) {
  CLI::App app{"Seeded fault campaign over the LMCache serde L2 stack"};
  lmcache::fault::CampaignOptions o;
  std::uint64_t seed = 0;
  std::string plan_json, inner_json, serde_json, json_path, mutant = "none";
  std::string storage_faults = "none";
  std::uint64_t timeout_ms = static_cast<std::uint64_t>(o.task_timeout.count());
  std::uint64_t l1_mb = o.l1_capacity_bytes >> 20;
  bool list = false;
  app.add_option("--operations", o.operations, "operations to run (0: no limit, needs --seconds)")
      ->check(cli::uint_in(0, kMaxOperations))
      ->capture_default_str();
  app.add_option("--seconds", o.seconds, "stop after this many seconds (0: no limit)")
      ->check(cli::real_in(0, kMaxSeconds))
      ->capture_default_str();
  auto* seed_opt = app.add_option("--seed", seed, "the one seed (default: random, printed)")
                       ->check(cli::uint_in(0, UINT64_MAX));
  app.add_option("--faults", o.faults, "all | none | comma list of fault kinds (see --list)")
      ->capture_default_str();
  app.add_option("--rate", o.rate, "base fault rate")
      ->check(cli::real_in(0, 1))
      ->capture_default_str();
  app.add_option(
      "--plan", plan_json,
      "JSON merged into the plan: {\"adapter\": {...}, \"l1\": {...}, \"serde\": {...}}");
  app.add_option("--inner", inner_json, "inner adapter spec (default: the mock adapter)");
  std::string connector_plugin;
  app.add_option("--connector-plugin", connector_plugin,
                 "a native connector plugin (LMCACHE_CONFORMANCE_CONNECTOR): the inner adapter is "
                 "the bridge over connectors from its factory (instead of --inner; simulated "
                 "faults only)")
      ->check(CLI::ExistingFile);
  app.add_option("--serde", serde_json, "serde config (default: fp8 e4m3fn)");
  app.add_option("--storage-faults", storage_faults,
                 "none | all | comma list of real storage faults for --inner resp or fs (see "
                 "--list); the campaign then starts its own redis-server or directory")
      ->capture_default_str();
  app.add_option("--storage-rate", o.storage_rate,
                 "probability that a wave is struck by a real storage fault")
      ->check(cli::real_in(0, 1))
      ->capture_default_str();
  app.add_option("--keys", o.key_count, "distinct keys")
      ->check(cli::uint_in(8, kMaxKeys))
      ->capture_default_str();
  app.add_option("--max-batch", o.max_batch, "keys per task, at most")
      ->check(cli::uint_in(1, kMaxBatch))
      ->capture_default_str();
  app.add_option("--max-in-flight", o.max_in_flight, "tasks per wave, at most")
      ->check(cli::uint_in(1, kMaxInFlight))
      ->capture_default_str();
  app.add_option("--epoch-ops", o.epoch_ops, "operations per stack lifetime")
      ->check(cli::uint_in(1, kMaxOperations))
      ->capture_default_str();
  app.add_option("--task-timeout-ms", timeout_ms, "watchdog timeout per task")
      ->check(cli::uint_in(1, kMaxTaskTimeoutMs))
      ->capture_default_str();
  app.add_option("--l1-capacity-mb", l1_mb, "L1 budget for the wrapper's temps, MiB")
      ->check(cli::uint_in(1, kMaxL1Mb))
      ->capture_default_str();
  app.add_option("--mutant", mutant, "a deliberately broken component (see --list)")
      ->capture_default_str();
  app.add_flag("--expect-injections", o.expect_injections,
               "fail when an enabled fault kind (simulated or real) was never injected");
  app.add_flag("--expect-strikes", o.expect_strikes,
               "fail when a real storage fault kind never struck (needs --storage-faults; "
               "says nothing about simulated kinds)");
  cli::add_output_file_option(app, "--json", json_path, "write the summary as JSON");
  app.add_flag("--verbose", o.verbose, "print one line per epoch");
  app.add_flag("--list", list, "list fault kinds and mutants, then exit");
  if (std::optional<int> done = cli::parse_command_line(app, argc, argv)) return *done;
  if (list) {
    list_everything();
    return 0;
  }
  if (o.operations == 0 && o.seconds == 0) {
    std::cerr << "lmcache-fault-campaign: --operations 0 (no limit) needs --seconds > 0\n";
    return cli::kExitUsage;
  }
  if (o.expect_strikes && (storage_faults.empty() || storage_faults == "none")) {
    std::cerr << "lmcache-fault-campaign: --expect-strikes needs --storage-faults (real storage "
                 "faults to strike)\n";
    return cli::kExitUsage;
  }
  if (!connector_plugin.empty() && !inner_json.empty()) {
    std::cerr << "lmcache-fault-campaign: --connector-plugin and --inner both name the inner "
                 "adapter: give one\n";
    return cli::kExitUsage;
  }
  if (!connector_plugin.empty() && !storage_faults.empty() && storage_faults != "none") {
    std::cerr << "lmcache-fault-campaign: --storage-faults strike the campaign's own redis-server "
                 "or directory (--inner resp or fs); a --connector-plugin's store is its own\n";
    return cli::kExitUsage;
  }
  try {
    o.seed = seed_opt->count() ? seed : std::random_device{}() | 1;
    o.task_timeout = std::chrono::milliseconds(timeout_ms);
    o.l1_capacity_bytes = static_cast<std::size_t>(l1_mb) << 20;
    auto m = lmcache::fault::parse_mutant(mutant);
    if (!m) throw std::invalid_argument("--mutant: unknown mutant '" + mutant + "' (see --list)");
    o.mutant = *m;
    if (!inner_json.empty()) o.inner = parse_json_option("--inner", inner_json);
    if (!connector_plugin.empty()) {
      // Each adapter under a key namespace of its own: every epoch starts from an empty store,
      // as it does over the in-memory inner adapter.
      if (std::string e = lmcache::conformance::tools::register_connector_plugin_adapter_type(
              connector_plugin, kConnectorPluginType, nullptr);
          !e.empty()) {
        throw std::invalid_argument("--connector-plugin: " + e);
      }
      o.inner = lmcache::Json{{"type", kConnectorPluginType}};
    }
    lmcache::resp::register_resp_adapter_type();
    lmcache::fs::register_fs_adapter_type();
    // A resp or fs inner adapter with no server or directory named gets the campaign's own,
    // which the storage faults need; `storage` keeps it alive until the end.
    const auto kinds =
        lmcache::fault::parse_storage_fault_kinds(storage_faults, o.inner.value("type", ""));
    lmcache::fault::StorageCampaign storage =
        lmcache::fault::make_storage_campaign(o.inner, kinds, o.seed);
    o.inner = storage.inner;
    o.storage_faults = storage.faults;
    if (!serde_json.empty()) o.serde = parse_json_option("--serde", serde_json);
    const auto seed64 = static_cast<std::int64_t>(o.seed);
    o.plan = lmcache::fault::FaultPlan::for_kinds(lmcache::fault::FaultPlan::parse_kinds(o.faults),
                                                  o.rate, seed64);
    if (!plan_json.empty()) o.plan = o.plan.merged(parse_json_option("--plan", plan_json));
    o.on_watchdog = [&json_path](const lmcache::fault::CampaignSummary& s) {
      const int status = write_json(json_path, s, s.exit_code());
      std::cout.flush();
      std::_Exit(status);
    };
    lmcache::fault::CampaignSummary s = lmcache::fault::run_campaign(o, std::cout);
    return write_json(json_path, s, s.exit_code());
  } catch (const std::bad_alloc&) {
    std::cerr << "lmcache-fault-campaign: out of memory while setting up or running the "
                 "campaign\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lmcache-fault-campaign: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  return lmcache::cli::guarded_main("lmcache-fault-campaign", [&] { return run(argc, argv); });
}
