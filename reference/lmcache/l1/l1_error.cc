#include "lmcache/l1/l1_error.h"

namespace lmcache {

std::string_view l1_error_name(L1Error error) {
  switch (error) {
    case L1Error::kSuccess:
      return "SUCCESS";
    case L1Error::kKeyNotExist:
      return "KEY_NOT_EXIST";
    case L1Error::kKeyNotReadable:
      return "KEY_NOT_READABLE";
    case L1Error::kKeyNotWritable:
      return "KEY_NOT_WRITABLE";
    case L1Error::kKeyInWrongState:
      return "KEY_IN_WRONG_STATE";
    case L1Error::kKeyIsLocked:
      return "KEY_IS_LOCKED";
    case L1Error::kOutOfMemory:
      return "OUT_OF_MEMORY";
  }
  // Only reachable through a value cast from outside the enum.
  return "UNKNOWN_L1_ERROR";
}

std::string_view l1_strerror(L1Error error) {
  switch (error) {
    case L1Error::kSuccess:
      return "The operation succeeded.";
    case L1Error::kKeyNotExist:
      return "The key does not exist in L1.";
    case L1Error::kKeyNotReadable:
      return "The key exists but is not readable (it is being written, or not read-locked).";
    case L1Error::kKeyNotWritable:
      return "The key cannot be written (it is locked, temporary, or the mode forbids it).";
    case L1Error::kKeyInWrongState:
      return "The key is not in the lock state this operation requires.";
    case L1Error::kKeyIsLocked:
      return "The key is read- or write-locked and cannot be deleted.";
    case L1Error::kOutOfMemory:
      return "L1 does not have enough free memory for the requested objects.";
  }
  return "Unknown L1 error.";
}

}  // namespace lmcache
