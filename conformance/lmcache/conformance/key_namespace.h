// File: lmcache/conformance/key_namespace.h
//
// Key namespaces for adapters the kit builds over a live, shared store (`lmcache-conform
// --adapter`, conformance/tools/adapter_config_source.h, and connectors registered with
// LMCACHE_CONFORMANCE_CONNECTOR, connector_plugin.h). A property that needs a clean store
// (absent keys miss, usage starts at zero, the stateful model) gets one without clearing
// anything: each adapter it builds stores under a namespace of its own, so the run never reads,
// overwrites or deletes a key it did not write.
#pragma once

#include <string>

namespace lmcache::conformance {

// fresh_key_namespace()
//
// A namespace no other call of this process, of another process of this run or of another run
// returns: "<user>-" (when `user` is not empty) followed by "conform-<run>-<pid>-<n>", where
// <run> is 8 hex digits drawn once per process, <pid> the process id and <n> a per-process
// counter. Made of [A-Za-z0-9_-] when `user` is. The suffix is under 32 bytes in practice (45 at
// most), so a short `user` keeps the whole within KeyCodec's 64-byte limit
// (lmcache/bridge/key_codec.h); a longer one is refused where the namespace is used.
// Thread-safe.
std::string fresh_key_namespace(const std::string& user = "");

}  // namespace lmcache::conformance
