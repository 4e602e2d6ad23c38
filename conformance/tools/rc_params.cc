#include "rc_params.h"

#include <cctype>
#include <climits>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cli_support.h"

namespace lmcache::conformance::tools {

namespace {

enum class Kind { kSeed, kCount, kFlag, kText };

struct Key {
  const char* name;
  Kind kind;
};

constexpr Key kKeys[] = {
    {"seed", Kind::kSeed},
    {"max_success", Kind::kCount},
    {"max_size", Kind::kCount},
    {"max_discard_ratio", Kind::kCount},
    {"noshrink", Kind::kFlag},
    {"verbose_progress", Kind::kFlag},
    {"verbose_shrinking", Kind::kFlag},
    {"reproduce", Kind::kText},
    {"disable_colors", Kind::kFlag},
};

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The key=value pairs of `text`, read the way RapidCheck reads RC_PARAMS; nullopt and `why` on
// an unterminated quote.
std::optional<std::vector<std::pair<std::string, std::string>>> pairs_of(const std::string& text,
                                                                         std::string* why) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && is_space(text[i])) ++i;
  };
  // A quoted string, or a run of characters for which `more` holds.
  auto word = [&](auto more) -> std::optional<std::string> {
    std::string w;
    if (i < text.size() && (text[i] == '\'' || text[i] == '"')) {
      const char quote = text[i++];
      for (bool escape = false; i < text.size(); ++i) {
        if (!escape && text[i] == '\\') {
          escape = true;
        } else if (!escape && text[i] == quote) {
          ++i;
          return w;
        } else {
          w += text[i];
          escape = false;
        }
      }
      *why = "unterminated quote in '" + text + "'";
      return std::nullopt;
    }
    while (i < text.size() && more(text[i])) w += text[i++];
    return w;
  };
  for (;;) {
    skip_space();
    if (i == text.size()) return out;
    std::optional<std::string> key = word([](char c) { return c != '=' && !is_space(c); });
    if (!key) return std::nullopt;
    skip_space();
    std::string value;
    if (i < text.size() && text[i] == '=') {
      ++i;
      skip_space();
      std::optional<std::string> v = word([](char c) { return !is_space(c); });
      if (!v) return std::nullopt;
      value = std::move(*v);
    }
    if (key->empty()) {
      *why = "a value without a key in '" + text + "'";
      return std::nullopt;
    }
    out.emplace_back(std::move(*key), std::move(value));
  }
}

std::string known_keys() {
  std::string out;
  for (const Key& k : kKeys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

}  // namespace

std::string rc_params_problem(const std::string& params) {
  std::string why;
  const auto pairs = pairs_of(params, &why);
  if (!pairs) return why;
  for (const auto& [name, value] : *pairs) {
    const Key* key = nullptr;
    for (const Key& k : kKeys) {
      if (name == k.name) key = &k;
    }
    if (key == nullptr) {
      return "unknown key '" + name + "' (known keys: " + known_keys() + ")";
    }
    const std::string given = name + "=" + value;
    switch (key->kind) {
      case Kind::kSeed:
        if (!cli::parse_uint(value, 0, UINT64_MAX)) {
          return "'" + given + "': seed must be a decimal integer in [0, 2^64 - 1]";
        }
        break;
      case Kind::kCount:
        if (!cli::parse_uint(value, 0, INT_MAX)) {
          return "'" + given + "': " + name + " must be a decimal integer in [0, " +
                 std::to_string(INT_MAX) + "]";
        }
        break;
      case Kind::kFlag:
        if (value != "0" && value != "1") return "'" + given + "': " + name + " must be 0 or 1";
        break;
      case Kind::kText:
        if (value.empty()) return "'" + given + "': " + name + " needs a value";
        break;
    }
  }
  return {};
}

}  // namespace lmcache::conformance::tools
