// lmcache-conform: runs the conformance suites against implementations loaded from plugins
// (--plugin), native connector plugins (--connector-plugin), live adapters (--adapter) and/or
// the reference implementations (--reference), each property in its own child
// process with a timeout, prints a Pass / NotSupported / QualityWarning / Fail matrix, writes
// JSON and JUnit reports, and exits non-zero only when a property failed (1), or a source could
// not be loaded, the command line is wrong (an option out of its range, a --filter that selects
// no property, malformed --rc-params) or a report could not be written (2). See
// conformance/README.md.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "adapter_config_source.h"
#include "child.h"
#include "cli_support.h"
#include "fork_server.h"
#include "lmcache/conformance/depth.h"
#include "lmcache/conformance/plugin_abi.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/conformance/python/python_source.h"
#include "lmcache/core/regular_file.h"
#include "plugin_loader.h"
#include "rc_params.h"
#include "reference_storage.h"
#include "report.h"
#include "spawn.h"

namespace lmcache::conformance::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  bool reference = false;
  std::vector<std::string> plugins;
  std::vector<std::string> connector_plugins;  // --connector-plugin
  std::vector<std::string> adapter_configs;    // --adapter
  std::vector<std::string> python_specs;       // --python
  std::string filter = "*";
  bool list = false;
  std::string json_path;
  std::string junit_path;
  std::string rc_params;
  bool rc_params_given = false;
  double timeout_s = 0;    // 0: by depth (300 s, 1800 s for exhaustive)
  std::uint64_t jobs = 0;  // 0: twice the cores, at most 8
  std::string keep_logs;
  bool quiet = false;
  std::string
      depth;  // resolved in run_main(): --depth, else $LMCACHE_CONFORMANCE_DEPTH, else standard
};

// The source of `--python spec`: a FILE.py part made absolute (the children may run elsewhere).
std::string python_source_of(const std::string& spec) {
  const auto colon = spec.rfind(':');
  std::string module = colon == std::string::npos ? spec : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon);
  if (module.ends_with(".py") || module.find('/') != std::string::npos) {
    module = fs::absolute(module).string();
  }
  return python::kPythonSourcePrefix + module + rest;
}

struct Impl {
  std::string source;
  ImplementationKind kind;
  std::string name;
};

struct Job {
  std::size_t impl_index;
  std::string suite;
  std::string property;
  std::string out_json;
  std::string log;
  pid_t pid = -1;
  Clock::time_point start;
  bool timed_out = false;
  int wait_status = 0;
  double duration_s = 0;
};

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("/proc/self/exe") : p.string();
}

// A gtest-style glob: '*' any run, '?' one character.
bool glob(const char* p, const char* s) {
  if (*p == '\0') return *s == '\0';
  if (*p == '*') return glob(p + 1, s) || (*s != '\0' && glob(p, s + 1));
  if (*s != '\0' && (*p == '?' || *p == *s)) return glob(p + 1, s + 1);
  return false;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// gtest filter semantics: "POS1:POS2-NEG1:NEG2"; a subject is "<impl>.<Property>" or
// "<impl>.<Suite>.<Property>".
bool filter_matches(const std::string& filter, const std::vector<std::string>& subjects) {
  std::string pos = filter, neg;
  if (auto dash = filter.find('-'); dash != std::string::npos) {
    pos = filter.substr(0, dash);
    neg = filter.substr(dash + 1);
  }
  if (pos.empty()) pos = "*";
  auto any = [&](const std::string& patterns) {
    for (const auto& pat : split(patterns, ':')) {
      if (pat.empty()) continue;
      for (const auto& s : subjects) {
        if (glob(pat.c_str(), s.c_str())) return true;
      }
    }
    return false;
  };
  return any(pos) && !(neg.size() && any(neg));
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    out += "  | " + all[i] + "\n";
  }
  return out;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = strsignal(sig);
  return std::string("SIG") + (abbrev ? abbrev : std::to_string(sig)) + " (" + (desc ? desc : "?") +
         ")";
}

