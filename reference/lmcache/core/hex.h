// File: lmcache/core/hex.h
//
// Hex text to bytes and back, for keys and test vectors given as text (config values, JSON
// vectors, logs).
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

// hex_from_bytes()
//
// Two lowercase hex digits per byte, no separators (Python's bytes.hex()): the inverse of
// bytes_from_hex() on its output.
std::string hex_from_bytes(std::string_view bytes);

}  // namespace lmcache
