#include "adapter_config_source.h"

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "lmcache/conformance/key_namespace.h"
#include "lmcache/conformance/reference_impls.h"
#include "lmcache/conformance/testing/stored_damage.h"
#include "lmcache/fs/fs_adapter.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/l2/mock_adapter.h"
#include "lmcache/resp/resp_adapter.h"
#include "lmcache/serde/aesgcm_serde.h"
#include "lmcache/serde/checksum_serde.h"
#include "lmcache/testing/shadowed_adapter.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::conformance::tools {
namespace {

// The storage types whose configs take "key_namespace" (storage/README.md).
bool takes_key_namespace(std::string_view type) { return type == "resp" || type == "fs"; }

// The wrapper suite with the config's serde: the reference fp8 wrapper, with the config's adapter
// (its "serde" left out: the wrapper is the kit's) live below the kit's scripted inner double,
// the kit's mock as its shadow (storage_testing::ShadowedAdapter), so every store, lookup and
// load the wrapper makes reaches the deployed store; each in a fresh key namespace.
WrapperUnderTest live_wrapper(Json config, const std::string& stem, bool namespaced,
                              const std::string& user_ns) {
  config.erase("serde");
  WrapperUnderTest w = reference_serde_wrapper();
  w.name = stem + "_fp8_wrapper";
  w.decorate_inner = [config, namespaced, user_ns](L2AdapterPtr mock) -> L2AdapterPtr {
    Json c = config;
    if (namespaced) c["key_namespace"] = fresh_key_namespace(user_ns);
    return std::make_unique<storage_testing::ShadowedAdapter>(create_l2_adapter(c),
                                                              std::move(mock));
  };
  return w;
}

// Whether `serde` is fp8 with e4m3fn codes, the serde whose round trip the kit knows.
bool is_fp8_e4m3fn(const Json& serde) {
  return serde.is_object() && serde.value("type", "") == "fp8" &&
         serde.value("fp8_dtype", "float8_e4m3fn") == "float8_e4m3fn";
}

// The bytes a "serde" config adds to fp8's one code per element when its round trip is fp8
// e4m3fn's: 0 for fp8 itself, the stages' frames for a chain of fp8 and then only lossless
// stages of a fixed size (checksum, aesgcm, encrypt; docs/integrity.md); nullopt for any other
// serde.
std::optional<std::uint64_t> fp8_frame_overhead(const Json& serde) {
  if (is_fp8_e4m3fn(serde)) return 0;
  if (!serde.is_object() || serde.value("type", "") != "chain" || !serde.contains("stages") ||
      !serde["stages"].is_array() || serde["stages"].empty() ||
      !is_fp8_e4m3fn(serde["stages"][0])) {
    return std::nullopt;
  }
  std::uint64_t overhead = 0;
  for (std::size_t i = 1; i < serde["stages"].size(); ++i) {
    const Json& stage = serde["stages"][i];
    const std::string type = stage.is_object() ? stage.value("type", "") : "";
    if (type == "checksum") {
      overhead += kChecksumHeaderBytes;
    } else if (type == "aesgcm" || type == "encrypt") {
      overhead += kAesGcmOverheadBytes;
    } else {
      return std::nullopt;
    }
  }
  return overhead;
}

// The adapter of `config`, with an L1 for the serde wrapper's temps when it has a "serde".
L2AdapterPtr build_adapter(const Json& config) {
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(256u << 20);
  return create_l2_adapter(config, ctx);
}

}  // namespace

bool is_adapter_config_source(const std::string& source) {
  return source.rfind(kAdapterConfigPrefix, 0) == 0;
}

std::string load_adapter_config_source(const std::string& source, Registry& registry) {
  const std::string text = source.substr(std::string_view(kAdapterConfigPrefix).size());
  Json config;
  try {
    config = Json::parse(text);
  } catch (const std::exception& e) {
    return std::string("--adapter: the config is not valid JSON: ") + e.what();
  }
  if (!config.is_object() || !config.contains("type") || !config["type"].is_string()) {
    return "--adapter: the config must be a JSON object with a string \"type\", got " +
           config.dump();
  }
  return register_adapter_config(config, "config_" + config["type"].get<std::string>(), registry);
}

