// File: lmcache/core/l2_store_result.h
//
// The outcome of one L2 store task. Deliberately not convertible to an integer or bool (the
// Python original's int subclass made a successful 0-byte store falsy): ask is_successful().
#pragma once

#include <cstdint>
#include <string>

namespace lmcache {

class L2StoreResult {
 public:
  static L2StoreResult success(std::uint64_t bytes_transferred) {
    return L2StoreResult(true, bytes_transferred);
  }
  static L2StoreResult failure() { return L2StoreResult(false, 0); }

  // bytes_transferred is forced to 0 when success is false.
  L2StoreResult(bool success, std::uint64_t bytes_transferred)
      : success_(success), bytes_(success ? bytes_transferred : 0) {}

  bool is_successful() const { return success_; }
  std::uint64_t bytes_transferred() const { return bytes_; }

  std::string to_string() const {
    return success_ ? "success(" + std::to_string(bytes_) + " bytes)" : "failure";
  }

  friend bool operator==(const L2StoreResult&, const L2StoreResult&) = default;

 private:
  bool success_;
  std::uint64_t bytes_;
};

}  // namespace lmcache
