// File: conformance/tools/adapter_config_source.h
//
// `lmcache-conform --adapter '<json config>'`: the adapter a deployment configures (e.g. a
// user's own Redis through the "resp" type, a cache directory through "fs", with or without a
// "serde" object) as an implementation source, beside "reference" and plugins. Each property
// gets fresh adapters built from the config with create_l2_adapter(); for the storage types
// ("resp", "fs") every adapter gets a key namespace of its own (the config's, if any, plus a
// per-run, per-process, per-instance suffix), so a property that needs a clean store sees one
// and never touches keys it did not write. A "resp" config is also pointed at the kit's hostile
// RESP peers (AdapterUnderTest::make_over_resp_peer: the config with "host" and "port" replaced).
#pragma once

#include <string>

#include "lmcache/conformance/registry.h"
#include "lmcache/core/config.h"

namespace lmcache::conformance::tools {

// Sources of this kind are this prefix followed by the JSON config.
inline constexpr const char* kAdapterConfigPrefix = "adapter-config:";

// is_adapter_config_source()
//
// Whether `source` is an --adapter source (starts with kAdapterConfigPrefix).
bool is_adapter_config_source(const std::string& source);

// load_adapter_config_source()
//
// Registers the adapter of the config in `source` into `registry` as "config_<type>" (plus
// "_fp8" when it carries an fp8 serde, "_fp8_chain" for a chain of fp8 and lossless stages);
// with an fp8 serde also the wrapper "config_<type>_fp8_wrapper": the reference fp8 wrapper
// whose wrapper properties run with the config's adapter (without its serde) live below the
// kit's inner double (WrapperUnderTest::decorate_inner). Returns an empty string on success,
// else why not: the JSON does not parse or is not an object, "type" is missing or unknown, the
// config is refused by its type (its error names the key), or its "serde" is not one whose round
// trip the kit knows (none; "fp8" with the default e4m3fn format; a "chain" whose first stage is
// that and whose other stages are checksum, aesgcm or encrypt, which give back what they took
// and add a frame of a fixed size).
std::string load_adapter_config_source(const std::string& source, Registry& registry);

// register_adapter_config()
//
// What load_adapter_config_source() registers for a parsed config, named `<stem>`,
// `<stem>_fp8`, `<stem>_fp8_chain` and `<stem>_fp8_wrapper` instead of "config_<type>..." (the
// reference storage source names them after the type alone). Returns "" or why not, as above.
std::string register_adapter_config(const Json& config, const std::string& stem,
                                    Registry& registry);

}  // namespace lmcache::conformance::tools