// Loads `source` in a child and returns its implementations, or an error.
std::string list_source(const std::string& exe, const std::string& source, const fs::path& dir,
                        std::size_t index, std::vector<Impl>* impls) {
  std::string out = (dir / ("list_" + std::to_string(index) + ".json")).string();
  std::string log = (dir / ("list_" + std::to_string(index) + ".log")).string();
  try {
    check_output_path(out);
    check_output_path(log);
  } catch (const std::invalid_argument& e) {
    return std::string("cannot keep the logs of loading ") + source + ": " + e.what();
  }
  pid_t pid = spawn_child(exe, {"--child", "list", "--source", source, "--out", out}, log, "", "");
  if (pid < 0) return "cannot fork to load " + source;
  int status = 0;
  bool timed_out = false;
  wait_child(pid, 60, &status, &timed_out);
  if (timed_out) return "loading " + source + " hung (no answer after 60 s)";
  if (WIFSIGNALED(status)) {
    return "loading " + source + " crashed with signal " + signal_name(WTERMSIG(status)) + "\n" +
           tail(log, 15);
  }
  if (WEXITSTATUS(status) != 0) {
    std::string why = tail(log, 15);
    return "cannot use " + source + " (exit status " + std::to_string(WEXITSTATUS(status)) +
           "):\n" + why;
  }
  try {
    std::ifstream in(out);
    nlohmann::json j = nlohmann::json::parse(in);
    for (auto& e : j.at("implementations")) {
      impls->push_back(
          {source, parse_kind(e.at("kind").get<std::string>()), e.at("name").get<std::string>()});
    }
  } catch (const std::exception& e) {
    return "unreadable implementation list from " + source + ": " + e.what();
  }
  return {};
}

