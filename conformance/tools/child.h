// File: conformance/tools/child.h
//
// The runner's child mode. The parent (lmcache-conform) never loads plugin code itself: it
// re-executes its own binary with hidden flags, once to list a source's implementations and once
// per (implementation, property) to run that property under gtest, so that a crash or a hang is
// confined to one child and becomes a Fail of that property.
//
//   lmcache-conform --child list --source SRC --out FILE
//       writes {"implementations": [{"kind": ..., "name": ...}, ...]} to FILE; exit 3 with the
//       reason on stderr when SRC cannot be loaded.
//   lmcache-conform --child run --source SRC --kind KIND --impl NAME --property PROP --out FILE
//       runs Registered/<Suite>.<PROP>/<NAME> and writes gtest's JSON report to FILE.
//   lmcache-conform --child fork-server
//       starts the embedded interpreter once and forks `run` children from itself for
//       --python sources (fork_server.h).
#pragma once

namespace lmcache::conformance::tools {

// run_child()
//
// Entry point for argv[1] == "--child"; returns the process exit status.
int run_child(int argc, char** argv);

}  // namespace lmcache::conformance::tools
