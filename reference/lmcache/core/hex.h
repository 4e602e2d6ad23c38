// File: lmcache/core/hex.h
//
// Hex text to bytes, for keys and test vectors given as text (config values, JSON vectors).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lmcache {

// bytes_from_hex()
//
// The bytes spelled by `text` as Python's bytes.fromhex() reads it: pairs of hex digits (either
// case), ASCII whitespace allowed between pairs. std::nullopt on anything else (an odd digit, a
// non-hex character). Empty text gives empty bytes.
std::optional<std::string> bytes_from_hex(std::string_view text);

}  // namespace lmcache
