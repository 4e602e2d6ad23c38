#include "lmcache/bridge/key_codec.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace lmcache::bridge {

namespace {

constexpr char kHexLower[] = "0123456789abcdef";
constexpr char kHexUpper[] = "0123456789ABCDEF";

bool is_safe_byte(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

void append_escaped(std::string& out, std::string_view text) {
  for (unsigned char c : text) {
    if (is_safe_byte(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHexUpper[c >> 4]);
      out.push_back(kHexUpper[c & 0xF]);
    }
  }
}

int hex_value(char c, const char* digits) {
  for (int i = 0; i < 16; ++i) {
    if (digits[i] == c) return i;
  }
  return -1;
}

// Inverse of append_escaped for canonical input only.
std::optional<std::string> unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c != '%') {
      if (!is_safe_byte(c)) return std::nullopt;
      out.push_back(static_cast<char>(c));
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;  // '%' needs two digits after it
    const int hi = hex_value(text[i + 1], kHexUpper);
    const int lo = hex_value(text[i + 2], kHexUpper);
    if (hi < 0 || lo < 0) return std::nullopt;
    const auto byte = static_cast<unsigned char>(hi * 16 + lo);
    if (is_safe_byte(byte)) return std::nullopt;  // a safe byte is never escaped
    out.push_back(static_cast<char>(byte));
    i += 2;
  }
  return out;
}

std::string hex_of(std::uint64_t value, std::size_t min_digits) {
  std::string digits;
  do {
    digits.insert(digits.begin(), kHexLower[value & 0xF]);
    value >>= 4;
  } while (value != 0);
  if (digits.size() < min_digits) digits.insert(0, min_digits - digits.size(), '0');
  return digits;
}

std::string rank_field(std::int64_t rank) {
  if (rank >= 0) return hex_of(static_cast<std::uint64_t>(rank), 8);
  // The magnitude of INT64_MIN does not fit in int64; compute it in uint64.
  const std::uint64_t magnitude = ~static_cast<std::uint64_t>(rank) + 1;
  return "-" + hex_of(magnitude, 7);
}

std::optional<std::uint64_t> parse_hex(std::string_view text) {
  if (text.empty() || text.size() > 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : text) {
    const int d = hex_value(c, kHexLower);
    if (d < 0) return std::nullopt;
    v = v << 4 | static_cast<std::uint64_t>(d);
  }
  return v;
}

std::optional<std::int64_t> parse_rank(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  std::optional<std::uint64_t> magnitude = parse_hex(text);
  if (!magnitude) return std::nullopt;
  if (!negative) {
    if (*magnitude > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(*magnitude);
  }
  if (*magnitude == 0 || *magnitude > (static_cast<std::uint64_t>(INT64_MAX) + 1)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(~*magnitude + 1);
}

std::optional<std::string> parse_hash(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out(text.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_value(text[2 * i], kHexLower);
    const int lo = hex_value(text[2 * i + 1], kHexLower);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

bool KeyCodec::is_valid_namespace(std::string_view key_namespace) {
  if (key_namespace.size() > kMaxNamespaceBytes) return false;
  for (unsigned char c : key_namespace) {
    if (!is_safe_byte(c)) return false;
  }
  return true;
}

KeyCodec::KeyCodec(std::string key_namespace) : namespace_(std::move(key_namespace)) {
  if (!is_valid_namespace(namespace_)) {
    throw std::invalid_argument("key namespace must be at most " +
                                std::to_string(kMaxNamespaceBytes) +
                                " bytes of [A-Za-z0-9_-], got \"" + namespace_ + "\"");
  }
  if (!namespace_.empty()) prefix_ = namespace_ + "+";
}

std::string KeyCodec::encode(const ObjectKey& key) const {
  std::string out = prefix_;
  out.reserve(prefix_.size() + key.model_name().size() + key.chunk_hash().size() * 2 + 40 +
              key.cache_salt().size());
  append_escaped(out, key.model_name());
  out += '@';
  out += rank_field(key.kv_rank());
  out += '@';
  out += hex_of(static_cast<std::uint64_t>(key.object_group_id()), 1);
  out += '@';
  out += key.chunk_hash_hex();
  if (!key.cache_salt().empty()) {
    out += '@';
    append_escaped(out, key.cache_salt());
  }
  return out;
}

std::optional<ObjectKey> KeyCodec::decode(std::string_view encoded) const {
  if (encoded.substr(0, prefix_.size()) != prefix_) return std::nullopt;
  encoded.remove_prefix(prefix_.size());
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (std::size_t pos = 0; pos <= encoded.size(); ++pos) {
    if (pos == encoded.size() || encoded[pos] == '@') {
      fields.push_back(encoded.substr(start, pos - start));
      start = pos + 1;
    }
  }
  if (fields.size() != 4 && fields.size() != 5) return std::nullopt;
  std::optional<std::string> model = unescape(fields[0]);
  std::optional<std::int64_t> rank = parse_rank(fields[1]);
  std::optional<std::uint64_t> group = parse_hex(fields[2]);
  std::optional<std::string> hash = parse_hash(fields[3]);
  std::optional<std::string> salt = std::string();
  if (fields.size() == 5) salt = unescape(fields[4]);
  if (!model || !rank || !group || !hash || !salt) return std::nullopt;
  if (*group > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
  try {
    ObjectKey key(std::move(*hash), std::move(*model), *rank, static_cast<std::int64_t>(*group),
                  std::move(*salt));
    // Canonical forms only (padding, an empty salt field, ...): exactly one string per key.
    if (encode(key).compare(prefix_.size(), std::string::npos, encoded) != 0) return std::nullopt;
    return key;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // a field ObjectKey rejects ('@' cannot appear; a NUL salt can)
  }
}

}  // namespace lmcache::bridge
