// File: lmcache/l1/l1_error.h
//
// Per-key outcomes of L1Manager batch calls. Errors are returned, never thrown.
#pragma once

#include <cstdint>
#include <string_view>

namespace lmcache {

enum class L1Error : std::uint8_t {
  kSuccess,
  kKeyNotExist,
  kKeyNotReadable,
  kKeyNotWritable,
  kKeyInWrongState,
  kKeyIsLocked,
  kOutOfMemory,
};

// "SUCCESS", "KEY_NOT_EXIST", ... (the Python enum names).
std::string_view l1_error_name(L1Error error);

// One English sentence describing the error.
std::string_view l1_strerror(L1Error error);

}  // namespace lmcache