// The seed of a run's RC_PARAMS ("... seed=N ..."), if any.
std::optional<std::uint64_t> seed_of(const std::string& rc_params) {
  std::istringstream in(rc_params);
  std::string token;
  while (in >> token) {
    if (token.rfind("seed=", 0) == 0) {
      try {
        return std::stoull(token.substr(5));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

PropertyResult collect(const Job& job, const Impl& impl, double timeout_s) {
  PropertyResult r;
  r.suite = job.suite;
  r.property = job.property;
  r.duration_s = job.duration_s;
  r.status = Status::kFail;
  if (job.timed_out) {
    std::ostringstream m;
    m << "hang (timeout after " << timeout_s << " s): the property did not finish and its "
      << "process was killed\n"
      << tail(job.log, 12);
    r.message = m.str();
    return r;
  }
  if (WIFSIGNALED(job.wait_status)) {
    r.message = "crashed with signal " + signal_name(WTERMSIG(job.wait_status)) +
                " inside the implementation\n" + tail(job.log, 12);
    return r;
  }
  nlohmann::json j;
  try {
    std::ifstream in(job.out_json);
    if (!in) throw std::runtime_error("no report");
    j = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    r.message = "crashed: the child exited with status " +
                std::to_string(WEXITSTATUS(job.wait_status)) + " before writing its report\n" +
                tail(job.log, 12);
    return r;
  }
  // The child ran exactly one test: take the first testcase of the first suite.
  const nlohmann::json* test = nullptr;
  if (j.is_object() && j.contains("testsuites") && j["testsuites"].is_array()) {
    for (const auto& suite : j["testsuites"]) {
      if (suite.contains("testsuite") && suite["testsuite"].is_array() &&
          !suite["testsuite"].empty()) {
        test = &suite["testsuite"][0];
        break;
      }
    }
  }
  if (test == nullptr) {
    r.message = "the property did not run (no matching test in the child)";
    return r;
  }
  auto prop = [&](const char* key) -> std::string {
    if (!test->contains(key)) return "";
    const auto& v = (*test)[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::string verdict = prop("verdict");
  r.message = prop("verdict_message");
  r.rc_params = prop("rc_params");
  r.implementation_error = prop("implementation_error");
  if (std::string seed = prop("rc_seed"); !seed.empty()) r.rc_seed = std::stoull(seed);
  std::string failures;
  for (auto& f : test->value("failures", nlohmann::json::array())) {
    failures += f.value("failure", std::string()) + "\n";
  }
  if (auto s = parse_status(verdict)) {
    r.status = *s;
    // A gtest failure outside the verdict (e.g. an exception) still fails the property.
    if (r.status != Status::kFail && !failures.empty()) {
      r.status = Status::kFail;
      r.message = failures;
    }
  } else if (!failures.empty()) {
    r.message = failures;
  } else if (test->value("result", std::string()) == "SKIPPED") {
    r.status = Status::kNotSupported;
  } else {
    r.status = WEXITSTATUS(job.wait_status) == 0 ? Status::kPass : Status::kFail;
  }
  // gtest exits 0 unless a test failed: anything else after a passing verdict is a problem at
  // exit (a sanitizer's leak report, an error in a static destructor).
  if (r.status != Status::kFail && WEXITSTATUS(job.wait_status) != 0) {
    r.status = Status::kFail;
    r.message = "the property finished as " + verdict + " but the child then exited with status " +
                std::to_string(WEXITSTATUS(job.wait_status)) + " (an error at exit?)\n" +
                tail(job.log, 12);
  }
  if (r.status == Status::kFail && r.message.empty()) {
    r.message = "failed (exit status " + std::to_string(WEXITSTATUS(job.wait_status)) + ")\n" +
                tail(job.log, 12);
  }
  (void)impl;
  return r;
}

int run_main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "lmcache-conform: run the lmcache conformance suites against serdes, serde processors, L2 "
      "adapters and serde wrappers loaded from plugins, and report a Pass / NotSupported / "
      "QualityWarning / Fail matrix. Exits 1 when a property fails, 2 when a plugin cannot be "
      "loaded, 0 otherwise."};
  app.add_flag("--reference", o.reference, "Test the reference implementations (no plugin)");
  app.add_option("--plugin", o.plugins,
                 "A plugin shared object exporting " LMCACHE_CONFORMANCE_ENTRY_POINT_V2
                 " (repeatable)")
      ->check(CLI::ExistingFile);
  app.add_option("--connector-plugin", o.connector_plugins,
                 "A plugin built with LMCACHE_CONFORMANCE_CONNECTOR (a vendor's native "
                 "connector): run the adapter suite over the connector bridge, bare and under the "
                 "fp8 serde wrapper, each adapter in a key namespace of its own (repeatable)")
      ->check(CLI::ExistingFile);
  app.add_option(
      "--python", o.python_specs,
      "A Python serde (or serializer/deserializer pair), serde processor or L2 adapter written to "
      "LMCache's Python interfaces: MODULE:FACTORY or FILE.py:FACTORY, where "
      "FACTORY() returns a fresh one (docs/python.md; repeatable)");
  app.add_option("--adapter", o.adapter_configs,
                 "An L2 adapter config (JSON, as given to create_l2_adapter, e.g. "
                 "'{\"type\":\"resp\",\"host\":\"127.0.0.1\",\"port\":6379}'): run the "
                 "adapter suite against live adapters built from it, each in a key namespace of "
                 "its own (repeatable)");
  app.add_option("--filter", o.filter,
                 "gtest-style filter over '<impl>.<Property>' (and '<impl>.<Suite>.<Property>'), "
                 "e.g. 'fp8*:*.RoundTrip-*.Close*'");
  app.add_flag("--list", o.list, "List the implementations and properties, run nothing");
  cli::add_output_file_option(app, "--json", o.json_path, "Write the JSON report");
  cli::add_output_file_option(app, "--junit", o.junit_path, "Write the JUnit XML report");
  auto* rc = app.add_option("--rc-params", o.rc_params,
                            "RapidCheck configuration for every property (RC_PARAMS syntax, e.g. "
                            "'seed=42 max_success=200'; keys seed, max_success, max_size, "
                            "max_discard_ratio, noshrink, verbose_progress, verbose_shrinking, "
                            "reproduce, disable_colors); default: $RC_PARAMS plus a random seed");
  app.add_option("--timeout", o.timeout_s,
                 "Seconds a property may run before it counts as a hang (default 300; 1800 at "
                 "--depth exhaustive)")
      ->check(cli::real_in(0.001, 86400));
  app.add_option("--jobs,-j", o.jobs,
                 "Properties run in parallel (default: twice the cores, at most 8)")
      ->check(cli::uint_in(1, 256));
  app.add_option("--keep-logs", o.keep_logs,
                 "Keep every child's log and gtest report in this directory (created if need "
                 "be)");
  app.add_flag("--quiet,-q", o.quiet, "Only print the matrix");
  app.add_option("--depth", o.depth,
                 "quick, standard or exhaustive: how many cases and how large the inputs "
                 "(default: $LMCACHE_CONFORMANCE_DEPTH, else standard)");
  if (std::optional<int> done = cli::parse_command_line(app, argc, argv)) return *done;
  o.rc_params_given = rc->count() > 0;
  if (o.depth.empty()) {
    const char* env = std::getenv("LMCACHE_CONFORMANCE_DEPTH");
    o.depth = env != nullptr && *env != '\0' ? env : "standard";
  }
  if (!parse_depth(o.depth)) {
    std::cerr << "lmcache-conform: --depth must be quick, standard or exhaustive, got '" << o.depth
              << "'\n";
    return 2;
  }
  if (o.timeout_s <= 0) o.timeout_s = *parse_depth(o.depth) == Depth::kExhaustive ? 1800 : 300;
  if (!o.reference && o.plugins.empty() && o.connector_plugins.empty() &&
      o.adapter_configs.empty() && o.python_specs.empty()) {
    std::cerr << "lmcache-conform: give --reference, --plugin FILE, --connector-plugin FILE, "
                 "--python MODULE:FACTORY and/or --adapter JSON\n"
              << app.help();
    return 2;
  }
  if (!o.rc_params_given) {
    const char* env = std::getenv("RC_PARAMS");
    o.rc_params = env ? env : "";
  }
  if (std::string problem = rc_params_problem(o.rc_params); !problem.empty()) {
    std::cerr << "lmcache-conform: " << (o.rc_params_given ? "--rc-params" : "$RC_PARAMS") << ": "
              << problem << "\n";
    return cli::kExitUsage;
  }
  // One seed for the whole run, printed, so that any result can be replayed.
  if (o.rc_params.find("seed=") == std::string::npos) {
    std::random_device rd;
    std::uint64_t seed = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
    o.rc_params = (o.rc_params.empty() ? "" : o.rc_params + " ") + "seed=" + std::to_string(seed);
  }
  // Twice the cores: a property mostly waits (on the implementation's threads, fds and store),
  // so one per core leaves the cores idle (standard depth over the reference on 2 cores: 547 s
  // at 2, 445 s at 4).
  if (o.jobs == 0) o.jobs = std::clamp(2 * std::thread::hardware_concurrency(), 1u, 8u);

  const std::string exe = self_exe();
  fs::path dir;
  if (!o.keep_logs.empty()) {
    std::error_code ec;
    dir = fs::absolute(o.keep_logs, ec);
    if (!ec) fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      std::cerr << "lmcache-conform: --keep-logs '" << o.keep_logs
                << "': cannot make it a directory: "
                << (ec ? ec.message() : std::string("something else is there")) << "\n";
      return cli::kExitUsage;
    }
  } else {
    std::string tmpl = (fs::temp_directory_path() / "lmcache-conform.XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::cerr << "lmcache-conform: cannot create a temporary directory\n";
      return 2;
    }
    dir = tmpl;
  }

  RunReport report;
  report.rc_params = o.rc_params;
  report.depth = o.depth;
  auto run_start = Clock::now();
  std::vector<std::string> sources;
  // --reference over real storage: a private redis-server and a directory for the whole run.
  std::optional<ReferenceStorage> storage;
  if (o.reference) {
    sources.push_back(kReferenceSource);
    try {
      storage.emplace();
      sources.push_back(storage->source());
      if (!storage->note().empty() && !o.quiet)
        std::cerr << "lmcache-conform: " << storage->note() << "\n";
    } catch (const std::exception& e) {
      report.errors.push_back(std::string("--reference: cannot start the reference storage: ") +
                              e.what());
    }
  }
  for (auto& p : o.plugins) sources.push_back(fs::absolute(p).string());
  for (auto& p : o.connector_plugins) {
    sources.push_back(kConnectorPluginPrefix + fs::absolute(p).string());
  }
  for (auto& c : o.adapter_configs) sources.push_back(kAdapterConfigPrefix + c);
  for (auto& spec : o.python_specs) sources.push_back(python_source_of(spec));
  std::vector<Impl> impls;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (std::string e = list_source(exe, sources[i], dir, i, &impls); !e.empty()) {
      report.errors.push_back(e);
    }
  }

  if (o.list) {
    std::cout << "Implementations:\n";
    for (auto& im : impls) {
      std::cout << "  " << kind_name(im.kind) << " " << im.name << "  (" << im.source << ")\n";
    }
    for (auto kind : {ImplementationKind::kSerde, ImplementationKind::kProcessor,
                      ImplementationKind::kAdapter, ImplementationKind::kWrapper}) {
      std::cout << "\n" << suite_name(kind) << " (" << kind_name(kind) << "s):\n";
      for (auto& p : properties_of(kind)) std::cout << "  " << p.name << ": " << p.checks << "\n";
    }
    for (auto& e : report.errors) std::cerr << "ERROR: " << e << "\n";
    if (o.keep_logs.empty()) fs::remove_all(dir);
    return report.errors.empty() ? 0 : 2;
  }

  for (auto& im : impls) report.implementations.push_back({im.name, im.kind, im.source, {}});
  std::vector<Job> jobs;
  for (std::size_t i = 0; i < impls.size(); ++i) {
    const std::string suite(suite_name(impls[i].kind));
    for (const auto& p : properties_of(impls[i].kind)) {
      std::string prop(p.name);
      if (!filter_matches(o.filter,
                          {impls[i].name + "." + prop, impls[i].name + "." + suite + "." + prop})) {
        continue;
      }
      Job job;
      job.impl_index = i;
      job.suite = suite;
      job.property = prop;
      std::string stem = "job_" + std::to_string(jobs.size());
      job.out_json = (dir / (stem + ".json")).string();
      job.log = (dir / (stem + ".log")).string();
      jobs.push_back(job);
    }
  }

  if (jobs.empty() && report.errors.empty()) {
    if (impls.empty()) {
      std::cerr << "lmcache-conform: the sources registered no implementation to test\n";
    } else {
      std::cerr << "lmcache-conform: no property matches --filter " << shell_quote(o.filter)
                << " (subjects are '<impl>.<Property>' and '<impl>.<Suite>.<Property>'; --list "
                   "names them)\n";
    }
    if (o.keep_logs.empty()) fs::remove_all(dir);
    return cli::kExitUsage;
  }
  // A log or report kept under --keep-logs is written only where a regular file or nothing is.
  for (const Job& j : jobs) {
    try {
      check_output_path(j.log);
      check_output_path(j.out_json);
    } catch (const std::invalid_argument& e) {
      std::cerr << "lmcache-conform: --keep-logs: " << e.what() << "\n";
      return cli::kExitUsage;
    }
  }

  // Run the jobs, at most o.jobs at a time.
  std::unique_ptr<ForkServer> python_forks;
  bool python_forks_tried = false;
  std::size_t next = 0, finished = 0;
  std::vector<std::size_t> running;
  std::vector<PropertyResult> results(jobs.size());
  while (finished < jobs.size()) {
    while (next < jobs.size() && running.size() < o.jobs) {
      Job& j = jobs[next];
      const Impl& im = impls[j.impl_index];
      j.start = Clock::now();
      const std::vector<std::string> args = {
          "--child", "run",   "--source",   im.source,  "--kind", std::string(kind_name(im.kind)),
          "--impl",  im.name, "--property", j.property, "--out",  j.out_json};
      j.pid = -1;
      if (python::is_python_source(im.source) && python::python_support_built()) {
        // One interpreter start for all of the run's Python jobs (fork_server.h); without
        // the server each job starts its own.
        if (!python_forks_tried) {
          python_forks_tried = true;
          // Its log is written only where a regular file or nothing is, as the jobs' logs.
          const std::string log = (dir / "fork_server.log").string();
          try {
            check_output_path(log);
            python_forks = ForkServer::start(exe, log, o.rc_params, o.depth);
          } catch (const std::invalid_argument&) {
            // Without the server each job starts its own interpreter.
          }
        }
        if (python_forks) j.pid = python_forks->fork_job(args, j.log);
      }
      if (j.pid < 0) j.pid = spawn_child(exe, args, j.log, o.rc_params, o.depth);
      running.push_back(next++);
    }
    for (auto it = running.begin(); it != running.end();) {
      Job& j = jobs[*it];
      int status = 0;
      pid_t r = j.pid > 0 ? waitpid(j.pid, &status, WNOHANG) : -1;
      bool over = Clock::now() - j.start > std::chrono::duration<double>(o.timeout_s);
      if (r == 0 && !over) {
        ++it;
        continue;
      }
      if (r == 0 && over) {
        kill(-j.pid, SIGKILL);
        waitpid(j.pid, &status, 0);
        j.timed_out = true;
      }
      if (r < 0 && j.pid <= 0) status = 127 << 8;
      j.wait_status = status;
      j.duration_s = std::chrono::duration<double>(Clock::now() - j.start).count();
      const Impl& im = impls[j.impl_index];
      PropertyResult pr = collect(j, im, o.timeout_s);
      // A scenario property draws nothing random; it still ran under the run's seed.
      if (!pr.rc_seed) pr.rc_seed = seed_of(o.rc_params);
      std::string src =
          im.source == kReferenceSource || is_reference_storage_source(im.source) ? "--reference"
          : is_adapter_config_source(im.source)
              ? "--adapter " +
                    shell_quote(im.source.substr(std::string_view(kAdapterConfigPrefix).size()))
          : python::is_python_source(im.source)
              ? "--python " + shell_quote(im.source.substr(
                                  std::string_view(python::kPythonSourcePrefix).size()))
          : im.source.rfind(kConnectorPluginPrefix, 0) == 0
              ? "--connector-plugin " +
                    shell_quote(im.source.substr(std::string_view(kConnectorPluginPrefix).size()))
              : "--plugin " + shell_quote(im.source);
      pr.reproduce = "lmcache-conform " + src + " --depth " + o.depth + " --filter " +
                     shell_quote(im.name + "." + j.property) + " --rc-params " +
                     shell_quote(pr.rc_params.empty() ? o.rc_params : pr.rc_params);
      ++finished;
      if (!o.quiet) {
        std::cout << "[" << finished << "/" << jobs.size() << "] " << im.name << " " << j.suite
                  << "." << j.property << " ... " << status_name(pr.status) << " ("
                  << static_cast<int>(j.duration_s * 1000) << " ms)" << std::endl;
      }
      results[*it] = std::move(pr);
      it = running.erase(it);
    }
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    report.implementations[jobs[k].impl_index].results.push_back(std::move(results[k]));
  }
  report.duration_s = std::chrono::duration<double>(Clock::now() - run_start).count();

  print_matrix(report, std::cout);
  int exit_code = report.ExitCode();
  if (!o.json_path.empty()) {
    if (std::string e = write_json_report(report, o.json_path); !e.empty()) {
      std::cerr << "lmcache-conform: --json: " << e << "\n";
      exit_code = std::max(exit_code, 2);
    }
  }
  if (!o.junit_path.empty()) {
    if (std::string e = write_junit_report(report, o.junit_path); !e.empty()) {
      std::cerr << "lmcache-conform: --junit: " << e << "\n";
      exit_code = std::max(exit_code, 2);
    }
  }
  if (o.keep_logs.empty()) fs::remove_all(dir);
  return exit_code;
}

}  // namespace
}  // namespace lmcache::conformance::tools

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child") == 0) {
    return lmcache::conformance::tools::run_child(argc, argv);
  }
  return lmcache::cli::guarded_main(
      "lmcache-conform", [&] { return lmcache::conformance::tools::run_main(argc, argv); });
}
