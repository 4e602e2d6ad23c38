// The config properties (docs/l2-adapter.md, "The registry and configs"): a config that says
// something the adapter type cannot honour is refused with an error naming the key, never run
// with defaults the deployment did not choose.
//
// AdapterConformance.ConfigTyposRejected: a key the adapter type does not know. A deployment
// that writes "num_worker" for "num_workers", or "fp8_dtyp" in its "serde" object, otherwise
// runs with defaults it never chose and nothing says so.
// AdapterConformance.ConfigValueKindsChecked: a value of a kind its key cannot hold (a word
// where a number or a flag belongs; a number for "type" or "serde"). A reader that takes
// anything but `true` for false, or lets its JSON library's "type must be number" escape without
// the key, leaves the deployment guessing which of its keys is wrong.
//
// Built from the descriptor's config (AdapterUnderTest::config) with create_l2_adapter(), one
// variant at a time, at the top, in the config's "serde" and "serde_wrapper" objects and in each
// stage of a serde's "stages" list.
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
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

// Rebuilds the whole config around a changed copy of one of its objects.
using Place = std::function<Json(Json)>;

// The variants of `object` (the config, or one of its nested objects, rebuilt into the config by
// `place`) with a misspelt copy of each key and a foreign key.
void add_variants(const Json& object, const std::string& where, const Place& place,
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

// The variants `add` makes of `config` and of each object nested in it that the project's
// schema defines: the "serde" object and the "serde_wrapper" object (docs/wrapper.md), and in
// the serde, each object of its "stages" list (a chain's, docs/integrity.md). A type's own nested
// objects are left alone: what they hold is the type's rule (docs/l2-adapter.md).
template <class Add>
std::vector<Variant> variants(const Json& config, Add&& add) {
  std::vector<Variant> out;
  add(
      config, "", [](Json c) { return c; }, out);
  for (const char* key : {"serde", "serde_wrapper"}) {
    if (!config.contains(key) || !config[key].is_object()) continue;
    const std::string where = std::string(" in \"") + key + "\"";
    const Place place = [&](Json changed) {
      Json c = config;
      c[key] = std::move(changed);
      return c;
    };
    add(config[key], where, place, out);
    if (std::string_view(key) != "serde" || !config[key].contains("stages") ||
        !config[key]["stages"].is_array()) {
      continue;
    }
    const Json& stages = config[key]["stages"];
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (!stages[i].is_object()) continue;
      const Place stage_place = [&, i](Json changed) {
        Json serde = config[key];
        serde["stages"][i] = std::move(changed);
        return place(std::move(serde));
      };
      add(stages[i], where + ".\"stages\"[" + std::to_string(i) + "]", stage_place, out);
    }
  }
  return out;
}

// The value of another kind tried for `key`, where no reader of the key may take it for
// anything: a string that is no number where a number belongs, a string that is no flag where
// a flag belongs, the number 7 for "type" and for the "serde" and "serde_wrapper" objects (the
// project's own readers).
// Strings and objects of the type's own keys are left alone: a key may take a string or an
// object for one setting ("tls": true or {...}), and nothing is a wrong kind for both.
std::optional<Json> other_kind(const std::string& key, const Json& value, bool top) {
  if (key == "type" || (top && (key == "serde" || key == "serde_wrapper"))) return Json(7);
  // A word no key's name is likely to be part of, so that an error quoting the value does not
  // pass for one naming the key.
  if (value.is_boolean() || value.is_number()) return Json("~lmcache-conform~");
  return std::nullopt;
}

// The variants of `object` with one value at a time of another kind.
void add_kind_variants(const Json& object, const std::string& where, const Place& place,
                       std::vector<Variant>& out) {
  for (const auto& [key, value] : object.items()) {
    if (std::optional<Json> other = other_kind(key, value, where.empty())) {
      Json changed = object;
      changed[key] = std::move(*other);
      out.push_back({place(std::move(changed)), key, where});
    }
  }
}

// Builds `config` with create_l2_adapter() and closes what it built; throws what it throws.
void build_and_close(const Json& config) {
  AdapterContext ctx;
  ctx.l1_manager = std::make_shared<L1Manager>(64u << 20);  // a "serde" wrapper's temps
  L2AdapterPtr a = create_l2_adapter(config, ctx);
  if (a) a->close();
}

// Runs every variant: a Fail naming the first that builds an adapter, or whose error does not
// name its key (`what` says what the variant holds: "the key", "a value of another kind at").
Verdict require_refused(const std::vector<Variant>& all, const std::string& what,
                        const std::string& accepted) {
  for (const Variant& v : all) {
    const std::string which =
        "a config with " + what + " \"" + v.key + "\"" + v.where + " (" + v.config.dump() + ")";
    try {
      build_and_close(v.config);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find(v.key) != std::string::npos) continue;
      return Verdict::fail(which + " is refused, but the error does not name the key: " + e.what());
    }
    return Verdict::fail(which + " builds an adapter: " + accepted);
  }
  return Verdict::pass();
}

// NotSupported without a config, a Fail when it is not an object or is refused as it is (every
// variant would then be refused for that reason, and the property would prove nothing), else
// nothing.
std::optional<Verdict> config_usable(const AdapterUnderTest& aut) {
  if (!aut.config) {
    return Verdict::not_supported(
        "the descriptor names no config the adapter is built from (AdapterUnderTest::config)");
  }
  if (!aut.config->is_object()) {
    return Verdict::fail("AdapterUnderTest::config is not a JSON object: " + aut.config->dump());
  }
  try {
    build_and_close(*aut.config);
  } catch (const std::exception& e) {
    return Verdict::fail("AdapterUnderTest::config (" + aut.config->dump() +
                         ") is refused as it is: " + e.what());
  }
  return std::nullopt;
}

}  // namespace

Verdict ConfigTyposRejected(const AdapterUnderTest& aut) {
  if (std::optional<Verdict> v = config_usable(aut)) return *v;
  return require_refused(variants(*aut.config, add_variants), "the key",
                         "an unknown key is silently ignored");
}

Verdict ConfigValueKindsChecked(const AdapterUnderTest& aut) {
  if (std::optional<Verdict> v = config_usable(aut)) return *v;
  return require_refused(variants(*aut.config, add_kind_variants), "a value of another kind at",
                         "a value its key cannot hold is silently taken");
}

}  // namespace lmcache::conformance_internal::adapter_properties
