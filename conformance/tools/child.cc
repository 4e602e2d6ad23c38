#include "child.h"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "adapter_config_source.h"
#include "fork_server.h"
#include "lmcache/conformance/adapter_conformance.h"
#include "lmcache/conformance/descriptors.h"
#include "lmcache/conformance/freed_memory.h"
#include "lmcache/conformance/processor_conformance.h"
#include "lmcache/conformance/properties.h"
#include "lmcache/conformance/registry.h"
#include "lmcache/conformance/serde_conformance.h"
#include "lmcache/conformance/store_preflight.h"
#include "lmcache/conformance/wrapper_conformance.h"
#include "lmcache/core/regular_file.h"
#include "plugin_loader.h"
#include "reference_storage.h"

// The suites over whatever the child registered; gtest evaluates these at InitGoogleTest(),
// after the source has been loaded.
INSTANTIATE_TEST_SUITE_P(Registered, SerdeConformance,
                         ::testing::ValuesIn(lmcache::conformance::global_registry().serdes()),
                         lmcache::conformance::ParamName());
INSTANTIATE_TEST_SUITE_P(Registered, ProcessorConformance,
                         ::testing::ValuesIn(lmcache::conformance::global_registry().processors()),
                         lmcache::conformance::ParamName());
INSTANTIATE_TEST_SUITE_P(Registered, AdapterConformance,
                         ::testing::ValuesIn(lmcache::conformance::global_registry().adapters()),
                         lmcache::conformance::ParamName());
INSTANTIATE_TEST_SUITE_P(Registered, WrapperConformance,
                         ::testing::ValuesIn(lmcache::conformance::global_registry().wrappers()),
                         lmcache::conformance::ParamName());

namespace lmcache::conformance::tools {

namespace {

// Returns the value after `flag`, or "".
std::string arg(int argc, char** argv, const std::string& flag) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (flag == argv[i]) return argv[i + 1];
  }
  return {};
}

int list(const std::string& out_path) {
  nlohmann::json j;
  j["implementations"] = nlohmann::json::array();
  const Registry& r = global_registry();
  auto add = [&](ImplementationKind kind, const std::string& name) {
    j["implementations"].push_back({{"kind", std::string(kind_name(kind))}, {"name", name}});
  };
  for (const auto& d : r.serdes()) add(ImplementationKind::kSerde, d.name);
  for (const auto& d : r.processors()) add(ImplementationKind::kProcessor, d.name);
  for (const auto& d : r.adapters()) add(ImplementationKind::kAdapter, d.name);
  for (const auto& d : r.wrappers()) add(ImplementationKind::kWrapper, d.name);
  try {
    write_output_file(out_path, j.dump() + "\n");
  } catch (const std::exception& e) {
    std::cerr << "cannot write the implementation list: " << e.what() << "\n";
    return 4;
  }
  return 0;
}

}  // namespace

int run_child(int argc, char** argv) {
  // A C++ host's disposition, whatever the runner was started with (a shell or a CI runner may
  // ignore SIGPIPE, and an ignored signal stays ignored across exec): a connector that writes
  // into a dead connection without MSG_NOSIGNAL dies here as it would there.
  std::signal(SIGPIPE, SIG_DFL);
  // A child lives for one property (or serves forks): it keeps what it frees (freed_memory.h).
  keep_freed_memory();
  if (argc < 3) {
    std::cerr << "lmcache-conform --child: missing mode\n";
    return 4;
  }
  const std::string mode = argv[2];
  if (mode == "fork-server") {
    return serve_forks(argv[0], [](std::vector<std::string> args) {
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      return run_child(static_cast<int>(args.size()), cargs.data());
    });
  }
  // The list child checked that a connector can store; a property's child leaves the
  // connector's first use to the property (store_preflight.h).
  if (mode == "run") ::setenv(kStorePreflightOffEnv, "1", 1);
  const std::string source = arg(argc, argv, "--source");
  const std::string out = arg(argc, argv, "--out");
  if (std::string error = is_adapter_config_source(source)
                              ? load_adapter_config_source(source, global_registry())
                          : is_reference_storage_source(source)
                              ? load_reference_storage_source(source, global_registry())
                              : load_source(source, global_registry());
      !error.empty()) {
    std::cerr << error << "\n";
    return 3;
  }
  if (mode == "list") return list(out);
  if (mode != "run") {
    std::cerr << "lmcache-conform --child: unknown mode '" << mode << "'\n";
    return 4;
  }
  const ImplementationKind kind = parse_kind(arg(argc, argv, "--kind"));
  const std::string impl = arg(argc, argv, "--impl");
  const std::string property = arg(argc, argv, "--property");
  if (!global_registry().retain_only(kind, impl)) {
    std::cerr << "no " << kind_name(kind) << " named '" << impl << "' in " << source << "\n";
    return 4;
  }
  std::vector<std::string> args = {
      argv[0],
      "--gtest_filter=Registered/" + std::string(suite_name(kind)) + "." + property + "/" + impl,
      "--gtest_output=json:" + out,
  };
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  int gargc = static_cast<int>(args.size());
  ::testing::InitGoogleTest(&gargc, cargs.data());
  return RUN_ALL_TESTS();
}

}  // namespace lmcache::conformance::tools
