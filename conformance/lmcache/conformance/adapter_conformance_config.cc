// AdapterConformance.ConfigTyposRejected: a config with a key the adapter type does not know is
// refused, naming that key (docs/l2-adapter.md, "The registry and configs": a typo must not be
// silently ignored). A deployment that writes "num_worker" for "num_workers", or "fp8_dtyp" in
// its "serde" object, otherwise runs with defaults it never chose and nothing says so.
//
// Built from the descriptor's config (AdapterUnderTest::config) with create_l2_adapter(): beside
// each of its keys (at the top and in its "serde" object) that key misspelt, with its value,
// and a key no config has, one variant at a time.
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lmcache/conformance/internal/adapter_properties.h"
#include "lmcache/l1/l1_manager.h"
#include "lmcache/wrapper/adapter_factory.h"

namespace lmcache::conformance_internal::adapter_properties {
using namespace ::lmcache::conformance;  // the kit's public types

namespace {

// A key no adapter type has.
constexpr const char* kForeignKey = "lmcache_conform_no_such_key";

// One config the property builds, and the key it must be refused for.
struct Variant {
  Json config;
  std::string key;    // the key added
  std::string where;  // "" or " in \"serde\""
};

// The misspelling of `key` tried: the last two adjacent letters that differ swapped
// ("num_workesr"), where `object` has no such key already. Not a dropped letter: a parser that
// takes "num_worker" as an abbreviation of "num_workers" ignores nothing.
std::optional<std::string> misspelling(const std::string& key, const Json& object) {
  for (std::size_t i = key.size(); i >= 2; --i) {
    if (key[i - 1] == key[i - 2]) continue;
    std::string swapped = key;
    std::swap(swapped[i - 1], swapped[i - 2]);
    if (object.contains(swapped)) return std::nullopt;
    return swapped;
  }
  return std::nullopt;
}

// The variants of `object` (the config, or its "serde" object, rebuilt into the config by
// `place`).
template <class Place>
void add_variants(const Json& object, const std::string& where, Place&& place,
                  std::vector<Variant>& out) {
  for (const auto& [key, value] : object.items()) {
    if (key == "type" || key == "serde") continue;
    if (const std::optional<std::string> typo = misspelling(key, object)) {
      Json changed = object;
      changed[*typo] = value;
      out.push_back({place(std::move(changed)), *typo, where});
    }
  }
  Json changed = object;
  changed[kForeignKey] = true;
  out.push_back({place(std::move(changed)), kForeignKey, where});
}

std::vector<Variant> variants(const Json& config) {
  std::vector<Variant> out;
  add_variants(
      config, "", [](Json c) { return c; }, out);
  if (config.contains("serde") && config["serde"].is_object()) {
    add_variants(
        config["serde"], " in \"serde\"",
        [&](Json serde) {
          Json c = config;
          c["serde"] = std::move(serde);
          return c;
        },
        out);
  }
  return out;
}

}  // namespace

Verdict ConfigTyposRejected(const AdapterUnderTest& aut) {
  if (!aut.config) {
    return Verdict::not_supported(
        "the descriptor names no config the adapter is built from (AdapterUnderTest::config)");
  }
  if (!aut.config->is_object()) {
    return Verdict::fail("AdapterUnderTest::config is not a JSON object: " + aut.config->dump());
  }
  for (const Variant& v : variants(*aut.config)) {
    const std::string what =
        "a config with the key \"" + v.key + "\"" + v.where + " (" + v.config.dump() + ")";
    AdapterContext ctx;
    ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);  // a "serde" wrapper's temps
    try {
      L2AdapterPtr a = create_l2_adapter(v.config, ctx);
      if (a) a->close();
    } catch (const std::exception& e) {
      if (std::string(e.what()).find(v.key) != std::string::npos) continue;
      return Verdict::fail(what + " is refused, but the error does not name the key: " + e.what());
    }
    return Verdict::fail(what + " builds an adapter: an unknown key is silently ignored");
  }
  return Verdict::pass();
}

}  // namespace lmcache::conformance_internal::adapter_properties