std::string register_adapter_config(const Json& config, const std::string& stem,
                                    Registry& registry) {
  resp::register_resp_adapter_type();
  fs::register_fs_adapter_type();
  const std::string type = config["type"].get<std::string>();
  bool fp8 = false;
  std::uint64_t frame_overhead = 0;
  if (config.contains("serde")) {
    const Json& serde = config["serde"];
    const std::optional<std::uint64_t> overhead = fp8_frame_overhead(serde);
    if (!overhead) {
      return "--adapter: \"serde\" " + serde.dump() +
             " is not supported: the kit knows the round trip of {\"type\": \"fp8\"} (e4m3fn) "
             "and of a \"chain\" of it and then checksum, aesgcm or encrypt stages only; test "
             "other serdes with --plugin";
    }
    fp8 = true;
    frame_overhead = *overhead;
  }
  // The live wrapper suite puts the kit's own fp8 wrapper above the config's store: one run per
  // store, for the plain fp8 config.
  const bool live_wrapped = fp8 && is_fp8_e4m3fn(config["serde"]);
  const bool namespaced = takes_key_namespace(type);
  const std::string user_ns =
      namespaced && config.contains("key_namespace") && config["key_namespace"].is_string()
          ? config["key_namespace"].get<std::string>()
          : "";
  auto build_fresh = [namespaced, user_ns](Json c) -> L2AdapterPtr {
    if (namespaced) c["key_namespace"] = fresh_key_namespace(user_ns);
    return build_adapter(c);
  };
  auto make = [config, build_fresh]() -> L2AdapterPtr { return build_fresh(config); };
  // Build one now: a config its type refuses is reported here, naming the key, not per property.
  try {
    make()->close();
  } catch (const std::exception& e) {
    return "--adapter: cannot build the adapter: " + std::string(e.what());
  }
  AdapterUnderTest a;
  if (fp8) {
    a = reference_wrapped_mock_adapter();  // fp8 (e4m3fn) wrapper semantics: sizes and round trip
    if (frame_overhead > 0) {
      a.stored_bytes = [frame_overhead](const MemoryLayoutDesc& layout) -> std::uint64_t {
        return layout.total_elements() + frame_overhead;
      };
    }
  } else {
    a.object_dtypes = {DType::kUInt8, DType::kFloat32, DType::kBFloat16};
  }
  // The bridge behind the storage types reports its lookup locks (storage/README.md).
  if (!fp8) a.capabilities.reports_lock_count = namespaced;
  a.name = stem + (live_wrapped ? "_fp8" : fp8 ? "_fp8_chain" : "");
  a.make = make;
  a.config = config;
  if (namespaced && !fp8) {
    // The reference adapter of the same type over the same store and namespace: the adapter
    // built from the config is held to the reference's storage format (MatchesReference).
    a.reference.type = type;
    a.reference.make_pair = [config, user_ns]() -> std::pair<L2AdapterPtr, L2AdapterPtr> {
      Json c = config;
      c["key_namespace"] = fresh_key_namespace(user_ns);
      return {create_l2_adapter(c), create_l2_adapter(c)};
    };
  }
  if (type == resp::kRespAdapterType) {
    // The same config pointed at the kit's hostile peers (HostilePeerFailsCleanly): the
    // deployment's own deadlines and breaker face them.
    a.make_over_resp_peer = [config](std::uint16_t port) -> L2AdapterPtr {
      Json c = config;
      c["host"] = "127.0.0.1";
      c["port"] = port;
      return build_adapter(c);
    };
  }
  // The same config over a part of the store of its own, with a way to damage what it stored
  // there (StoredDamageContained): fs's crc32 trailer detects bytes changed in place.
  if (type == fs::kFsAdapterType) {
    a.make_damageable = damageable_fs(config, build_adapter);
    a.detects_changed_bytes = config.value("checksum", "none") == "crc32";
  } else if (type == resp::kRespAdapterType) {
    a.make_damageable = damageable_resp(config, build_adapter);
  }
  // The same config with a capacity (CapacityHonoured): the bridge's "max_capacity_gb" behind the
  // storage types, the mock's "max_size_gb". Both are GiB, which a byte count / 2^30 gives back
  // exactly.
  const char* capacity_key =
      namespaced ? "max_capacity_gb" : (type == MockL2Adapter::kTypeName ? "max_size_gb" : nullptr);
  if (capacity_key != nullptr) {
    a.make_with_capacity = [config, build_fresh, capacity_key](std::uint64_t bytes) {
      Json c = config;
      c[capacity_key] = static_cast<double>(bytes) / static_cast<double>(std::uint64_t{1} << 30);
      return build_fresh(std::move(c));
    };
  }
  try {
    registry.add_adapter(std::move(a));
    if (live_wrapped) registry.add_wrapper(live_wrapper(config, stem, namespaced, user_ns));
  } catch (const std::exception& e) {
    return std::string("--adapter: registering the adapter failed: ") + e.what();
  }
  return {};
}

}  // namespace lmcache::conformance::tools
